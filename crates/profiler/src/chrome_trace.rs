//! A Chrome trace (the JSON "Trace Event Format") that Perfetto and `chrome://tracing` open:
//! one complete event ("ph": "X") per step and per scope on the host thread and, when device
//! times were recorded, the same ranges on a "CUDA stream" track. With memory recorded,
//! counter events ("ph": "C") at every scope boundary: "live bytes" split by category
//! (weights, KV cache, activations, temporaries; Perfetto stacks them in one track under the
//! op rows) and "peak since previous boundary", so a peak that rose and fell inside one op
//! still shows.

use std::path::Path;

use serde_json::{json, Value};

use crate::alloc::Category;
use crate::error::ProfilerError;
use crate::recording::{Event, Profile};
use crate::scope::Kind;

const PID: u32 = 1;
const HOST_TID: u32 = 1;
const DEVICE_TID: u32 = 2;

fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn category(kind: Kind) -> &'static str {
    match kind {
        Kind::Op => "op",
        Kind::Module => "module",
    }
}

fn args(e: &Event) -> Value {
    let mut args = serde_json::Map::new();
    if let Some(s) = &e.shapes {
        args.insert("input_shapes".into(), json!(s));
    }
    if let Some(f) = e.flops {
        args.insert("flops".into(), json!(f));
    }
    if let Some(b) = e.bytes {
        args.insert("bytes".into(), json!(b));
    }
    if let Some(d) = e.dtype {
        args.insert("dtype".into(), json!(d));
    }
    if let Some(k) = e.kernel {
        args.insert("kernel".into(), json!(k));
    }
    if let Some(m) = e.memory {
        args.insert("cpu_mem_bytes".into(), json!(m.net()));
        args.insert("allocs".into(), json!(m.allocs));
    }
    Value::Object(args)
}

impl Profile {
    /// The trace as a JSON value. Timestamps are microseconds from the first active step.
    pub fn chrome_trace_json(&self) -> Value {
        let origin = self.steps.first().map_or(0, |s| s.start_ns);
        let mut events = vec![
            json!({"name": "process_name", "ph": "M", "pid": PID, "args": {"name": "profiler"}}),
            json!({"name": "thread_name", "ph": "M", "pid": PID, "tid": HOST_TID, "args": {"name": "host"}}),
        ];
        if self.has_device_times() {
            events.push(
                json!({"name": "thread_name", "ph": "M", "pid": PID, "tid": DEVICE_TID,
                               "args": {"name": "CUDA stream"}}),
            );
        }
        for step in &self.steps {
            let name = format!("ProfilerStep#{}", step.number);
            let host_start = step.start_ns - origin;
            events.push(
                json!({"name": name, "cat": "step", "ph": "X", "pid": PID, "tid": HOST_TID,
                               "ts": us(host_start), "dur": us(step.wall_ns())}),
            );
            for e in &step.events {
                events.push(json!({"name": e.name, "cat": category(e.kind), "ph": "X", "pid": PID,
                                   "tid": HOST_TID, "ts": us(e.start_ns - origin), "dur": us(e.host_ns()),
                                   "args": args(e)}));
            }
            if let Some(m) = &step.memory {
                for sample in &m.samples {
                    let ts = us(sample.t_ns.saturating_sub(origin));
                    let mut by = serde_json::Map::new();
                    for (c, bytes) in Category::ALL.iter().zip(sample.by_category) {
                        by.insert(c.as_str().into(), json!(bytes));
                    }
                    events.push(
                        json!({"name": "live bytes", "cat": "memory", "ph": "C", "pid": PID,
                                       "ts": ts, "args": by}),
                    );
                    events.push(
                        json!({"name": "peak since previous boundary", "cat": "memory",
                                       "ph": "C", "pid": PID, "ts": ts,
                                       "args": {"bytes": sample.peak_since_previous}}),
                    );
                }
            }
            // The device clock has its own origin: its track starts where the host step does.
            if let Some(device_ns) = step.device_ns {
                events.push(
                    json!({"name": name, "cat": "step", "ph": "X", "pid": PID, "tid": DEVICE_TID,
                                   "ts": us(host_start), "dur": us(device_ns)}),
                );
                for e in &step.events {
                    if let Some((s, t)) = e.device_ns {
                        events.push(
                            json!({"name": e.name, "cat": category(e.kind), "ph": "X", "pid": PID,
                                           "tid": DEVICE_TID, "ts": us(host_start + s),
                                           "dur": us(t.saturating_sub(s)), "args": args(e)}),
                        );
                    }
                }
            }
        }
        json!({"traceEvents": events, "displayTimeUnit": "ms"})
    }

    /// Write the Chrome trace to `path` (open it in <https://ui.perfetto.dev>).
    pub fn chrome_trace(&self, path: impl AsRef<Path>) -> Result<(), ProfilerError> {
        let path = path.as_ref();
        let text = serde_json::to_string(&self.chrome_trace_json()).unwrap_or_default();
        std::fs::write(path, text).map_err(|source| ProfilerError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}
