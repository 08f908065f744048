//! Generation metrics, defined as vLLM's serving benchmark (`vllm bench serve`) defines them.
//!
//! - **TTFT**: time from sending the request to the first streamed chunk that carries text.
//! - **ITL**: every gap between consecutive text-carrying chunks, pooled over all requests.
//! - **TPOT**: `(E2EL − TTFT) / (output tokens − 1)` per request; requests with one output
//!   token have no TPOT (they count as 0 for goodput, as in vLLM).
//! - **E2EL**: time from sending the request to the end of its response.
//! - **output tokens/s**, **requests/s**: totals over the benchmark's wall-clock duration.
//! - **goodput**: completed requests per second that met *every* per-request SLO given
//!   (TTFT, TPOT, E2EL). With no SLO every completed request is good, so goodput = requests/s.
//! - **TTFT breakdown** (only against a server that reports `server_timings`, as `gpt2 serve`
//!   does): TTFT = queue + prefill + rest, where queue and prefill are the server's own
//!   figures and the rest (network, HTTP, tokenisation, streaming the first chunk) is what the
//!   client saw beyond them.

use serde::{Deserialize, Serialize};

use crate::stats::{self, Summary};

/// What one request measured, in milliseconds from the moment it was sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// When the request was sent, in ms after the run started.
    pub start_ms: f64,
    /// Open loop only: how late the request left compared with its Poisson arrival time (the
    /// client's own scheduling delay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_lag_ms: Option<f64>,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// HTTP status, where a response arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub ttft_ms: f64,
    pub e2el_ms: f64,
    /// Gaps between consecutive text-carrying chunks.
    pub itl_ms: Vec<f64>,
    /// From the server's `usage.completion_tokens` when sent, else the number of text chunks.
    pub output_tokens: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<usize>,
    /// Where the server says the request's time went, when it says (`server_timings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timings: Option<ServerTimings>,
}

/// A server's own account of one request (`gpt2 serve`'s `server_timings` object), in ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTimings {
    /// Arrival at the server to the first work scheduled for it.
    pub queue_ms: f64,
    /// First scheduled work to its first token.
    pub prefill_ms: f64,
    /// First token to last.
    pub decode_ms: f64,
}

/// TTFT split into the server's queue and prefill time and the rest, over the requests whose
/// server reported timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TtftBreakdown {
    /// Requests the breakdown covers (completed, with `server_timings`).
    pub requests: usize,
    pub queue_ms: Option<Summary>,
    pub prefill_ms: Option<Summary>,
    /// TTFT − queue − prefill: network, HTTP, tokenisation, the first chunk's trip.
    pub rest_ms: Option<Summary>,
    pub decode_ms: Option<Summary>,
}

impl TtftBreakdown {
    /// `None` when no completed request carried server timings (vLLM, llama.cpp, ...).
    pub fn of(ok: &[&RequestRecord], seed: u64) -> Option<TtftBreakdown> {
        let timed: Vec<(f64, ServerTimings)> = ok.iter().filter_map(|r| r.server_timings.map(|t| (r.ttft_ms, t))).collect();
        if timed.is_empty() {
            return None;
        }
        let column = |f: &dyn Fn(&(f64, ServerTimings)) -> f64| timed.iter().map(f).collect::<Vec<f64>>();
        Some(TtftBreakdown {
            requests: timed.len(),
            queue_ms: Summary::of(&column(&|(_, t)| t.queue_ms), seed),
            prefill_ms: Summary::of(&column(&|(_, t)| t.prefill_ms), seed.wrapping_add(1)),
            rest_ms: Summary::of(&column(&|(ttft, t)| ttft - t.queue_ms - t.prefill_ms), seed.wrapping_add(2)),
            decode_ms: Summary::of(&column(&|(_, t)| t.decode_ms), seed.wrapping_add(3)),
        })
    }
}

impl RequestRecord {
    /// TPOT of this request, or `None` when it produced fewer than two tokens.
    pub fn tpot_ms(&self) -> Option<f64> {
        (self.output_tokens > 1)
            .then(|| (self.e2el_ms - self.ttft_ms) / (self.output_tokens - 1) as f64)
    }

    /// Times (ms after the run started) at which text chunks arrived, each with the number of
    /// tokens it stands for (usage tokens spread evenly over chunks when a server bundles them).
    fn token_arrivals(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let chunks = self.itl_ms.len() + 1;
        let weight = self.output_tokens as f64 / chunks as f64;
        let first = self.start_ms + self.ttft_ms;
        std::iter::once(first)
            .chain(self.itl_ms.iter().scan(first, |t, gap| {
                *t += gap;
                Some(*t)
            }))
            .map(move |t| (t, weight))
    }
}

/// A per-request service-level objective; a request is "good" when it meets every bound set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
}

impl Slo {
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2el_ms.is_none()
    }

    pub fn is_met_by(&self, r: &RequestRecord) -> bool {
        let within = |bound: Option<f64>, value: f64| bound.is_none_or(|b| value <= b);
        within(self.ttft_ms, r.ttft_ms)
            && within(self.tpot_ms, r.tpot_ms().unwrap_or(0.0))
            && within(self.e2el_ms, r.e2el_ms)
    }
}

/// Every figure of one run, as written to `bench.json` under `runs[].metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    pub completed: usize,
    pub failed: usize,
    pub duration_s: f64,
    pub total_output_tokens: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_input_tokens: Option<usize>,
    pub ttft_ms: Option<Summary>,
    pub tpot_ms: Option<Summary>,
    pub itl_ms: Option<Summary>,
    pub e2el_ms: Option<Summary>,
    pub output_tokens_per_s: f64,
    /// 95% interval of output tokens/s (block bootstrap over time windows for a load run, over
    /// repeats for an in-process run).
    pub ci95_output_tokens_per_s: Option<[f64; 2]>,
    pub requests_per_s: f64,
    /// Good requests per second (see the module docs).
    pub goodput: f64,
    /// Fraction of completed requests that met the SLO.
    pub slo_attainment: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_lag_ms: Option<Summary>,
    /// Present only when the server reported `server_timings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_breakdown: Option<TtftBreakdown>,
}

/// Number of equal time windows the run is cut into for the throughput interval.
const THROUGHPUT_WINDOWS: usize = 20;

/// Compute every metric from per-request records over a run of `duration_s` seconds.
pub fn compute(records: &[RequestRecord], duration_s: f64, slo: &Slo, seed: u64) -> RunMetrics {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.ok).collect();
    let ttft: Vec<f64> = ok.iter().map(|r| r.ttft_ms).collect();
    let e2el: Vec<f64> = ok.iter().map(|r| r.e2el_ms).collect();
    let tpot: Vec<f64> = ok.iter().filter_map(|r| r.tpot_ms()).collect();
    let itl: Vec<f64> = ok.iter().flat_map(|r| r.itl_ms.iter().copied()).collect();
    let lag: Vec<f64> = records.iter().filter_map(|r| r.dispatch_lag_ms).collect();
    let total_output_tokens: usize = ok.iter().map(|r| r.output_tokens).sum();
    let total_input_tokens =
        ok.iter().map(|r| r.prompt_tokens).sum::<Option<usize>>().filter(|_| !ok.is_empty());
    let good = ok.iter().filter(|r| slo.is_met_by(r)).count();
    let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
    RunMetrics {
        completed: ok.len(),
        failed: records.len() - ok.len(),
        duration_s,
        total_output_tokens,
        total_input_tokens,
        ttft_ms: Summary::of(&ttft, seed),
        tpot_ms: Summary::of(&tpot, seed.wrapping_add(1)),
        itl_ms: Summary::of(&itl, seed.wrapping_add(2)),
        e2el_ms: Summary::of(&e2el, seed.wrapping_add(3)),
        output_tokens_per_s: per_s(total_output_tokens as f64),
        ci95_output_tokens_per_s: throughput_ci(&ok, duration_s, seed.wrapping_add(4)),
        requests_per_s: per_s(ok.len() as f64),
        goodput: per_s(good as f64),
        slo_attainment: if ok.is_empty() { 0.0 } else { good as f64 / ok.len() as f64 },
        dispatch_lag_ms: Summary::of(&lag, seed.wrapping_add(5)),
        ttft_breakdown: TtftBreakdown::of(&ok, seed.wrapping_add(6)),
    }
}

/// Block bootstrap of output tokens/s: the mean of [`window_rates`], resampled. Resampling
/// windows rather than requests keeps the interval honest when every request has the same length.
fn throughput_ci(ok: &[&RequestRecord], duration_s: f64, seed: u64) -> Option<[f64; 2]> {
    let rates = window_rates(ok.iter().copied(), duration_s);
    stats::bootstrap_ci(&rates, stats::mean_of, stats::DEFAULT_RESAMPLES, seed)
}

/// Cut the run into equal time windows and return the output tokens/s observed in each; their
/// mean is the run's output tokens/s. Empty when the run has no duration.
pub fn window_rates<'a>(
    records: impl IntoIterator<Item = &'a RequestRecord>,
    duration_s: f64,
) -> Vec<f64> {
    if duration_s <= 0.0 {
        return Vec::new();
    }
    let window_ms = duration_s * 1000.0 / THROUGHPUT_WINDOWS as f64;
    let mut tokens = [0.0; THROUGHPUT_WINDOWS];
    let ok = records.into_iter().filter(|r| r.ok);
    for (t, weight) in ok.flat_map(|r| r.token_arrivals()) {
        let i = ((t / window_ms).floor().max(0.0) as usize).min(THROUGHPUT_WINDOWS - 1);
        tokens[i] += weight;
    }
    tokens.iter().map(|n| n / (window_ms / 1000.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ttft: f64, itl: &[f64], tokens: usize) -> RequestRecord {
        RequestRecord {
            ok: true,
            ttft_ms: ttft,
            e2el_ms: ttft + itl.iter().sum::<f64>(),
            itl_ms: itl.to_vec(),
            output_tokens: tokens,
            ..Default::default()
        }
    }

    #[test]
    fn tpot_follows_vllm() {
        let r = record(100.0, &[10.0, 20.0, 30.0], 4);
        assert_eq!(r.tpot_ms(), Some(20.0));
        assert_eq!(record(5.0, &[], 1).tpot_ms(), None);
    }

    #[test]
    fn goodput_counts_requests_meeting_every_bound() {
        let records = vec![
            record(100.0, &[10.0], 2),
            record(300.0, &[10.0], 2),
            record(100.0, &[90.0], 2),
            RequestRecord { ok: false, ..Default::default() },
        ];
        let slo = Slo { ttft_ms: Some(200.0), tpot_ms: Some(50.0), e2el_ms: None };
        let m = compute(&records, 2.0, &slo, 1);
        assert_eq!(m.completed, 3);
        assert_eq!(m.failed, 1);
        assert_eq!(m.goodput, 0.5);
        assert_eq!(m.requests_per_s, 1.5);
        assert_eq!(m.total_output_tokens, 6);
        assert_eq!(m.output_tokens_per_s, 3.0);
        assert_eq!(m.itl_ms.as_ref().map(|s| s.n), Some(3));
        let all_good = compute(&records, 2.0, &Slo::default(), 1);
        assert_eq!(all_good.goodput, all_good.requests_per_s);
        assert_eq!(all_good.ttft_breakdown, None, "no server timings, no breakdown");
    }

    #[test]
    fn the_breakdown_splits_ttft_into_queue_prefill_and_the_rest() {
        let timed = |ttft: f64, queue_ms: f64, prefill_ms: f64| RequestRecord {
            server_timings: Some(ServerTimings { queue_ms, prefill_ms, decode_ms: 50.0 }),
            ..record(ttft, &[10.0], 2)
        };
        let records = vec![timed(100.0, 20.0, 70.0), timed(300.0, 200.0, 80.0), record(90.0, &[10.0], 2)];
        let b = compute(&records, 1.0, &Slo::default(), 3).ttft_breakdown.expect("two requests carry timings");
        assert_eq!(b.requests, 2);
        let rest = b.rest_ms.unwrap();
        assert_eq!((rest.min, rest.max), (10.0, 20.0));
        assert_eq!((b.queue_ms.unwrap().max, b.prefill_ms.unwrap().min, b.decode_ms.unwrap().mean), (200.0, 70.0, 50.0));
    }
}
