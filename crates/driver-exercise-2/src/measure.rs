//! The open-loop runs at each rate, and the load every run shares.

use crate::args::Args;
use crate::SCENARIOS;
use anyhow::{bail, Context, Result};
use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::metrics::Slo;
use bench::report::Run;
use bench::server::LocalServer;

/// The same load for every run; only the traffic (and the request count) changes.
pub(crate) fn load_config(
    args: &Args,
    server: &LocalServer,
    traffic: Traffic,
    requests: usize,
) -> LoadConfig {
    LoadConfig {
        base_url: server.base_url.clone(),
        // serve answers to the --model value unless told another name.
        model: args.model.clone(),
        traffic,
        bound: Bound::Requests(requests),
        prompt: Prompt::RandomWords {
            words: args.prompt_words,
            seed: args.seed,
        },
        max_tokens: args.max_tokens,
        ignore_eos: true,
        include_usage: true,
        temperature: 0.0,
        warmup: 2,
        timeout_s: args.timeout,
        api_key: None,
        progress: !args.no_progress,
    }
}

/// Open-loop runs at each rate against one server, `--replicates` of `--requests` each.
pub(crate) fn measure(
    args: &Args,
    server: &LocalServer,
    batch: u16,
    rates: &[f64],
    runtime: &tokio::runtime::Runtime,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (scenario, &rate) in SCENARIOS.iter().zip(rates) {
        let label = format!("batch-{batch} {scenario}");
        println!(
            "{label}: {} × {} requests at {rate} req/s, open loop: about {:.0} s of arrivals",
            args.replicates,
            args.requests,
            f64::from(args.replicates) * args.requests as f64 / rate
        );
        let config = load_config(
            args,
            server,
            Traffic::OpenLoop {
                rate,
                seed: args.seed,
            },
            args.requests,
        );
        let outcome = runtime
            .block_on(load::run_replicates(&config, usize::from(args.replicates)))
            .with_context(|| format!("{label}: the load run failed"))?;
        let mut run = Run::from_load(label.clone(), &config, &Slo::default(), outcome)?;
        // The one variable this comparison changes, recorded beside the traffic that stayed fixed.
        run.config["server"] = serde_json::json!({ "program": "serve", "model": args.model, "device": args.device, "max_batch_size": batch });
        print!("{}", bench::report::table(&run));
        if run.metrics.completed == 0 {
            bail!("every request of {label} failed; the table above shows why");
        }
        runs.push(run);
    }
    Ok(runs)
}
