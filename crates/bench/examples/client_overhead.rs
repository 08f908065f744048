//! How much latency does the load client itself add? Measure it against a server that answers
//! instantly: every millisecond reported there is the client's (plus loopback TCP).
//!
//!     cargo run --release -p bench --example client_overhead -- [RATE] [REQUESTS]
//!
//! Defaults: 500 requests/s, 2500 requests (5 s), Poisson arrivals, one streamed token per
//! request. Prints the distribution of E2EL (send → last byte, an upper bound on the client's
//! added latency) and of the open-loop dispatch lag (how late each request left compared with
//! its scheduled arrival).

#[path = "../tests/support/mod.rs"]
mod support;

use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::stats::percentile;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let rate: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(500.0);
    let requests: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2500);
    // The server gets its own runtime, as it would be its own process: the client's runtime
    // then schedules nothing but the client.
    let server_runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let (url, _) = server_runtime.block_on(support::start(support::Behaviour { model: "instant", ..Default::default() }));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let config = LoadConfig {
            base_url: url,
            model: "instant".into(),
            traffic: Traffic::OpenLoop { rate, seed: 1 },
            bound: Bound::Requests(requests),
            prompt: Prompt::RandomWords { words: 32, seed: 1 },
            max_tokens: 1,
            ignore_eos: true,
            include_usage: true,
            temperature: 0.0,
            warmup: 20,
            timeout_s: 30.0,
            api_key: None,
            progress: false,
        };
        let out = load::run(&config).await?;
        let ok: Vec<_> = out.records.iter().filter(|r| r.ok).collect();
        let e2el: Vec<f64> = ok.iter().map(|r| r.e2el_ms).collect();
        let lag: Vec<f64> = out.records.iter().filter_map(|r| r.dispatch_lag_ms).collect();
        println!("{} requests at {rate} req/s ({} ok) in {:.2} s, achieved {:.1} req/s",
            out.records.len(), ok.len(), out.duration_s, ok.len() as f64 / out.duration_s);
        for (name, xs) in [("E2EL against an instant server (ms)", &e2el), ("dispatch lag (ms)", &lag)] {
            let p = |q| percentile(xs, q).unwrap_or(f64::NAN);
            println!("{name:<40} P50 {:.3}  P90 {:.3}  P99 {:.3}  max {:.3}", p(50.0), p(90.0), p(99.0), p(100.0));
        }
        anyhow::Ok(())
    })
}
