//! One run of exercise 5, start to end: check, predict, profile, benchmark, answer.

use crate::benchmark::benchmark;
use crate::profile::{print_moved, profile};
use crate::{correctness, Args, Learner, Measured, Stage};
use answers_file::prediction;
use anyhow::{Context, Result};
use bench::compare::{compare_runs, MetricChoice};
use bench::environment::{Environment, Target};
use bench::report::Report;
use gpt2::MlpActivation;

use std::path::Path;

/// Check, predict, profile each stage, benchmark, then the learner's `fill_in_answers`.
pub(crate) fn run(learner: &Learner, args: &Args, dir: &Path) -> Result<()> {
    let results = dir.join("results");
    std::fs::create_dir_all(&results)
        .with_context(|| format!("cannot create {}", results.display()))?;

    // The ops are compiled in this package: the root Cargo.toml's dev profile optimises them as
    // it does candle's ops (no `--release` needed), so the comparison is fair in the learner's
    // build. They are checked first, on the device the model will run on, so a wrong op stops
    // the run before GPT-2 is even downloaded.
    let device = args
        .model
        .run
        .open_device()
        .context("cannot open the device")?;
    let on_cuda = device.is_cuda();
    println!(
        "1. Are the fused ops correct? (on the {})",
        if on_cuda {
            "GPU: src/fused_bias_gelu.cu"
        } else {
            "CPU"
        }
    );
    let stages = correctness::check(learner, &device, &results.join("fused_check.json"))?;
    let max_abs_error = stages.iter().map(|(_, e)| *e).fold(0.0, f32::max);
    let stages: Vec<Stage> = stages.into_iter().map(|(stage, _)| stage).collect();

    (learner.predict_first)(dir, &results.join("unfused/report.json"));

    let loaded = args.model.load().context("cannot load GPT-2")?;
    let mut model = loaded.model;
    if loaded.checkpoint.synthetic {
        println!("(synthetic weights: every timing is real, the model's outputs are not)");
    }

    println!(
        "\n2. Profile before and after each stage (forward pass B=1 T={}, {} recorded):",
        args.seq, args.active
    );
    let unfused = profile(
        &mut model,
        &MlpActivation::Stock,
        args,
        &results.join("unfused"),
    )?;
    let mut profiles = Vec::new();
    for stage in &stages {
        let report = profile(
            &mut model,
            &MlpActivation::Custom(stage.op.clone()),
            args,
            &results.join(stage.dir),
        )?;
        println!(
            "\n{}: what moved, `gelu` (unfused) → `{}`",
            stage.label,
            stage.op.name()
        );
        print_moved(&unfused, &report, "gelu", stage.op.name(), on_cuda);
        if stage.dir == "stage1" {
            if let Some(p) = prediction::FUSION.recorded(&dir.join("answers.toml")) {
                println!("  you predicted       {}", p.describe());
            }
        }
        profiles.push(report);
    }
    if stages.len() == 1 && !on_cuda {
        println!(
            "\nStage 2 is not written yet. Read the unfused `gelu` row's roofline columns above: what held it back, \
             and did fusing (stage 1) address that? Then write FastFusedBiasGelu in src/fused.rs and run this again."
        );
    }

    let last = stages.last().context("no stage ran")?;
    println!(
        "\n3. Benchmark end to end: generation at batch {}, unfused against {} ({}).",
        args.batch,
        last.label,
        last.op.name()
    );
    let run_a = benchmark(&mut model, MlpActivation::Stock, "unfused", args)?;
    let run_b = benchmark(
        &mut model,
        MlpActivation::Custom(last.op.clone()),
        last.op.name(),
        args,
    )?;
    for run in [&run_a, &run_b] {
        print!("\n{}", bench::report::table(run));
    }
    let metric = MetricChoice::parse("output_tokens_per_s")?;
    let comparison = compare_runs(&run_a, &run_b, metric, args.min_effect)?;
    println!(
        "\n{}",
        bench::report::comparison_text(&comparison, &run_a.label, &run_b.label)
    );
    let target = Target {
        device: Some(correctness::device_name(model.device()).into()),
        cargo_features: if cfg!(feature = "cuda") {
            vec!["cuda".into()]
        } else {
            vec![]
        },
        dtype: Some(format!("{:?}", model.dtype()).to_lowercase()),
    };
    let mut report = Report::new(Environment::capture(target), vec![run_a, run_b]);
    let verdict = comparison.verdict.as_str();
    report.comparison = Some(comparison);
    report.write(&results.join("bench.json"))?;
    bench::plot::write_latency_cdf(
        &results.join("latency.svg"),
        &[&report.runs[0], &report.runs[1]],
    )?;
    let dirs: Vec<&str> = stages.iter().map(|s| s.dir).collect();
    println!(
        "wrote {}/: fused_check.json, unfused/, {}/ (report.json each), bench.json",
        results.display(),
        dirs.join("/, ")
    );

    (learner.fill_in_answers)(&Measured {
        dir,
        results: &results,
        stages: &stages,
        max_abs_error,
        verdict,
    })
}
