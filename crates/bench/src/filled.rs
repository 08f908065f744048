//! What filled first near the knee: read from the gauges `--scrape-metrics` recorded. A request
//! waits either because the KV cache has no room for its cache (the server admits by memory) or
//! because the batch or the engine's pace does not take it yet while the cache has room. The
//! samples taken while requests waited tell the two apart: the cache was full at a sample when
//! the room left in it is less than what one running request holds on average (used ÷ running),
//! which works on our gauges and on vLLM's, which give the usage as a fraction only.

use formats::bench::{MetricsSample, ServerMetrics};

/// The reading of one run's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filled {
    /// No sample saw a request waiting.
    NoQueue { samples: usize },
    /// Requests waited at `queued` of `samples` samples; at `full` of those the KV cache had no
    /// room for another.
    Queue {
        samples: usize,
        queued: usize,
        full: usize,
    },
    /// The gauges needed (waiting, running, KV usage) were not exported.
    Unknown,
}

/// Whether the KV cache had no room for another request like those running, at `s`.
fn kv_full(s: &MetricsSample) -> Option<bool> {
    let usage = s.kv_cache_usage?;
    let running = s.requests_running?;
    if running < 1.0 {
        return Some(false);
    }
    Some(1.0 - usage < usage / running)
}

/// Read `m`'s samples.
pub fn read(m: &ServerMetrics) -> Filled {
    let mut queued = 0;
    let mut full = 0;
    let mut readable = 0;
    for s in &m.samples {
        let (Some(waiting), Some(is_full)) = (s.requests_waiting, kv_full(s)) else {
            continue;
        };
        readable += 1;
        if waiting >= 1.0 {
            queued += 1;
            full += usize::from(is_full);
        }
    }
    match (readable, queued) {
        (0, _) => Filled::Unknown,
        (samples, 0) => Filled::NoQueue { samples },
        (samples, queued) => Filled::Queue {
            samples,
            queued,
            full,
        },
    }
}

impl Filled {
    /// One sentence for the terminal and the book's exercise 7.
    pub fn sentence(self) -> String {
        match self {
            Filled::NoQueue { samples } => {
                format!("no request waited at any of {samples} samples: neither the batch nor the KV cache filled")
            }
            // A request that arrives between two steps waits for the next one: a queue seen at
            // a few samples is that, not a resource running out.
            Filled::Queue {
                samples, queued, ..
            } if queued * 20 < samples => format!(
                "requests waited at only {queued} of {samples} samples (for the next step): no queue built up, \
                 neither the batch nor the KV cache filled"
            ),
            Filled::Queue { queued, full, .. } if 2 * full > queued => format!(
                "requests waited at {queued} samples, and at {full} of them the KV cache had no room for another \
                 request: the KV cache filled first"
            ),
            Filled::Queue { queued, full, .. } => format!(
                "requests waited at {queued} samples, and the KV cache had room at {} of them: the batch (or the \
                 engine's pace) filled first, not the KV cache",
                queued - full
            ),
            Filled::Unknown => {
                "the server exported no running, waiting and KV-usage gauges: what filled first cannot be read"
                    .to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use formats::bench::ScrapeStatus;

    fn sample(running: f64, waiting: f64, usage: f64) -> MetricsSample {
        MetricsSample {
            requests_running: Some(running),
            requests_waiting: Some(waiting),
            kv_cache_usage: Some(usage),
            ..MetricsSample::default()
        }
    }

    fn metrics(samples: Vec<MetricsSample>) -> ServerMetrics {
        ServerMetrics {
            url: "http://127.0.0.1:8000/metrics".into(),
            interval_s: 1.0,
            status: ScrapeStatus::Scraped,
            naming: None,
            error: None,
            failed_scrapes: 0,
            samples,
        }
    }

    #[test]
    fn a_queue_behind_a_full_cache_is_the_kv_cache() {
        // Four running hold 97% of the cache: a fifth (about 24%) cannot fit, so the queue waits
        // on memory although a batch of 8 has room.
        let m = metrics(vec![
            sample(2.0, 0.0, 0.5),
            sample(4.0, 3.0, 0.97),
            sample(4.0, 5.0, 0.96),
            sample(4.0, 2.0, 0.98),
        ]);
        assert_eq!(
            read(&m),
            Filled::Queue {
                samples: 4,
                queued: 3,
                full: 3
            }
        );
        assert!(read(&m).sentence().ends_with("the KV cache filled first"));
    }

    #[test]
    fn a_queue_beside_room_in_the_cache_is_the_batch() {
        // Eight running hold 40% of a large cache: requests wait for a batch slot.
        let m = metrics(vec![sample(8.0, 6.0, 0.4), sample(8.0, 9.0, 0.41)]);
        assert_eq!(
            read(&m),
            Filled::Queue {
                samples: 2,
                queued: 2,
                full: 0
            }
        );
        assert!(read(&m).sentence().contains("the batch"));
    }

    #[test]
    fn a_request_waiting_for_the_next_step_now_and_then_is_no_queue() {
        // One waiting sample in forty: an arrival between two steps, not a full batch or cache.
        let mut samples = vec![sample(2.0, 0.0, 0.5); 39];
        samples.push(sample(2.0, 1.0, 0.5));
        let reading = read(&metrics(samples));
        assert!(
            reading.sentence().contains("no queue built up"),
            "{reading:?}"
        );
    }

    #[test]
    fn no_queue_and_no_gauges_are_said() {
        let idle = metrics(vec![sample(1.0, 0.0, 0.2), sample(0.0, 0.0, 0.0)]);
        assert_eq!(read(&idle), Filled::NoQueue { samples: 2 });
        let bare = metrics(vec![MetricsSample {
            resident_memory_bytes: Some(1e9),
            ..MetricsSample::default()
        }]);
        assert_eq!(read(&bare), Filled::Unknown);
    }

    #[test]
    fn one_running_request_fills_the_cache_when_two_would_not_fit() {
        // vLLM's usage alone: one request at 60% leaves 40%, less than another such request.
        assert_eq!(kv_full(&sample(1.0, 1.0, 0.6)), Some(true));
        assert_eq!(kv_full(&sample(1.0, 1.0, 0.4)), Some(false));
        assert_eq!(kv_full(&sample(0.0, 1.0, 0.0)), Some(false));
    }
}
