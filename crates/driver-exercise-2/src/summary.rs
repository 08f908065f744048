//! The verdicts side by side, as the program prints them last.

use crate::SCENARIOS;
use bench::stats::{Better, Comparison};

/// The six verdicts side by side, and how many requests an inconclusive one above saturation
/// would need.
pub(crate) fn summary(
    comparisons: &[Comparison],
    rates: &[f64],
    batch_a: u16,
    batch_b: u16,
    requests: usize,
) -> String {
    let mut out =
        format!("\nbatch-{batch_b} against batch-{batch_a} (B/A with its 95% interval):\n");
    for (scenario, rate) in SCENARIOS.iter().zip(rates) {
        out.push_str(&format!("  {scenario} saturation ({rate} req/s)\n"));
        for c in comparisons
            .iter()
            .filter(|c| c.scenario.as_deref() == Some(*scenario))
        {
            let meaning = if c.better == Better::Higher {
                "throughput"
            } else {
                "latency"
            };
            let high = if c.ci_high.is_finite() {
                format!("{:.3}", c.ci_high)
            } else {
                "∞".into()
            };
            let verdict = if c.set_by_arrivals {
                "set by the arrivals"
            } else {
                c.verdict.as_str()
            };
            out.push_str(&format!(
                "    {meaning:<11} {:<20} {:>7.3}  [{:.3}, {high}]  {verdict}\n",
                c.metric, c.ratio, c.ci_low
            ));
        }
    }
    for c in comparisons
        .iter()
        .filter(|c| c.scenario.as_deref() == Some("above") && !c.set_by_arrivals)
    {
        if let Some(n) = requests_to_decide(c, requests) {
            out.push_str(&format!(
                "  above: {} would need about {n} requests a replicate to be decisive\n",
                c.metric
            ));
        }
    }
    out.push_str(
        "\"Faster\" means one of these; answers.toml asks which one your answer is about.\n",
    );
    out
}

/// For an inconclusive comparison whose ratio lies beyond the band: the requests per replicate at
/// which an interval of the same shape, narrowing as 1/√n, would clear the band. `None` when it is
/// decisive already, open, or its ratio lies inside the band (more requests would say `same` or
/// stay inconclusive).
fn requests_to_decide(c: &Comparison, requests: usize) -> Option<usize> {
    if c.verdict.is_a_difference() || !c.ci_high.is_finite() || c.ci_low <= 0.0 {
        return None;
    }
    let (r, edge) = (
        c.ratio.ln(),
        if c.ratio > 1.0 {
            (1.0 + c.min_effect).ln()
        } else {
            (1.0 - c.min_effect).ln()
        },
    );
    let half = (c.ci_high.ln() - c.ci_low.ln()) / 2.0;
    let room = (r - edge).abs();
    if (r - edge).signum() != r.signum() || room == 0.0 {
        return None;
    }
    Some((requests as f64 * (half / room).powi(2)).ceil() as usize)
}
