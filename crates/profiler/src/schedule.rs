//! Which steps are measured: PyTorch's `schedule(wait, warmup, active, repeat)`.
//!
//! A cycle is `wait` skipped steps, then `warmup` steps that are recorded and thrown away
//! (so allocator, kernel selection and cache set-up happen under the profiler's own
//! overhead but are not counted), then `active` steps that are kept. `repeat` cycles run;
//! `repeat == 0` repeats forever.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub wait: usize,
    pub warmup: usize,
    pub active: usize,
    pub repeat: usize,
}

/// What the profiler does during one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not recorded at all.
    Wait,
    /// Recorded (so its overhead is paid) and discarded.
    Warmup,
    /// Recorded and kept.
    Active,
    /// The schedule is over: nothing more is recorded.
    Done,
}

impl Default for Schedule {
    /// Every step active.
    fn default() -> Self {
        Self {
            wait: 0,
            warmup: 0,
            active: 1,
            repeat: 0,
        }
    }
}

impl Schedule {
    pub fn new(wait: usize, warmup: usize, active: usize, repeat: usize) -> Self {
        Self {
            wait,
            warmup,
            active,
            repeat,
        }
    }

    /// The phase of step `step` (counting from 0).
    pub fn phase(&self, step: usize) -> Phase {
        let cycle = self.wait + self.warmup + self.active;
        if self.active == 0 {
            return Phase::Done;
        }
        if self.repeat > 0 && step >= cycle * self.repeat {
            return Phase::Done;
        }
        let pos = step % cycle;
        if pos < self.wait {
            Phase::Wait
        } else if pos < self.wait + self.warmup {
            Phase::Warmup
        } else {
            Phase::Active
        }
    }

    /// How many steps a complete run of the schedule takes, or `None` if it repeats forever.
    pub fn total_steps(&self) -> Option<usize> {
        (self.repeat > 0).then(|| (self.wait + self.warmup + self.active) * self.repeat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_follow_wait_warmup_active_repeat() {
        let s = Schedule::new(1, 2, 2, 2);
        let phases: Vec<Phase> = (0..11).map(|i| s.phase(i)).collect();
        use Phase::*;
        assert_eq!(
            phases,
            [Wait, Warmup, Warmup, Active, Active, Wait, Warmup, Warmup, Active, Active, Done]
        );
        assert_eq!(s.total_steps(), Some(10));
    }

    #[test]
    fn default_keeps_every_step() {
        let s = Schedule::default();
        assert!((0..50).all(|i| s.phase(i) == Phase::Active));
        assert_eq!(s.total_steps(), None);
    }
}
