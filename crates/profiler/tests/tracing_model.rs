//! The tracing layer on a model we did not instrument: a tiny, randomly initialised Llama
//! from candle-transformers, whose `with_tracing` wrappers and blocks open spans.

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::llama::{Cache, Llama, LlamaConfig};
use profiler::{Kind, Options, Profiler, ProfilerLayer, Schedule, SortBy, View, STEP_ROW};
use tracing_subscriber::layer::SubscriberExt;

const LAYERS: u64 = 2;
const STEPS: u64 = 3;

fn tiny_llama(device: &Device) -> (Llama, Cache) {
    let config: LlamaConfig = serde_json::from_value(serde_json::json!({
        "hidden_size": 64,
        "intermediate_size": 128,
        "vocab_size": 256,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "max_position_embeddings": 64,
    }))
    .expect("a valid tiny Llama config");
    let config = config.into_config(false);
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
    let model = Llama::load(vb, &config).expect("random weights load");
    let cache = Cache::new(false, DType::F32, &config, device).expect("cache");
    (model, cache)
}

#[test]
fn spans_of_a_candle_transformers_model_fill_the_table() {
    let subscriber = tracing_subscriber::registry().with(ProfilerLayer::new());
    // Spans are made when the model is built: the subscriber must be in place before.
    let profile = tracing::subscriber::with_default(subscriber, || {
        let device = Device::Cpu;
        let (model, mut cache) = tiny_llama(&device);
        let tokens = Tensor::new(&[[1u32, 5, 9, 2, 7, 3, 4, 8]], &device).unwrap();
        let options =
            Options { schedule: Schedule::new(0, 1, STEPS as usize, 1), ..Options::default() };
        let mut prof = Profiler::new(options);
        while !prof.is_done() {
            let logits = prof.step(|| model.forward(&tokens, 0, &mut cache)).unwrap();
            assert_eq!(logits.dims(), [1, 256]);
        }
        prof.finish()
    });
    assert_eq!(profile.active_steps(), STEPS as usize);

    let ops = profile.key_averages(View::Op, false, SortBy::SelfCpuTimeTotal);
    let calls = |rows: &[profiler::Row], name: &str| {
        rows.iter().find(|r| r.name == name).map(|r| r.calls).unwrap_or(0)
    };
    // Per forward: q, k, v, o and three MLP projections per layer, plus the LM head.
    assert_eq!(calls(&ops.rows, "linear"), STEPS * (7 * LAYERS + 1));
    assert_eq!(calls(&ops.rows, "rms-norm"), STEPS * (2 * LAYERS + 1));
    assert_eq!(calls(&ops.rows, "attn-rot"), STEPS * 2 * LAYERS);
    assert_eq!(calls(&ops.rows, STEP_ROW), STEPS);
    assert_eq!(ops.self_cpu_total_ns, ops.wall_ns, "self times cover the wall time");

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
    assert!(table.contains("linear") && table.contains("rms-norm"), "{table}");
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
