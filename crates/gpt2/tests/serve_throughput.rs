//! A measurement, not a test (ignored by default; it asserts no timing): how much of the
//! model's batched throughput survives HTTP, SSE and the scheduler?
//!
//!     cargo test --release -p gpt2 --test serve_throughput -- --ignored --nocapture
//!
//! GPT-2 small with synthetic weights on the CPU, batch 16, fixed prompt and output lengths:
//! first `bench::inprocess` drives `gpt2::generate` directly, then the same model is served
//! with `--max-batch-size 16` and saturated by the load client (32 requests always in flight,
//! so a full batch is always waiting). Prints both output tokens/s and their ratio.

use std::time::Duration;

use gpt2::serve::{EngineOptions, Server};
use gpt2::{DeviceChoice, Flow, Request, Sampling};

const BATCH: usize = 16;
const OUTPUT: usize = 32;
const PROMPT: &str = "Benchmarking tells you how the whole system performs under load; profiling tells you \
    why one part of it is slow. Measure first, then look inside.";

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn server_throughput_against_in_process_batch_16() {
    let args = gpt2::cli::ModelArgs { model: "synthetic".into(), device: DeviceChoice::Cpu, dtype: candle_core::DType::F32 };
    let loaded = args.load().unwrap();
    let tokenizer = loaded.tokenizer.unwrap();
    let model = loaded.model;
    let prompt_ids = tokenizer.encode(PROMPT).unwrap();
    let cfg = model.config().clone();

    // In-process: the same prompt length, batch 16, EOS ignored.
    let inprocess = bench::inprocess::InProcessConfig {
        batch_size: BATCH,
        prompt_len: prompt_ids.len(),
        output_len: OUTPUT,
        warmup: 1,
        repeats: 3,
        vocab_size: cfg.vocab_size as u32,
        seed: 0,
    };
    let direct = bench::inprocess::run(&inprocess, "in-process B=16", &Default::default(), |prompts, max_tokens, on_token| {
        let requests: Vec<Request> = prompts
            .iter()
            .map(|p| Request { prompt: p.clone(), max_tokens, sampling: Sampling::greedy(), stop_at_eos: false })
            .collect();
        gpt2::generate(&model, &requests, &mut |event| {
            on_token(event.row);
            Flow::Continue
        })?;
        Ok(())
    })
    .unwrap();
    print!("{}", bench::report::table(&direct));

    // Served: the same model behind HTTP with --max-batch-size 16.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let served = runtime.block_on(async move {
        let generator: gpt2::serve::Generator = Box::new(move |requests, on_token| Ok(gpt2::generate(&model, requests, on_token)?));
        // `gpt2 serve`'s defaults, with --max-batch-size 16.
        let options = EngineOptions { max_batch_size: BATCH, queue_size: 256, batch_wait: Duration::from_millis(5) };
        let server = Server::start(generator, tokenizer, "synthetic".into(), cfg.vocab_size, cfg.n_positions, options).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(server.serve(listener, async move {
            let _ = stopped.await;
        }));
        let config = bench::load::LoadConfig {
            base_url: url,
            model: "synthetic".into(),
            traffic: bench::load::Traffic::ClosedLoop { concurrency: 2 * BATCH },
            bound: bench::load::Bound::Requests(6 * BATCH),
            prompt: bench::load::Prompt::Fixed(PROMPT.into()),
            max_tokens: OUTPUT,
            ignore_eos: true,
            include_usage: true,
            temperature: 0.0,
            warmup: 1,
            timeout_s: 600.0,
            api_key: None,
            progress: false,
        };
        let outcome = bench::load::run(&config).await.unwrap();
        let run = bench::cli::load_run("served B=16".into(), &config, &Default::default(), 0, outcome).unwrap();
        let _ = stop.send(());
        handle.await.unwrap().unwrap();
        run
    });
    print!("{}", bench::report::table(&served));
    let ratio = served.metrics.output_tokens_per_s / direct.metrics.output_tokens_per_s;
    println!(
        "prompt {} tokens, output {OUTPUT} tokens: in-process {:.1} tok/s, served {:.1} tok/s, served/in-process = {ratio:.3}",
        prompt_ids.len(),
        direct.metrics.output_tokens_per_s,
        served.metrics.output_tokens_per_s
    );
    assert_eq!(served.metrics.failed, 0);
}
