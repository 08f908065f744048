//! One run of exercise 3: the prediction, the load, the profile, the files, the answers.

use std::path::Path;

use anyhow::{Context, Result};
use engine::profile::{
    machine_ceilings, profile_forward, profile_forward_with_memory, write_exports, ForwardProfile,
};
use gpt2::MlpActivation;
use profiler::{CudaTiming, SortBy, TableOptions};

use crate::args::Args;
use crate::Learner;

/// The whole run in `dir` (the exercise's folder), calling the `learner`'s functions before the
/// profile and after its files are written.
pub fn run(args: Args, dir: &Path, learner: Learner) -> Result<()> {
    let results = dir.join("results");
    (learner.predict)(dir)?;

    if args.profile_memory {
        // Counting starts before the load, so that the weights are counted (in their own category).
        profiler::alloc::enable();
    }
    // ANCHOR: load
    // GPT-2 small from the hub (or its cache); offline, the synthetic checkpoint, with a notice.
    let loaded = {
        let _weights = args
            .profile_memory
            .then(|| profiler::alloc::category(profiler::Category::Weights));
        args.model.load().context("cannot load GPT-2")?
    };
    let mut model = loaded.model;
    // Candle's own ops for the MLP's bias add and GELU, one after the other: the unfused
    // starting point that exercises 4 and 5 work on.
    model.set_mlp_activation(MlpActivation::Stock);
    if loaded.checkpoint.synthetic {
        println!("(synthetic weights: every timing is real, the model's outputs are not)");
    }
    // ANCHOR_END: load

    // ANCHOR: profile
    // Like PyTorch's `schedule(wait=0, warmup=2, active=5)`: warm-up forwards are run and
    // thrown away, then the active ones are recorded, op by op. The profile also carries this
    // machine's ceilings (measured once, then read from the course's cache), so each op that
    // declares its work gets a roofline: its GFLOP/s and GB/s, the % of what it could reach
    // at its arithmetic intensity, and whether memory or compute bounds it.
    let spec = ForwardProfile {
        batch: args.schedule.batch,
        seq: args.schedule.seq,
        warmup: args.schedule.warmup,
        active: args.schedule.active,
        record_shapes: true,
        with_flops: false,
        cuda_timing: CudaTiming::Events,
    };
    // With --profile-memory every row also gets what it allocated (PyTorch's `profile_memory`).
    let profile = match args.profile_memory {
        true => profile_forward_with_memory(&model, &spec, machine_ceilings(&model, false))?,
        false => profile_forward(&model, &spec)?,
    };

    // On a GPU the kernels run asynchronously: rank by the time they took on the device.
    let on_cuda = model.device().is_cuda();
    let options = TableOptions::top(SortBy::self_time(on_cuda), args.row_limit);
    println!("{spec}");
    print!("{}", profile.table(options));
    let files = write_exports(&profile, options, &results)?;
    // ANCHOR_END: profile

    println!("\n{}", files.listing("graded by `course check 3`"));
    (learner.fill_in_answers)(&files.report, dir, on_cuda)
}
