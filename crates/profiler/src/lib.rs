//! An op-level profiler for candle programs, shaped like PyTorch's profiler.
//!
//! Instrumented code opens cheap RAII scopes ([`op()`], [`op_shapes`], [`module`], the
//! [`op!`] macro); a [`Profiler`] records them step by step on a [`Schedule`]; the finished
//! [`Profile`] prints a `key_averages().table()`-style table ([`Profile::table`]) and writes a
//! JSON [`Report`], a Chrome trace and a flame graph. Self time is total time minus the
//! direct children's total, as in PyTorch. [`ProfilerLayer`] feeds the same recorder from
//! `tracing` spans, so models that open spans (candle-transformers' `with_tracing`
//! wrappers) can be profiled without editing them. With the machine's measured
//! [`Ceilings`] handed in ([`Profiler::with_ceilings`]), every row that declared its work
//! ([`Scope::with_work`]) gets a [`RowRoofline`], computed in [`roofline`] alone, and a
//! [`Reading`] (memory-bound, compute-bound, slow kernel, launch overhead), given by
//! [`reading`] alone with the caller's thresholds ([`Profiler::with_reading_thresholds`]);
//! [`Scope::with_kernel`] labels which kernel a row ran on, and every row says which budget
//! [`Line`] it is on (declared with the op's name, [`OpName`]).

mod aggregate;
pub mod alloc;
mod chrome_trace;
mod clock;
mod compare;
#[cfg(feature = "cuda")]
pub mod cuda_timing;
mod device_timer;
mod environment;
mod error;
mod flamegraph;
mod line;
pub mod memory;
pub mod reading;
mod recording;
mod report;
pub mod roofline;
mod schedule;
mod scope;
mod session;
mod table;
mod timeline;
pub mod tracing_layer;

pub use aggregate::{KeyAverages, Row, SortBy, TableOptions, View, STEP_ROW};
pub use alloc::{Category, CountingAlloc};
pub use clock::{Clock, ManualClock, MonotonicClock};
pub use compare::compare;
pub use device_timer::{
    CudaTiming, DeviceError, DeviceKind, DeviceTimer, ManualDeviceTimer, Timing,
};
pub use environment::{cpu_model, unoptimised_build, Environment, Target};
pub use error::ProfilerError;
pub use line::{Line, OpName};
pub use memory::{format_bytes, MemorySample, StepMemory};
pub use reading::Reading;
pub use recording::{Event, Profile, Step};
pub use report::{CudaTimeBasis, Report, ReportRow, Totals, SCHEMA};
pub use roofline::{Bound, Ceilings, RowRoofline, TimeBasis};
pub use schedule::{Phase, Schedule};
pub use scope::{format_shapes, is_recording, module, op, op_shapes, Kind, Scope};
pub use session::{Options, Profiler};
pub use table::format_us;
pub use table::ReportTable;
pub use timeline::{Timeline, TimelinePeak, TimelinePoint};
pub use tracing_layer::ProfilerLayer;
