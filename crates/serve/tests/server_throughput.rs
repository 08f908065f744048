//! A measurement, not a test (ignored by default; it asserts no timing): how much of the
//! model's batched throughput survives HTTP, SSE and the scheduler?
//!
//!     cargo test -p serve --test server_throughput -- --ignored --nocapture
//!
//! GPT-2 small with synthetic weights on the CPU, batch 16, fixed prompt and output lengths.
//! Each round decodes one batch of 16 in-process (`bench::inprocess` over `gpt2::generate`)
//! and then one batch of 16 through the server (`--max-batch-size 16`, 16 streamed requests
//! sent together by the load client). Alternating the two, rather than running all of one
//! and then all of the other, keeps a drift in the machine's load from posing as a
//! difference between them. Prints each round and the A/B verdict on output tokens/s.

use std::time::Duration;

use gpt2::{DeviceChoice, Flow, Request, Sampling};
use serving::{EngineOptions, Server};

const BATCH: usize = 16;
const OUTPUT: usize = 32;
const ROUNDS: usize = 5;
const PROMPT: &str = "Measure the whole system first; then look inside.";

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn server_throughput_against_in_process_batch_16() {
    let args = gpt2::cli::ModelArgs {
        model: "synthetic".into(),
        run: gpt2::cli::RunArgs {
            device: DeviceChoice::Cpu,
            ..Default::default()
        },
    };
    let loaded = args.load().unwrap();
    let tokenizer = loaded.tokenizer.unwrap();
    let model = loaded.model;
    let prompt_ids = tokenizer.encode(PROMPT).unwrap();
    let cfg = model.config().clone();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    // The server loads its own copy, on its model thread.
    let served_args = args.clone();
    // A full batch never waits; the long wait only guarantees that each round's 16 requests,
    // sent together, join in one prefill even on a busy machine.
    let options = EngineOptions {
        batch_wait: Duration::from_millis(200),
        ..EngineOptions::new(BATCH, 256)
    };
    let server = Server::start(
        Box::new(move || gpt2::serve::served_model(&served_args, "test")),
        "synthetic".into(),
        options,
        None,
    )
    .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = runtime.spawn(server.serve(listener, async move {
        let _ = stopped.await;
    }));

    let (mut direct, mut served) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let inprocess = bench::inprocess::InProcessConfig {
            batch_size: BATCH,
            prompt_len: prompt_ids.len(),
            output_len: OUTPUT,
            warmup: usize::from(round == 0),
            repeats: 1,
            vocab_size: cfg.vocab_size as u32,
            seed: round as u64,
        };
        let run = bench::inprocess::run(
            &inprocess,
            "in-process",
            &Default::default(),
            |prompts, max_tokens, on_token| {
                let requests: Vec<Request> = prompts
                    .iter()
                    .map(|p| Request {
                        prompt: p.clone(),
                        max_tokens,
                        sampling: Sampling::greedy(),
                        stop_at_eos: false,
                    })
                    .collect();
                gpt2::generate(&model, &requests, &mut |event| {
                    on_token(event.row);
                    Flow::Continue
                })?;
                Ok(())
            },
        )
        .unwrap();
        direct.push(run.metrics.output_tokens_per_s);

        let config = bench::load::LoadConfig {
            base_url: url.clone(),
            model: "synthetic".into(),
            traffic: bench::load::Traffic::ClosedLoop { concurrency: BATCH },
            bound: bench::load::Bound::Requests(BATCH),
            prompt: bench::load::Prompt::Fixed(PROMPT.into()),
            max_tokens: OUTPUT,
            ignore_eos: true,
            include_usage: true,
            temperature: 0.0,
            warmup: usize::from(round == 0),
            timeout_s: 600.0,
            api_key: None,
            progress: false,
        };
        let outcome = runtime.block_on(bench::load::run(&config)).unwrap();
        let metrics =
            bench::metrics::compute(&outcome.records, &outcome.durations_s, &Default::default());
        assert_eq!(metrics.failed, 0);
        served.push(metrics.output_tokens_per_s);
        println!(
            "round {}: in-process {:.1} tok/s, served {:.1} tok/s, served/in-process {:.3}",
            round + 1,
            direct[round],
            served[round],
            served[round] / direct[round]
        );
    }
    let _ = stop.send(());
    runtime.block_on(handle).unwrap().unwrap();

    // Each round is an independent replicate of both sides.
    let rounds = |xs: &[f64]| -> Vec<Vec<f64>> { xs.iter().map(|&x| vec![x]).collect() };
    let (a, b) = (
        bench::intervals::mean(&rounds(&direct)).unwrap(),
        bench::intervals::mean(&rounds(&served)).unwrap(),
    );
    let comparison = bench::stats::compare(
        "output_tokens_per_s",
        &a,
        &b,
        bench::stats::Better::Higher,
        0.10,
    )
    .unwrap();
    println!(
        "prompt {} tokens, output {OUTPUT} tokens, batch {BATCH}, {ROUNDS} rounds",
        prompt_ids.len()
    );
    print!(
        "{}",
        bench::report::comparison_text(&comparison, "in-process", "served")
    );
}
