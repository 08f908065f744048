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
    /// Which independent run (replicate, from 0) of its configuration the request belongs to.
    #[serde(default)]
    pub replicate: usize,
    /// When the request was sent, in ms after its replicate started.
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
    pub fn of(records: &[RequestRecord], replicates: usize) -> Option<TtftBreakdown> {
        let requests = records
            .iter()
            .filter(|r| r.ok && r.server_timings.is_some())
            .count();
        if requests == 0 {
            return None;
        }
        let column = |f: fn(f64, &ServerTimings) -> f64| {
            by_replicate(records, replicates, |r| {
                r.server_timings
                    .as_ref()
                    .map(|t| f(r.ttft_ms, t))
                    .into_iter()
                    .collect()
            })
        };
        Some(TtftBreakdown {
            requests,
            queue_ms: Summary::of(&column(|_, t| t.queue_ms)),
            prefill_ms: Summary::of(&column(|_, t| t.prefill_ms)),
            rest_ms: Summary::of(&column(|ttft, t| ttft - t.queue_ms - t.prefill_ms)),
            decode_ms: Summary::of(&column(|_, t| t.decode_ms)),
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
    /// Independent runs (replicates) of this configuration, each with fresh arrivals.
    pub replicates: usize,
    /// Wall-clock time of all replicates together.
    pub duration_s: f64,
    /// Each replicate's duration, in order.
    pub replicate_durations_s: Vec<f64>,
    pub total_output_tokens: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_input_tokens: Option<usize>,
    pub ttft_ms: Option<Summary>,
    pub tpot_ms: Option<Summary>,
    pub itl_ms: Option<Summary>,
    pub e2el_ms: Option<Summary>,
    /// Output tokens/s: each replicate's tokens over its duration, averaged over replicates.
    pub output_tokens_per_s: f64,
    /// 95% interval of output tokens/s (crate::intervals over each replicate's four time
    /// quarters; over repeats for an in-process run).
    pub ci95_output_tokens_per_s: Option<crate::intervals::Interval>,
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
    /// Open loop only: whether the server kept up with the arrivals (the requests in flight
    /// stopped piling up: see [`kept_up`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_up_with_arrivals: Option<bool>,
}

/// Equal time windows each replicate is cut into for the throughput interval (as many as the
/// sections of crate::intervals, so that one replicate alone still has an interval).
const THROUGHPUT_WINDOWS: usize = 4;

/// Compute every metric from per-request records of one or more replicates, each lasting
/// `durations_s[replicate]` seconds.
pub fn compute(records: &[RequestRecord], durations_s: &[f64], slo: &Slo) -> RunMetrics {
    let replicates = durations_s.len().max(1);
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.ok).collect();
    let total_output_tokens: usize = ok.iter().map(|r| r.output_tokens).sum();
    let total_input_tokens = ok
        .iter()
        .map(|r| r.prompt_tokens)
        .sum::<Option<usize>>()
        .filter(|_| !ok.is_empty());
    let good = ok.iter().filter(|r| slo.is_met_by(r)).count();
    let duration_s: f64 = durations_s.iter().sum();
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };
    let rates = replicate_rates(records, durations_s);
    let latency =
        |f: fn(&RequestRecord) -> Vec<f64>| Summary::of(&by_replicate(records, replicates, f));
    RunMetrics {
        completed: ok.len(),
        failed: records.len() - ok.len(),
        replicates,
        duration_s,
        replicate_durations_s: durations_s.to_vec(),
        total_output_tokens,
        total_input_tokens,
        ttft_ms: latency(|r| vec![r.ttft_ms]),
        tpot_ms: latency(|r| r.tpot_ms().into_iter().collect()),
        itl_ms: latency(|r| r.itl_ms.clone()),
        e2el_ms: latency(|r| vec![r.e2el_ms]),
        output_tokens_per_s: stats::mean(&rates).unwrap_or(0.0),
        ci95_output_tokens_per_s: crate::intervals::mean(&throughput_samples(records, durations_s))
            .map(|e| e.interval),
        requests_per_s: per_s(ok.len() as f64),
        goodput: per_s(good as f64),
        slo_attainment: if ok.is_empty() {
            0.0
        } else {
            good as f64 / ok.len() as f64
        },
        // Every request's lag, failed ones too: the client's scheduling, whatever the answer.
        dispatch_lag_ms: Summary::of(&group(records.iter(), replicates, |r| {
            r.dispatch_lag_ms.into_iter().collect()
        })),
        ttft_breakdown: TtftBreakdown::of(records, replicates),
        kept_up_with_arrivals: None,
    }
}

/// The values `f` gives for each completed request, grouped by replicate (`replicates` groups,
/// each in arrival order).
pub fn by_replicate(
    records: &[RequestRecord],
    replicates: usize,
    f: impl Fn(&RequestRecord) -> Vec<f64>,
) -> Vec<Vec<f64>> {
    group(records.iter().filter(|r| r.ok), replicates, f)
}

fn group<'a>(
    records: impl Iterator<Item = &'a RequestRecord>,
    replicates: usize,
    f: impl Fn(&RequestRecord) -> Vec<f64>,
) -> Vec<Vec<f64>> {
    let mut groups = vec![Vec::new(); replicates.max(1)];
    for r in records {
        if let Some(group) = groups.get_mut(r.replicate) {
            group.extend(f(r));
        }
    }
    groups
}

/// Each replicate's output tokens per second over its own duration.
fn replicate_rates(records: &[RequestRecord], durations_s: &[f64]) -> Vec<f64> {
    durations_s
        .iter()
        .enumerate()
        .filter(|(_, d)| **d > 0.0)
        .map(|(k, d)| {
            records
                .iter()
                .filter(|r| r.ok && r.replicate == k)
                .map(|r| r.output_tokens)
                .sum::<usize>() as f64
                / d
        })
        .collect()
}

/// The throughput samples of a run: for each replicate, the output tokens/s of its four equal
/// time windows (their mean is the replicate's rate). What the throughput interval and
/// `--compare … --metric output_tokens_per_s` use for a load run.
pub fn throughput_samples(records: &[RequestRecord], durations_s: &[f64]) -> Vec<Vec<f64>> {
    durations_s
        .iter()
        .enumerate()
        .map(|(k, &d)| window_rates(records.iter().filter(|r| r.replicate == k), d))
        .collect()
}

/// Cut one replicate into equal time windows and return the output tokens/s observed in each;
/// their mean is its output tokens/s. Empty when it has no duration.
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

/// Whether an open-loop server kept up with its arrivals: whether the requests in flight stopped
/// piling up. At each request's arrival, count the earlier requests of its replicate still in
/// flight; pooled over replicates, compare the mean count over the second half of the arrivals
/// with the first half's. A server that falls behind serves a queue that grows for as long as
/// requests keep coming, so the count climbs steadily and the second half's mean is about three
/// times the first's; one that keeps up holds it level (the first half also holds the start
/// from an empty server). Kept up when (second + 1) ≤ 2 × (first + 1): the ones keep a nearly
/// idle server, in flight 0.1 against 0.3, from counting as falling behind. `None` with fewer
/// than eight completed requests.
pub fn kept_up(records: &[RequestRecord], replicates: usize) -> Option<bool> {
    let (mut first, mut second) = ((0.0, 0usize), (0.0, 0usize));
    let mut completed = 0;
    for k in 0..replicates.max(1) {
        let mut run: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.ok && r.replicate == k)
            .collect();
        run.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
        completed += run.len();
        let half = run.len() / 2;
        for (i, r) in run.iter().enumerate() {
            let in_flight = run[..i]
                .iter()
                .filter(|e| e.start_ms + e.e2el_ms > r.start_ms)
                .count() as f64;
            let side = if i < half { &mut first } else { &mut second };
            side.0 += in_flight;
            side.1 += 1;
        }
    }
    if completed < 8 || first.1 == 0 || second.1 == 0 {
        return None;
    }
    let (first, second) = (first.0 / first.1 as f64, second.0 / second.1 as f64);
    Some(second + 1.0 <= 2.0 * (first + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests arriving every 100 ms, each taking `latency(i)` ms.
    fn arrivals(n: usize, latency: impl Fn(usize) -> f64) -> Vec<RequestRecord> {
        (0..n)
            .map(|i| RequestRecord {
                ok: true,
                start_ms: 100.0 * i as f64,
                e2el_ms: latency(i),
                ttft_ms: 10.0,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn a_server_that_falls_behind_piles_requests_up_and_one_that_keeps_up_does_not() {
        // Keeps up: each request takes 250 ms, two or three in flight throughout.
        assert_eq!(kept_up(&arrivals(40, |_| 250.0), 1), Some(true));
        // Nearly idle: 50 ms each, hardly ever another in flight.
        assert_eq!(kept_up(&arrivals(40, |_| 50.0), 1), Some(true));
        // Falls behind: served one every 150 ms while they arrive every 100 ms.
        assert_eq!(
            kept_up(
                &arrivals(40, |i| 150.0 * (i + 1) as f64 - 100.0 * i as f64),
                1
            ),
            Some(false)
        );
        assert_eq!(
            kept_up(&arrivals(5, |_| 50.0), 1),
            None,
            "too few requests to tell"
        );
    }

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
            RequestRecord {
                ok: false,
                ..Default::default()
            },
        ];
        let slo = Slo {
            ttft_ms: Some(200.0),
            tpot_ms: Some(50.0),
            e2el_ms: None,
        };
        let m = compute(&records, &[2.0], &slo);
        assert_eq!(m.completed, 3);
        assert_eq!(m.failed, 1);
        assert_eq!(m.goodput, 0.5);
        assert_eq!(m.requests_per_s, 1.5);
        assert_eq!(m.total_output_tokens, 6);
        assert_eq!(m.output_tokens_per_s, 3.0);
        assert_eq!(m.itl_ms.as_ref().map(|s| s.n), Some(3));
        let all_good = compute(&records, &[2.0], &Slo::default());
        assert_eq!(all_good.goodput, all_good.requests_per_s);
        assert_eq!(
            all_good.ttft_breakdown, None,
            "no server timings, no breakdown"
        );
    }

    #[test]
    fn the_breakdown_splits_ttft_into_queue_prefill_and_the_rest() {
        let timed = |ttft: f64, queue_ms: f64, prefill_ms: f64| RequestRecord {
            server_timings: Some(ServerTimings {
                queue_ms,
                prefill_ms,
                decode_ms: 50.0,
            }),
            ..record(ttft, &[10.0], 2)
        };
        let records = vec![
            timed(100.0, 20.0, 70.0),
            timed(300.0, 200.0, 80.0),
            record(90.0, &[10.0], 2),
        ];
        let b = compute(&records, &[1.0], &Slo::default())
            .ttft_breakdown
            .expect("two requests carry timings");
        assert_eq!(b.requests, 2);
        let rest = b.rest_ms.unwrap();
        assert_eq!((rest.min, rest.max), (10.0, 20.0));
        assert_eq!(
            (
                b.queue_ms.unwrap().max,
                b.prefill_ms.unwrap().min,
                b.decode_ms.unwrap().mean
            ),
            (200.0, 70.0, 50.0)
        );
    }
}
