//! The in-process driver with stand-in generation functions (no model needed).

use bench::inprocess::{self, InProcessConfig, OnToken};
use bench::metrics::Slo;

fn config() -> InProcessConfig {
    InProcessConfig {
        batch_size: 4,
        prompt_len: 6,
        output_len: 5,
        warmup: 1,
        repeats: 3,
        vocab_size: 50,
        seed: 11,
    }
}

/// Decodes the batch in lock-step, one token per row per step, like batched KV-cache decoding.
fn lockstep(
    prompts: &[Vec<u32>],
    max_tokens: usize,
    on_token: &mut OnToken<'_>,
) -> anyhow::Result<()> {
    for _ in 0..max_tokens {
        std::thread::sleep(std::time::Duration::from_micros(200));
        for row in 0..prompts.len() {
            on_token(row);
        }
    }
    Ok(())
}

#[test]
fn every_row_of_every_repeat_becomes_a_request_record() {
    let mut calls = 0;
    let run = inprocess::run(
        &config(),
        "B=4",
        &Slo::default(),
        |p: &[Vec<u32>], n: usize, cb: &mut OnToken<'_>| {
            calls += 1;
            assert_eq!(p.len(), 4);
            assert!(p
                .iter()
                .all(|row| row.len() == 6 && row.iter().all(|&t| t < 50)));
            lockstep(p, n, cb)
        },
    )
    .unwrap();
    assert_eq!(calls, 4, "1 warm-up + 3 timed batches");
    assert_eq!(run.requests.len(), 12);
    assert_eq!(run.repeat_tokens_per_s.len(), 3);
    assert_eq!(run.metrics.total_output_tokens, 60);
    for r in &run.requests {
        assert_eq!(r.output_tokens, 5);
        assert_eq!(r.itl_ms.len(), 4);
        assert!(r.ttft_ms > 0.0 && r.ttft_ms <= r.e2el_ms);
    }
    let m = &run.metrics;
    let ci = m.ci95_output_tokens_per_s.as_ref().unwrap();
    assert!(ci.low <= ci.high && m.output_tokens_per_s > 0.0);
    assert_eq!(
        (m.replicates, ci.runs),
        (3, 3),
        "every timed repeat is a replicate"
    );
    assert!(run.requests.iter().all(|r| r.replicate < 3));
    assert!(m.tpot_ms.is_some() && m.itl_ms.is_some());
    assert_eq!(run.config["in_process"]["batch_size"], 4);
}

#[test]
fn prompts_are_seeded() {
    assert_eq!(config().prompts(), config().prompts());
    let other = InProcessConfig {
        seed: 12,
        ..config()
    };
    assert_ne!(config().prompts(), other.prompts());
}

#[test]
fn a_row_that_stops_early_is_an_error_not_a_short_sample() {
    let err = inprocess::run(
        &config(),
        "eos",
        &Slo::default(),
        |p: &[Vec<u32>], n: usize, cb: &mut OnToken<'_>| {
            lockstep(p, n, cb)?;
            Ok(())
        },
    );
    assert!(err.is_ok());
    let err = inprocess::run(
        &config(),
        "eos",
        &Slo::default(),
        |p: &[Vec<u32>], n: usize, cb: &mut OnToken<'_>| lockstep(p, n - 1, cb),
    )
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("EOS ignored") && text.contains("warm-up batch 1"),
        "{text}"
    );
}

#[test]
fn a_token_for_a_row_outside_the_batch_is_reported() {
    let err = inprocess::run(
        &config(),
        "x",
        &Slo::default(),
        |_: &[Vec<u32>], _: usize, cb: &mut OnToken<'_>| {
            cb(9);
            Ok(())
        },
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("row 9"), "{err:#}");
}

#[test]
fn generation_errors_are_passed_through_with_context() {
    let err = inprocess::run(
        &config(),
        "x",
        &Slo::default(),
        |_: &[Vec<u32>], _: usize, _: &mut OnToken<'_>| anyhow::bail!("out of memory"),
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("out of memory"));
}
