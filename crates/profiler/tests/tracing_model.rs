//! The tracing layer on a model we did not instrument: a tiny, randomly initialised Llama
//! from candle-transformers, whose `with_tracing` wrappers and blocks open spans.
//!
//! The model, its seeded weights and the recording are those of
//! `examples/candle_transformers.rs`, included here so the example is what is tested.

#[allow(dead_code, reason = "the test calls the example's model, not its main")]
#[path = "../examples/candle_transformers.rs"]
mod example;

use candle_core::Device;
use profiler::{Kind, Options, Profiler, ProfilerLayer, SortBy, View, STEP_ROW};
use tracing_subscriber::layer::SubscriberExt;

const LAYERS: u64 = example::LAYERS as u64;
const STEPS: u64 = 3;

#[test]
fn spans_of_a_candle_transformers_model_fill_the_table() {
    let (profile, logits) = example::record(STEPS as usize, example::SEED).unwrap();
    assert_eq!(logits.dims(), [1, example::VOCAB]);
    assert_eq!(profile.active_steps(), STEPS as usize);

    let ops = profile.key_averages(View::Op, false, SortBy::SelfCpuTimeTotal);
    let calls = |rows: &[profiler::Row], name: &str| {
        rows.iter()
            .find(|r| r.name == name)
            .map(|r| r.calls)
            .unwrap_or(0)
    };
    // Per forward: q, k, v, o and three MLP projections per layer, plus the LM head.
    assert_eq!(calls(&ops.rows, "linear"), STEPS * (7 * LAYERS + 1));
    assert_eq!(calls(&ops.rows, "rms-norm"), STEPS * (2 * LAYERS + 1));
    assert_eq!(calls(&ops.rows, "attn-rot"), STEPS * 2 * LAYERS);
    assert_eq!(calls(&ops.rows, STEP_ROW), STEPS);
    assert_eq!(
        ops.self_cpu_total_ns, ops.wall_ns,
        "self times cover the wall time"
    );

    let modules = profile.key_averages(View::Module, false, SortBy::SelfCpuTimeTotal);
    for name in ["block", "attn", "mlp"] {
        assert_eq!(calls(&modules.rows, name), STEPS * LAYERS, "{name}");
    }
    assert_eq!(modules.self_cpu_total_ns, modules.wall_ns);

    // The spans nest as the model's code does: each attention sits in a block.
    let step = &profile.steps[0];
    let attn = step.events.iter().find(|e| e.name == "attn").unwrap();
    assert_eq!(attn.kind, Kind::Module);
    assert_eq!(step.events[attn.parent.unwrap()].name, "block");
    let table = profile.table(profiler::TableOptions::default());
    assert!(
        table.contains("linear") && table.contains("rms-norm"),
        "{table}"
    );
}

#[test]
fn the_seeded_weights_give_the_same_logits_every_build_and_differ_by_seed() {
    let device = Device::Cpu;
    let logits = |seed: u64| -> Vec<f32> {
        let (model, mut cache) = example::tiny_llama(&device, seed).unwrap();
        let tokens = example::prompt(&device).unwrap();
        model
            .forward(&tokens, 0, &mut cache)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap()
    };
    let first = logits(example::SEED);
    assert_eq!(first, logits(example::SEED));
    assert_ne!(first, logits(example::SEED + 1));
    assert!(first.iter().all(|x| x.is_finite()));
    // Random weights, not all one value: the logits are spread out.
    let (lo, hi) = first
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(hi > lo, "{lo} {hi}");
}

#[test]
fn the_example_prints_the_table_and_writes_report_trace_and_flame_graph() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested/out");
    let w = example::run(&out).unwrap();
    assert!(
        w.table.contains("Self CPU time total") && w.table.contains("linear"),
        "{}",
        w.table
    );
    let report = profiler::Report::read_json(&w.report).unwrap();
    assert_eq!(report.active_steps, 3);
    assert!(report.rows.iter().any(|r| r.name == "rms-norm"));
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&w.trace).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["name"] == "attn" && e["cat"] == "module"));
    let svg = std::fs::read_to_string(&w.flamegraph).unwrap();
    assert!(svg.contains("<svg") && svg.contains("linear"));
}

#[test]
fn only_spans_entered_while_recording_become_scopes() {
    let subscriber = tracing_subscriber::registry().with(ProfilerLayer::new());
    let profile = tracing::subscriber::with_default(subscriber, || {
        let outer = tracing::trace_span!("block");
        let inner = tracing::trace_span!("linear");
        let mut prof = Profiler::new(Options::default());
        // Entered before the step: no scope, and exiting it inside the step is harmless.
        let outer_guard = outer.enter();
        prof.step(|| {
            inner.in_scope(|| assert!(profiler::is_recording()));
            drop(outer_guard);
        });
        prof.finish()
    });
    let names: Vec<&str> = profile.steps[0].events.iter().map(|e| e.name).collect();
    assert_eq!(names, ["linear"]);
    assert_eq!(profile.steps[0].events[0].kind, Kind::Op);
}
