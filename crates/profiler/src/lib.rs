//! An op-level profiler for candle programs, shaped like PyTorch's profiler.
//!
//! Instrumented code opens cheap RAII scopes ([`op`], [`op_shapes`], [`module`], the
//! [`op!`] macro); a [`Profiler`] records them step by step on a [`Schedule`]; the finished
//! [`Profile`] prints a `key_averages().table()`-style table and writes a JSON report, a
//! Chrome trace and a flame graph. Self time is total time minus the direct children's
//! total, as in PyTorch.

mod clock;
mod device;
mod environment;
mod profile;
mod profiler;
mod schedule;
mod scope;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use device::{DeviceError, DeviceKind, DeviceTimer, ManualDeviceTimer, Timing};
pub use environment::{unoptimised_build, Environment};
pub use profile::{Event, Profile, Step};
pub use profiler::{Options, Profiler};
pub use schedule::{Phase, Schedule};
pub use scope::{format_shapes, is_recording, module, op, op_shapes, Kind, Scope};
