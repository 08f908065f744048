//! The open-loop runs at each rate, and the load every run shares.

use crate::args::Args;
use crate::SCENARIOS;
use anyhow::Result;
use bench::load::FixedLoad;
use bench::metrics::Slo;
use bench::report::Run;
use bench::server::LocalServer;

/// The same load for every run; only the traffic (and the request count) changes.
pub(crate) fn fixed_load(args: &Args, server: &LocalServer) -> FixedLoad {
    FixedLoad {
        base_url: server.base_url.clone(),
        // serve answers to the --model value unless told another name.
        model: args.model.clone(),
        prompt_words: args.prompt_words,
        seed: args.seed,
        max_tokens: args.max_tokens,
        timeout_s: args.timeout,
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
        let config = fixed_load(args, server).open_loop(rate, args.requests);
        let run = Run::measure(
            runtime,
            label,
            &config,
            usize::from(args.replicates),
            &Slo::default(),
            // The one variable this comparison changes, recorded beside the traffic that stayed fixed.
            |run| run.config["server"] = serde_json::json!({ "program": "serve", "model": args.model, "device": args.device, "max_batch_size": batch }),
        )?;
        runs.push(run);
    }
    Ok(runs)
}
