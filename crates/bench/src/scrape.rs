//! `--scrape-metrics`: the server's own gauges during a run. A task reads `GET /metrics` (the
//! Prometheus text format, or OpenMetrics as `prometheus-client` writes it) every interval while
//! the load runs, and once more after it; each scrape becomes a [`MetricsSample`] whose fields
//! are mapped from our server's names or vLLM's ([`SERIES`], the table in crates/bench/README.md).
//! A server without `/metrics` is recorded as [`ScrapeStatus::NotFound`] and the run goes on.

use std::time::{Duration, Instant};

use formats::bench::{MetricsSample, Naming, ScrapeStatus, ServerMetrics};
use std::collections::HashMap;

use openmetrics_parser::{OpenMetricsValue, PrometheusValue};

/// One recorded series and the names it is read from: ours, then vLLM's (older names after
/// newer ones), then names every Prometheus client library exports.
pub struct Series {
    pub field: &'static str,
    pub course: &'static [&'static str],
    pub vllm: &'static [&'static str],
    pub common: &'static [&'static str],
}

/// Every recorded series, in bench.json's order.
pub const SERIES: [Series; 8] = [
    Series {
        field: "requests_running",
        course: &["course_requests_running"],
        vllm: &["vllm:num_requests_running"],
        common: &[],
    },
    Series {
        field: "requests_waiting",
        course: &["course_requests_waiting"],
        vllm: &["vllm:num_requests_waiting"],
        common: &[],
    },
    Series {
        field: "kv_cache_used_bytes",
        course: &["course_kv_cache_used_bytes"],
        vllm: &[],
        common: &[],
    },
    Series {
        field: "kv_cache_capacity_bytes",
        course: &["course_kv_cache_capacity_bytes"],
        vllm: &[],
        common: &[],
    },
    Series {
        field: "kv_cache_usage",
        course: &["course_kv_cache_usage_ratio"],
        // A fraction 0..1 despite `perc`; vLLM before the V1 engine called it gpu_cache_usage_perc.
        vllm: &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        common: &[],
    },
    Series {
        field: "prompt_tokens_total",
        course: &["course_prompt_tokens_total"],
        vllm: &["vllm:prompt_tokens_total"],
        common: &[],
    },
    Series {
        field: "generation_tokens_total",
        course: &["course_generation_tokens_total"],
        vllm: &["vllm:generation_tokens_total"],
        common: &[],
    },
    Series {
        field: "resident_memory_bytes",
        course: &[],
        vllm: &[],
        common: &["process_resident_memory_bytes"],
    },
];

/// Each family's value summed over its label sets (vLLM labels every series with its model and
/// engine; one server is one series here); None for histograms, summaries and other kinds.
type Families = HashMap<String, Option<f64>>;

/// Parse one `/metrics` text into a sample (its `t_s` left 0) and whose names it carried.
pub fn read_sample(text: &str) -> Result<(MetricsSample, Naming), String> {
    let families = parse(text)?;
    let has = |names: &[&str]| names.iter().any(|n| family(&families, n).is_some());
    let naming = if SERIES.iter().any(|s| has(s.course)) {
        Naming::Course
    } else if SERIES.iter().any(|s| has(s.vllm)) {
        Naming::Vllm
    } else {
        Naming::Unknown
    };
    let read = |s: &Series| -> Option<f64> {
        let own = match naming {
            Naming::Course => s.course,
            Naming::Vllm => s.vllm,
            Naming::Unknown => &[],
        };
        own.iter()
            .chain(s.common)
            .find_map(|name| family(&families, name).flatten())
    };
    let value = |field: &str| SERIES.iter().find(|s| s.field == field).and_then(read);
    let mut sample = MetricsSample {
        t_s: 0.0,
        requests_running: value("requests_running"),
        requests_waiting: value("requests_waiting"),
        kv_cache_used_bytes: value("kv_cache_used_bytes"),
        kv_cache_capacity_bytes: value("kv_cache_capacity_bytes"),
        kv_cache_usage: value("kv_cache_usage"),
        prompt_tokens_total: value("prompt_tokens_total"),
        generation_tokens_total: value("generation_tokens_total"),
        resident_memory_bytes: value("resident_memory_bytes"),
    };
    // Bytes without the fraction: the fraction is their ratio (never the other way round: a
    // fraction alone gives no bytes).
    if sample.kv_cache_usage.is_none() {
        if let (Some(used), Some(cap)) =
            (sample.kv_cache_used_bytes, sample.kv_cache_capacity_bytes)
        {
            sample.kv_cache_usage = (cap > 0.0).then(|| used / cap);
        }
    }
    Ok((sample, naming))
}

fn parse(text: &str) -> Result<Families, String> {
    fn summed(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
        let values: Vec<Option<f64>> = values.collect();
        if values.is_empty() || values.iter().any(Option::is_none) {
            return None;
        }
        Some(values.into_iter().flatten().sum())
    }
    // prometheus-client writes OpenMetrics (`# EOF` last); other servers the Prometheus format.
    if text.trim_end().ends_with("# EOF") {
        let exposition = openmetrics_parser::openmetrics::parse_openmetrics(text)
            .map_err(|e| format!("not the OpenMetrics text format: {e:?}"))?;
        Ok(exposition
            .families
            .into_iter()
            .map(|(name, family)| {
                let total = summed(family.iter_samples().map(|s| match &s.value {
                    OpenMetricsValue::Gauge(n) | OpenMetricsValue::Unknown(n) => Some(n.as_f64()),
                    OpenMetricsValue::Counter(c) => Some(c.value.as_f64()),
                    _ => None,
                }));
                (name, total)
            })
            .collect())
    } else {
        let exposition = openmetrics_parser::prometheus::parse_prometheus(text)
            .map_err(|e| format!("not the Prometheus text format: {e:?}"))?;
        Ok(exposition
            .families
            .into_iter()
            .map(|(name, family)| {
                let total = summed(family.iter_samples().map(|s| match &s.value {
                    PrometheusValue::Gauge(n) | PrometheusValue::Unknown(n) => Some(n.as_f64()),
                    PrometheusValue::Counter(c) => Some(c.value.as_f64()),
                    PrometheusValue::Histogram(_) | PrometheusValue::Summary(_) => None,
                }));
                (name, total)
            })
            .collect())
    }
}

/// A family's value by the name its samples carry: a counter `x_total` may be declared as `x`
/// (OpenMetrics, prometheus-client) or as `x_total` (the Prometheus format).
fn family(families: &Families, name: &str) -> Option<Option<f64>> {
    families.get(name).copied().or_else(|| {
        name.strip_suffix("_total")
            .and_then(|base| families.get(base).copied())
    })
}

/// `/metrics` on the server the completions go to: the scheme, host and port of `base_url`.
pub fn metrics_url(base_url: &str) -> Result<String, String> {
    let mut url = reqwest::Url::parse(base_url)
        .map_err(|e| format!("--base-url {base_url:?} is not a URL ({e})"))?;
    url.set_path("/metrics");
    url.set_query(None);
    Ok(url.to_string())
}

/// One scrape's outcome.
enum Scraped {
    Sample(MetricsSample, Naming),
    NotFound,
    Failed(String),
}

async fn scrape_once(client: &reqwest::Client, url: &str, started: Instant) -> Scraped {
    let response = match client.get(url).send().await {
        Ok(r) => r,
        Err(e) => return Scraped::Failed(format!("GET {url}: {e}")),
    };
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Scraped::NotFound;
    }
    if !status.is_success() {
        return Scraped::Failed(format!("GET {url}: HTTP {status}"));
    }
    let text = match response.text().await {
        Ok(t) => t,
        Err(e) => return Scraped::Failed(format!("GET {url}: {e}")),
    };
    match read_sample(&text) {
        Ok((mut sample, naming)) => {
            sample.t_s = started.elapsed().as_secs_f64();
            Scraped::Sample(sample, naming)
        }
        Err(e) => Scraped::Failed(format!("{url}: {e}")),
    }
}

/// A scrape running beside a load run: [`Scraper::start`] before it, [`Scraper::finish`] after.
pub struct Scraper {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<ServerMetrics>,
}

impl Scraper {
    /// Scrape `url` now and every `interval` until [`Scraper::finish`]; stops early for good on a
    /// 404 (the server has no `/metrics`).
    pub fn start(url: String, interval: Duration) -> Scraper {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .timeout(interval.max(Duration::from_secs(2)))
                .build()
                .unwrap_or_default();
            let started = Instant::now();
            let mut out = ServerMetrics {
                url: url.clone(),
                interval_s: interval.as_secs_f64(),
                status: ScrapeStatus::Failed,
                naming: None,
                error: None,
                failed_scrapes: 0,
                samples: Vec::new(),
            };
            loop {
                let last = *stopped.borrow();
                match scrape_once(&client, &url, started).await {
                    Scraped::Sample(sample, naming) => {
                        out.status = ScrapeStatus::Scraped;
                        out.naming = Some(naming);
                        out.samples.push(sample);
                    }
                    Scraped::NotFound => {
                        out.status = ScrapeStatus::NotFound;
                        out.error =
                            Some(format!("GET {url}: HTTP 404: the server has no /metrics"));
                        return out;
                    }
                    Scraped::Failed(e) => {
                        if !out.samples.is_empty() {
                            out.failed_scrapes += 1;
                        }
                        out.error = Some(e);
                    }
                }
                if last {
                    return out;
                }
                tokio::select! {
                    _ = tokio::time::sleep(interval) => {}
                    _ = stopped.changed() => {}
                }
            }
        });
        Scraper { stop, task }
    }

    /// Stop after one last scrape, and return what was recorded.
    pub async fn finish(self) -> ServerMetrics {
        // The task may have ended already (a 404): then there is nobody to tell.
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(metrics) => metrics,
            Err(e) => ServerMetrics {
                url: String::new(),
                interval_s: 0.0,
                status: ScrapeStatus::Failed,
                naming: None,
                error: Some(format!("the scrape task ended abnormally: {e}")),
                failed_scrapes: 0,
                samples: Vec::new(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM: &str = include_str!("../tests/fixtures/vllm-metrics.txt");
    const COURSE: &str = include_str!("../tests/fixtures/course-metrics.txt");

    #[test]
    fn vllm_names_map_to_the_recorded_series() {
        let (s, naming) = read_sample(VLLM).unwrap();
        assert_eq!(naming, Naming::Vllm);
        assert_eq!(s.requests_running, Some(5.0));
        assert_eq!(s.requests_waiting, Some(2.0));
        // A fraction, not a percentage, despite the name.
        assert_eq!(s.kv_cache_usage, Some(0.375));
        assert_eq!(s.prompt_tokens_total, Some(12_480.0));
        assert_eq!(s.generation_tokens_total, Some(40_960.0));
        assert_eq!(s.resident_memory_bytes, Some(2_147_483_648.0));
        // vLLM exports no bytes: null, never invented from the fraction.
        assert_eq!(s.kv_cache_used_bytes, None);
        assert_eq!(s.kv_cache_capacity_bytes, None);
    }

    #[test]
    fn older_vllm_names_the_usage_gpu_cache() {
        let old = VLLM.replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc");
        assert_eq!(read_sample(&old).unwrap().0.kv_cache_usage, Some(0.375));
    }

    #[test]
    fn prometheus_parse_would_drop_every_vllm_series() {
        // Why not prometheus-parse: its name pattern stops at the `:`, and the line is skipped.
        // Here the same text through this parser keeps all of vLLM's families.
        let families = parse(VLLM).unwrap();
        assert!(families.contains_key("vllm:num_requests_running"));
        assert!(families.contains_key("vllm:kv_cache_usage_perc"));
    }

    #[test]
    fn our_names_in_openmetrics_map_and_the_fraction_is_their_ratio() {
        let (s, naming) = read_sample(COURSE).unwrap();
        assert_eq!(naming, Naming::Course);
        assert_eq!(s.requests_running, Some(3.0));
        assert_eq!(s.requests_waiting, Some(1.0));
        assert_eq!(s.kv_cache_used_bytes, Some(9_437_184.0));
        assert_eq!(s.kv_cache_capacity_bytes, Some(37_748_736.0));
        assert_eq!(s.kv_cache_usage, Some(0.25));
        assert_eq!(s.prompt_tokens_total, Some(640.0));
        assert_eq!(s.generation_tokens_total, Some(2_048.0));
        assert_eq!(s.resident_memory_bytes, Some(734_003_200.0));
        let no_ratio = COURSE
            .lines()
            .filter(|l| !l.contains("course_kv_cache_usage_ratio"))
            .collect::<Vec<_>>()
            .join("\n");
        let (s, _) = read_sample(&no_ratio).unwrap();
        assert_eq!(s.kv_cache_usage, Some(0.25), "used / capacity");
    }

    #[test]
    fn foreign_metrics_record_nothing_but_memory_and_garbage_is_an_error() {
        let text =
            "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 1e6\n\
                    # TYPE http_requests_total counter\nhttp_requests_total 7\n";
        let (s, naming) = read_sample(text).unwrap();
        assert_eq!(naming, Naming::Unknown);
        assert_eq!(s.resident_memory_bytes, Some(1e6));
        assert_eq!(s.requests_running, None);
        assert!(read_sample("<html>not metrics</html>").is_err());
    }

    #[test]
    fn the_metrics_url_is_the_servers_root() {
        assert_eq!(
            metrics_url("http://127.0.0.1:8000/v1/completions").unwrap(),
            "http://127.0.0.1:8000/metrics"
        );
        assert_eq!(metrics_url("http://h:9/").unwrap(), "http://h:9/metrics");
        assert!(metrics_url("not a url").is_err());
    }
}
