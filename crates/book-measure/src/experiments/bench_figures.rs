//! Figures of a benchmark (bench.json, read with bench's own reader): a run's rates and
//! percentiles, and a comparison's ratio, interval and verdict.

use bench::report::Run;
use bench::stats::{Comparison, Summary};

use crate::sheet::Sheet;

/// Under `prefix`: `tok_s` (output tokens/s), `req_s`, `completed`, and for TTFT, TPOT, ITL and
/// E2EL (`ttft`, `tpot`, `itl`, `e2el`) `.median_ms`, `.p90_ms`, `.p99_ms`, with the P90's 95%
/// interval `.p90_ci_low_ms`, `.p90_ci_high_ms` where it closes; where the server reported its
/// timings, `queue`, `prefill` and `decode` the same way.
pub fn add_run(sheet: &mut Sheet, prefix: &str, run: &Run) {
    let m = &run.metrics;
    sheet.num(format!("{prefix}.tok_s"), m.output_tokens_per_s, "tok/s", 1);
    sheet.num(format!("{prefix}.req_s"), m.requests_per_s, "req/s", 2);
    sheet.num(format!("{prefix}.completed"), m.completed as f64, "", 0);
    let summaries: [(&str, Option<&Summary>); 4] = [
        ("ttft", m.ttft_ms.as_ref()),
        ("tpot", m.tpot_ms.as_ref()),
        ("itl", m.itl_ms.as_ref()),
        ("e2el", m.e2el_ms.as_ref()),
    ];
    for (name, s) in summaries {
        if let Some(s) = s {
            add_summary(sheet, &format!("{prefix}.{name}"), s);
        }
    }
    if let Some(b) = &m.ttft_breakdown {
        for (name, s) in [
            ("queue", b.queue_ms.as_ref()),
            ("prefill", b.prefill_ms.as_ref()),
            ("decode", b.decode_ms.as_ref()),
        ] {
            if let Some(s) = s {
                add_summary(sheet, &format!("{prefix}.{name}"), s);
            }
        }
    }
}

fn add_summary(sheet: &mut Sheet, prefix: &str, s: &Summary) {
    sheet.num(format!("{prefix}.median_ms"), s.median, "ms", 1);
    sheet.num(format!("{prefix}.p90_ms"), s.p90, "ms", 1);
    sheet.num(format!("{prefix}.p99_ms"), s.p99, "ms", 1);
    if let Some(ci) = &s.ci95_p90 {
        // An interval that does not close (∞) is left out: the page says "open" in words.
        sheet.num(format!("{prefix}.p90_ci_low_ms"), ci.low, "ms", 1);
        sheet.num(format!("{prefix}.p90_ci_high_ms"), ci.high, "ms", 1);
    }
}

/// Under `prefix`: `ratio` (B/A, in `ratio_unit`: "×" or "" for a plain number), `ci_low`,
/// `ci_high` (plain numbers, 3 decimals), `verdict`
/// (or "set by the arrivals"), `change_low_pct` and `change_high_pct` (the interval as a change
/// of B against A, in %), `a` and `b` (the two figures compared).
pub fn add_comparison(sheet: &mut Sheet, prefix: &str, c: &Comparison, ratio_unit: &'static str) {
    sheet.num(format!("{prefix}.ratio"), c.ratio, ratio_unit, 3);
    sheet.num(format!("{prefix}.ci_low"), c.ci_low, "", 3);
    sheet.num(format!("{prefix}.ci_high"), c.ci_high, "", 3);
    sheet.num(
        format!("{prefix}.change_pct"),
        (c.ratio - 1.0) * 100.0,
        "%",
        1,
    );
    sheet.num(
        format!("{prefix}.change_low_pct"),
        (c.ci_low - 1.0) * 100.0,
        "%",
        1,
    );
    sheet.num(
        format!("{prefix}.change_high_pct"),
        (c.ci_high - 1.0) * 100.0,
        "%",
        1,
    );
    let verdict = if c.set_by_arrivals {
        "set by the arrivals"
    } else {
        c.verdict.as_str()
    };
    sheet.text(format!("{prefix}.verdict"), verdict);
    sheet.num(format!("{prefix}.a"), c.a, "", 2);
    sheet.num(format!("{prefix}.b"), c.b, "", 2);
}

/// The open-loop rate a run was given (its config's `rate`), if any.
pub fn rate_of(run: &Run) -> Option<f64> {
    fn find(v: &serde_json::Value) -> Option<f64> {
        match v {
            serde_json::Value::Object(map) => map
                .get("rate")
                .and_then(|r| r.as_f64())
                .or_else(|| map.values().find_map(find)),
            _ => None,
        }
    }
    find(&run.config)
}
