//! Exercise 5: Fuse, then judge.
//!
//! The whole story in one run, on your machine: predict what fusing will do; check your ops
//! (src/fused.rs) against candle's unfused ones; profile a forward pass with the stock, unfused
//! ops, with your fusion (stage 1) and with your kernel fix (stage 2), printing what moved in the
//! roofline columns at each stage; then benchmark generation end to end, your final op against
//! the unfused ops, and let the comparison judge whether the system got faster.
//!
//! Solution: both stages of src/fused.rs are written, and `fill_in_answers` fills in
//! answers.toml from its own results.

use answers_file::prediction::{self, Outcome};
mod fused;

use anyhow::{bail, Context, Result};
use bench::compare::{compare_runs, MetricChoice};
use bench::environment::{Environment, Target};
use bench::inprocess::{self, InProcessConfig};
use bench::metrics::Slo;
use bench::report::{Report, Run};
use candle_core::{Device, Tensor};
use clap::Parser;
use engine::profile::{profile_forward, write_exports, ForwardProfile};
use gpt2::cli::ModelArgs;
use gpt2::generate::generate_fixed;
use gpt2::model::BiasActivation;
use gpt2::{MlpActivation, Model};
use profiler::{CudaTiming, SortBy, TableOptions};
use std::path::Path;
use std::process::ExitCode;

use course_model::exercise;
use std::sync::Arc;
use std::time::Instant;

/// The most a fused op may differ from the unfused ops.
const LIMIT: f32 = 1e-5;

#[derive(Parser)]
#[command(
    about = "Exercise 5: predict, fuse, measure, fix the kernel, measure, judge: your fused bias-add + GELU, profiled and benchmarked",
    long_about = "Exercise 5: Fuse, then judge.\n\n\
        1. Checks your two ops (src/fused.rs: stage 1, the fusion; stage 2, the kernel fix) against candle's unfused \
        broadcast_add + gelu and writes the largest differences to results/fused_check.json (each at most 1e-5). \
        Stage 2 may still be unwritten: then the run shows stage 1 only. On a GPU both stages launch the same kernel, so stage 1 alone runs there.\n\
        2. Profiles a GPT-2 forward pass with the stock, unfused ops (results/unfused/), with stage 1 in the MLP \
        (results/stage1/) and with stage 2 (results/stage2/), and prints what moved in the roofline columns.\n\
        3. Benchmarks generation end to end, your final op against the unfused ops, and compares output tokens per \
        second with a 95% interval over the timed repeats (results/bench.json, results/latency.svg).\n\n\
        Then fill in answers.toml and run `course check 5`.\n\n\
        The ops run on the CPU, and on a GPU when the exercise is built with `--features cuda` (their kernel is \
        src/fused_bias_gelu.cu): `cargo run -p exercise-5 --features cuda -- --device cuda`."
)]
struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// Tokens per sequence in the profiled forward pass.
    #[arg(long, default_value_t = 8)]
    seq: usize,
    /// Forwards recorded in each profile.
    #[arg(long, default_value_t = 5)]
    active: usize,
    /// Batch size of the end-to-end benchmark.
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Prompt length of the benchmark, in tokens.
    #[arg(long, default_value_t = 16)]
    prompt_len: usize,
    /// Tokens generated per sequence in the benchmark.
    #[arg(long, default_value_t = 8)]
    output_len: usize,
    /// Untimed benchmark batches first, each way.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Timed benchmark batches each way: independent repeats, the interval is taken over them.
    #[arg(long, default_value_t = 8)]
    repeats: usize,
    /// The smallest relative change worth acting on (0.05: 5%).
    #[arg(long, visible_alias = "threshold", default_value_t = 0.05)]
    min_effect: f64,
    /// Seed of the prompts.
    #[arg(long, default_value_t = 5)]
    seed: u64,
}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), run)
}

/// A stage of the story: its op, where its profile goes, and how the page names it.
struct Stage {
    label: &'static str,
    op: Arc<dyn BiasActivation>,
    dir: &'static str,
}

fn run(args: Args, dir: &Path) -> Result<()> {
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
    let stages = check_correctness(&device, &results.join("fused_check.json"))?;
    let max_abs_error = stages.iter().map(|(_, e)| *e).fold(0.0, f32::max);
    let stages: Vec<Stage> = stages.into_iter().map(|(stage, _)| stage).collect();

    predict_first(dir, &results.join("unfused/report.json"));

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
        &args,
        &results.join("unfused"),
    )?;
    let mut profiles = Vec::new();
    for stage in &stages {
        let report = profile(
            &mut model,
            &MlpActivation::Custom(stage.op.clone()),
            &args,
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
    let run_a = benchmark(&mut model, MlpActivation::Stock, "unfused", &args)?;
    let run_b = benchmark(
        &mut model,
        MlpActivation::Custom(last.op.clone()),
        last.op.name(),
        &args,
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
        device: Some(device_name(model.device()).into()),
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

    fill_in_answers(dir, &results, &stages, max_abs_error, verdict)
}

/// The answers: the fused ops' error, the benchmark's verdict, and what each stage did to its
/// row's roofline and by which mechanism.
fn fill_in_answers(
    dir: &Path,
    results: &Path,
    stages: &[Stage],
    max_abs_error: f32,
    verdict: &str,
) -> Result<()> {
    use answers_file::fill_answers as answers;

    /// `[stage1]` and `[stage2]`: the rows' % of roofline as the reports hold them, the unfused
    /// row's reading, and the mechanism each stage addressed: for the fusion, the passes over
    /// memory it removes; for the kernel fix, the one the course's own rule
    /// (`course_model::plan_rule`, the one `course check 5` grades by) accepts for the unfused
    /// activation on this device.
    fn roofline_answers(
        results: &Path,
        stages: &[Stage],
    ) -> Result<Vec<(String, answers::Answer)>> {
        use course_model::plan_rule::{self, Mechanism, Verdict};
        use course_model::results::profile_report::{ProfileReport, RankedOp};
        let read = |rel: &str| -> Result<ProfileReport> {
            let path = results.join(rel).join("report.json");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            ProfileReport::parse(&text, &path.display().to_string())
                .map_err(|p| anyhow::anyhow!("{p}"))
        };
        let unfused = read("unfused")?;
        let row = |report: &ProfileReport, name: &str| -> Result<RankedOp> {
            report
                .find(name)
                .map(|(_, r)| r.clone())
                .with_context(|| format!("no `{name}` row in {}", report.file))
        };
        let gelu = row(&unfused, "gelu")?;
        let pct = |r: &RankedOp| -> Result<f64> {
            r.roofline
                .as_ref()
                .map(|f| f.pct_of_roofline)
                .with_context(|| {
                    format!(
                        "`{}` has no roofline columns: the profile needs ceilings and declared work",
                        r.name
                    )
                })
        };
        let mut out: Vec<(String, answers::Answer)> =
            vec![("stage1.pct_of_roofline_before".into(), pct(&gelu)?.into())];
        if let Some(reading) = gelu.reading.as_ref() {
            out.push(("stage1.reading".into(), reading.as_str().into()));
        }
        for (i, stage) in stages.iter().enumerate() {
            let after = row(&read(stage.dir)?, stage.op.name())?;
            out.push((
                format!("stage{}.pct_of_roofline_after", i + 1),
                pct(&after)?.into(),
            ));
        }
        // Fusion removes a pass over memory, and with it one op's launch.
        out.push((
            "stage1.mechanism".into(),
            Mechanism::MemoryTraffic.name().into(),
        ));
        if stages.len() > 1 {
            // The thresholds `course check` grades by: the grader pins its default key to them.
            let key = profiler::reading::Thresholds::DEFAULT;
            let mut judged: Vec<_> = [
                Mechanism::SlowKernel,
                Mechanism::MemoryTraffic,
                Mechanism::LaunchOverhead,
            ]
            .into_iter()
            .map(|m| plan_rule::assess(&unfused, &gelu, m, &key))
            .filter(|a| a.judgement.accepted())
            .collect();
            judged.sort_by_key(|a| a.judgement.verdict != Verdict::Right);
            let mechanism = judged
                .first()
                .context("the course's rule accepts no mechanism for `gelu` here")?;
            println!(
                "(solution) the kernel fix addressed {}: {}",
                mechanism.mechanism.name(),
                mechanism.judgement.reason
            );
            out.push(("stage2.mechanism".into(), mechanism.mechanism.name().into()));
        }
        Ok(out)
    }

    // The answers, as a learner reads them from the files just written.
    let mut filled: Vec<(String, answers::Answer)> = vec![
        (
            "fused_check.max_abs_error".into(),
            f64::from(max_abs_error).into(),
        ),
        ("benchmark.verdict".into(), verdict.into()),
    ];
    filled.extend(roofline_answers(results, stages)?);
    answers::fill(&dir.join("answers.toml"), &filled)?;
    println!("Next: `course check 5`.");
    Ok(())
}

/// Your prediction, written down before the first profile runs (asked once, in a terminal). A
/// file it cannot record in is said, and the exercise runs anyway.
fn predict_first(dir: &Path, first_report: &Path) {
    // The reference's: asked in a terminal as the exercise asks; without one, the reference
    // guess (on a CPU the unfused row is a slow kernel, which removing a pass over memory leaves
    // as it is).
    use answers_file::fill_answers as answers;
    let path = dir.join("answers.toml");
    let form = &prediction::FUSION;
    let made = match form.before_the_profile(&path, first_report) {
        Ok(Outcome::NoTerminal | Outcome::Declined) if form.recorded(&path).is_none() => {
            let guess = [
                ("row_time", prediction::Value::Text("about the same".into())),
                (
                    "pct_of_roofline",
                    prediction::Value::Text("about the same".into()),
                ),
            ];
            answers::fill(
                &path,
                &form.record(&guess, std::time::SystemTime::now(), first_report.exists()),
            )
        }
        Ok(_) => Ok(()),
        Err(e) => Err(e),
    };
    if let Err(e) = made {
        eprintln!("warning: {e:#}; profiling without a prediction.");
    }
}

/// The device as results files name it.
fn device_name(device: &Device) -> &'static str {
    if device.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

/// Compares each written stage with the unfused ops on random f32 inputs of GPT-2 small's MLP
/// shapes on `device`, and writes the largest differences; refuses to go on when stage 1 is
/// unwritten or a stage is over the limit. Returns the stages that ran, with their errors.
fn check_correctness(device: &Device, path: &Path) -> Result<Vec<(Stage, f32)>> {
    let (source, test) = if device.is_cuda() {
        (
            "src/fused_bias_gelu.cu",
            "cargo test -p exercise-5 --features cuda",
        )
    } else {
        ("src/fused.rs", "cargo test -p exercise-5")
    };
    let candidates = [
        Stage {
            label: "stage 1, the fusion",
            op: Arc::new(fused::FusedBiasGelu),
            dir: "stage1",
        },
        Stage {
            label: "stage 2, the kernel fix",
            op: Arc::new(fused::FastFusedBiasGelu),
            dir: "stage2",
        },
    ];
    let mut checked = Vec::new();
    let mut json = Vec::new();
    for stage in candidates {
        // Stage 2 rewrites the CPU loop only: on a GPU both stages launch the same kernel, so
        // there is nothing more to check or profile, and stage 2 is not required there.
        if device.is_cuda() && !checked.is_empty() {
            println!(
                "{} ({}): not run on a GPU, where it launches the same kernel as stage 1 (stage 2 is not required there)",
                stage.label,
                stage.op.name()
            );
            continue;
        }
        let mut worst = 0f32;
        let mut unwritten = false;
        for tokens in [1, 8, 64] {
            // Drawn on the CPU, so both devices check the same numbers.
            let x = Tensor::randn(0f32, 3.0, (tokens, 3072), &Device::Cpu)?.to_device(device)?;
            let bias = Tensor::randn(0f32, 1.0, 3072, &Device::Cpu)?.to_device(device)?;
            let err = match fused::max_abs_error(stage.op.as_ref(), &x, &bias) {
                Ok(err) => err,
                Err(e) if e.to_string().contains(fused::NOT_WRITTEN) && !checked.is_empty() => {
                    unwritten = true;
                    break;
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "{}: the op failed on a {tokens}x3072 input; fix {source} (`{test}`)",
                            stage.label
                        )
                    })
                }
            };
            if err.is_nan() {
                bail!("{}: your op produced NaN on a {tokens}x3072 input where the unfused ops did not: fix {source} (`{test}`)", stage.label);
            }
            worst = worst.max(err);
        }
        if unwritten {
            println!("{} ({}): not written yet", stage.label, stage.op.name());
            continue;
        }
        println!(
            "{} ({}): largest difference from broadcast_add + gelu {worst:e} (limit {LIMIT:e})",
            stage.label,
            stage.op.name()
        );
        if worst > LIMIT {
            bail!("{} differs from the unfused ops by {worst:e}, over the limit of {LIMIT:e}: fix {source} before measuring it (`{test}`)", stage.label);
        }
        json.push(serde_json::json!({ "op": stage.op.name(), "max_abs_error": worst }));
        checked.push((stage, worst));
    }
    let worst = checked.iter().map(|(_, e)| *e).fold(0.0, f32::max);
    let file = serde_json::json!({
        "schema": "fused-check/2",
        "max_abs_error": worst,
        "limit": LIMIT,
        "shape": [64, 3072],
        "device": device_name(device),
        "stages": json,
    });
    std::fs::write(path, serde_json::to_string_pretty(&file)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(checked)
}

/// Profiles a forward pass with `activation` in the MLP, prints the top rows and writes the
/// exports into `dir`.
fn profile(
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
fn print_moved(
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

/// Times generation with `activation` in the MLP.
fn benchmark(
    model: &mut Model,
    activation: MlpActivation,
    label: &str,
    args: &Args,
) -> Result<Run> {
    model.set_mlp_activation(activation);
    let model = &*model;
    let config = InProcessConfig {
        batch_size: args.batch,
        prompt_len: args.prompt_len,
        output_len: args.output_len,
        warmup: args.warmup,
        repeats: args.repeats,
        vocab_size: model.config().vocab_size as u32,
        seed: args.seed,
    };
    let started = Instant::now();
    generate_fixed(model, &config.prompts(), args.output_len, &mut |_| {})?;
    let one = started.elapsed().as_secs_f64();
    println!(
        "{label}: one batch takes {one:.2} s; {} warm-up + {} timed batches take about {:.0} s",
        args.warmup,
        args.repeats,
        one * (args.warmup + args.repeats) as f64
    );
    inprocess::run(
        &config,
        label,
        &Slo::default(),
        |prompts, max_tokens, on_token| Ok(generate_fixed(model, prompts, max_tokens, on_token)?),
    )
}
