//! The progress bar, drawn from a thread of its own.
//!
//! indicatif draws on the thread that moves the bar (up to 20 times a second). Moved from the
//! runtime, every redraw — formatting plus a write to the terminal — would stall the requests in
//! flight on that thread and show up in their latencies. So the runtime only bumps a counter, and
//! this thread copies it into the bar ten times a second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::{Bound, LoadConfig};

const REDRAW: Duration = Duration::from_millis(100);

pub(super) struct Progress {
    done: Arc<AtomicU64>,
    /// Dropping it tells the drawing thread to clear the bar and stop.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Start drawing, or do nothing when `config.progress` is off.
    pub(super) fn start(config: &LoadConfig) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        if !config.progress {
            return Progress {
                done,
                stop: None,
                thread: None,
            };
        }
        let bar = bar(config.bound);
        let (stop, stopped) = mpsc::channel::<()>();
        let count = done.clone();
        let thread = std::thread::Builder::new()
            .name("bench-progress".into())
            .spawn(move || loop {
                bar.set_position(count.load(Ordering::Relaxed));
                match stopped.recv_timeout(REDRAW) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => break bar.finish_and_clear(),
                }
            })
            .ok();
        Progress {
            done,
            stop: Some(stop),
            thread,
        }
    }

    /// One request finished: a relaxed atomic add, nothing drawn here.
    pub(super) fn done_one(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Clear the bar and wait for its thread.
    pub(super) fn finish(mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn bar(bound: Bound) -> ProgressBar {
    match bound {
        Bound::Requests(n) => ProgressBar::new(n as u64).with_style(
            ProgressStyle::with_template(
                "{bar:40} {pos}/{len} requests  {elapsed_precise} (eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        Bound::DurationS(_) => {
            let bar = ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {pos} requests done  {elapsed_precise}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        }
    }
}
