//! CUDA device timing on candle's stream (feature `cuda`).
//!
//! Host clocks around asynchronous kernel launches measure the launch, not the kernel. Two
//! honest alternatives, chosen with [`CudaTiming`]:
//!
//! * **events** (default): a timing-enabled CUDA event is recorded on candle's stream at
//!   every scope boundary. Recording is asynchronous, so the program runs as it would
//!   unprofiled; after one synchronise at the end of the step, each event's time relative
//!   to the step's first event becomes the scope's device start or end. Events are pooled
//!   and re-recorded step after step.
//! * **sync**: the stream is synchronised at every scope boundary and the host clock read
//!   after it. Each op then waits for the GPU, so host and device times agree, and the
//!   program is slower by the lost overlap: the lesson is how much the host clock alone
//!   would have misattributed.
//!
//! With the `nvtx` feature each scope also pushes an NVTX range of the same name, so Nsight
//! Systems shows the profiler's ops on its timeline.

use std::sync::Arc;
use std::time::Instant;

use candle_core::cuda_backend::cudarc::driver::{
    sys::CUevent_flags, CudaEvent, CudaStream, DriverError,
};
use candle_core::Device;

use crate::device_timer::{CudaTiming, DeviceError, DeviceTimer, Timing};

/// A [`DeviceTimer`] on the stream candle launches its kernels on.
pub struct CudaTimer {
    stream: Arc<CudaStream>,
    mode: CudaTiming,
    /// Event pool; the first `used` were recorded this step.
    events: Vec<CudaEvent>,
    used: usize,
    /// Sync mode: host time after each synchronise.
    host_origin: Instant,
    host_marks: Vec<u64>,
}

fn device_error(what: &str, e: DriverError) -> DeviceError {
    DeviceError(format!("CUDA {what} failed: {e}"))
}

impl CudaTimer {
    /// Time scopes on `device`'s stream. Fails when `device` is not a CUDA device.
    pub fn new(device: &Device, mode: CudaTiming) -> candle_core::Result<Self> {
        let stream = device.as_cuda_device()?.cuda_stream();
        Ok(CudaTimer {
            stream,
            mode,
            events: Vec::new(),
            used: 0,
            host_origin: Instant::now(),
            host_marks: Vec::new(),
        })
    }

    fn record_event(&mut self) -> Result<u32, DeviceError> {
        if self.used == self.events.len() {
            let event = self
                .stream
                .context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| device_error("event creation", e))?;
            self.events.push(event);
        }
        self.events[self.used]
            .record(&self.stream)
            .map_err(|e| device_error("event record", e))?;
        self.used += 1;
        Ok((self.used - 1) as u32)
    }

    fn sync_mark(&mut self) -> Result<u32, DeviceError> {
        self.stream
            .synchronize()
            .map_err(|e| device_error("stream synchronise", e))?;
        self.host_marks
            .push(self.host_origin.elapsed().as_nanos() as u64);
        Ok((self.host_marks.len() - 1) as u32)
    }
}

impl DeviceTimer for CudaTimer {
    fn timing(&self) -> Timing {
        self.mode.timing()
    }

    fn begin_step(&mut self) -> Result<(), DeviceError> {
        self.used = 0;
        self.host_marks.clear();
        Ok(())
    }

    fn mark(&mut self) -> Result<u32, DeviceError> {
        match self.mode {
            CudaTiming::Events => self.record_event(),
            CudaTiming::Sync => self.sync_mark(),
        }
    }

    fn finish_step(&mut self) -> Result<Vec<u64>, DeviceError> {
        match self.mode {
            CudaTiming::Events => {
                // The one synchronise of the step; afterwards every event has completed.
                self.stream
                    .synchronize()
                    .map_err(|e| device_error("stream synchronise", e))?;
                let Some(first) = self.events.first() else {
                    return Ok(Vec::new());
                };
                self.events[..self.used]
                    .iter()
                    .map(|e| {
                        let ms = first
                            .elapsed_ms(e)
                            .map_err(|err| device_error("event elapsed time", err))?;
                        Ok((f64::from(ms) * 1e6).max(0.0) as u64)
                    })
                    .collect()
            }
            CudaTiming::Sync => {
                let first = self.host_marks.first().copied().unwrap_or(0);
                Ok(self.host_marks.iter().map(|t| t - first).collect())
            }
        }
    }

    #[cfg(feature = "nvtx")]
    fn push_range(&mut self, name: &'static str) {
        cudarc::nvtx::result::range_push(name);
    }

    #[cfg(feature = "nvtx")]
    fn pop_range(&mut self) {
        cudarc::nvtx::result::range_pop();
    }
}
