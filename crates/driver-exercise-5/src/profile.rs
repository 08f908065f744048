//! The profiles of the story: a forward pass with the stock ops and with each stage in the MLP,
//! and what moved in the roofline columns between the unfused activation's row and a stage's.

use crate::Args;
use anyhow::Result;
use engine::profile::{profile_forward, write_exports, ForwardProfile};
use gpt2::{MlpActivation, Model};
use profiler::{CudaTiming, SortBy, TableOptions};
use std::path::Path;

/// Profiles a forward pass with `activation` in the MLP, prints the top rows and writes the
/// exports into `dir`.
pub fn profile(
    model: &mut Model,
    activation: &MlpActivation,
    args: &Args,
    dir: &Path,
) -> Result<profiler::Report> {
    model.set_mlp_activation(activation.clone());
    let spec = ForwardProfile {
        batch: 1,
        seq: args.seq,
        warmup: 2,
        active: args.active,
        record_shapes: true,
        with_flops: false,
        cuda_timing: CudaTiming::Events,
    };
    let profile = profile_forward(model, &spec)?;
    // A GPU's question is where its time goes: sort by self CUDA time there.
    let sort_by = SortBy::self_time(model.device().is_cuda());
    let options = TableOptions::top(sort_by, 8);
    println!("\n{}:", dir.display());
    print!("{}", profile.table(options));
    let files = write_exports(&profile, options, dir)?;
    profiler::Report::read_json(&files.report).map_err(|e| anyhow::anyhow!("{e}"))
}

/// What moved in the roofline columns from the unfused activation's row to a stage's row: the
/// share, the rates, the % of the roofline, the reading and the kernel.
pub fn print_moved(
    before: &profiler::Report,
    after: &profiler::Report,
    from: &str,
    to: &str,
    on_cuda: bool,
) {
    let share = |row: &profiler::ReportRow| {
        if on_cuda {
            row.self_cuda_pct.unwrap_or(0.0)
        } else {
            row.self_cpu_pct
        }
    };
    let (Some(a), Some(b)) = (
        before.rows.iter().find(|r| r.name == from),
        after.rows.iter().find(|r| r.name == to),
    ) else {
        println!("  (no `{from}` row before or no `{to}` row after: nothing to compare)");
        return;
    };
    println!(
        "  share of the step   {:>9.2}% → {:.2}%",
        share(a),
        share(b)
    );
    match (&a.roofline, &b.roofline) {
        (Some(ra), Some(rb)) => {
            println!(
                "  GB/s                {:>10.3} → {:.3}",
                ra.gbytes_per_s, rb.gbytes_per_s
            );
            println!(
                "  % of roofline       {:>9.1}% → {:.1}%",
                ra.pct_of_roofline, rb.pct_of_roofline
            );
            println!(
                "  % of memory roofline{:>9.1}% → {:.1}%",
                ra.pct_of_memory_roofline, rb.pct_of_memory_roofline
            );
        }
        _ => println!(
            "  (no roofline columns: a row declared no work, or the run measured no ceilings)"
        ),
    }
    let reading = |r: &profiler::ReportRow| {
        r.reading
            .map_or_else(|| "no reading".to_string(), |x| x.to_string())
    };
    println!("  reading             {:>10} → {}", reading(a), reading(b));
    let kernel = |r: &profiler::ReportRow| r.kernel.clone().unwrap_or_else(|| "unlabelled".into());
    println!("  kernel              {:>10} → {}", kernel(a), kernel(b));
}
