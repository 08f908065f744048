//! The reading of a row: what its roofline columns say holds it back, in one word the table
//! prints next to them (and `report.json` stores). One rule, with the caller's thresholds;
//! the course's grader judges a learner's plan with the same three tests and its answer key's
//! values ([`Thresholds`]), so the table and the grade cannot disagree about a row.
//!
//! `bound` (the lower roof at the row's intensity, [`crate::roofline`]) says where a row's
//! roofline is, not how close the row came to it: a `gelu` at 1% of its roofline is left of
//! the ridge, so its `bound` is memory, yet memory is not what holds it back. The reading is
//! taken from how close it came. Three tests, each of one cause:
//!
//! ```text
//! memory traffic   shown    above memory_above_pct         of the memory roofline (pct_of_memory_roofline)
//!                  refuted  below not_memory_below_pct
//! slow kernel      shown    below slow_kernel_below_pct    of the row's roofline (pct_of_roofline)
//!                  refuted  above near_roofline_above_pct
//! launch overhead  shown    below launch_overhead_below_us a call (self time in the run's column / calls)
//!                  refuted  at or above it
//! ```
//!
//! and the first of these that applies is the reading:
//!
//! 1. **compute-bound**: the compute roof is the lower one and slow kernel is refuted (the row
//!    runs near the peak its work allows);
//! 2. **memory-bound**: memory traffic is shown (the row moves its bytes at more than
//!    `memory_above_pct` of the bandwidth);
//! 3. **launch overhead**: launch overhead is shown (calls so short that the fixed cost of
//!    issuing one is much of their time: a kernel launch on a GPU, candle's per-op dispatch on
//!    a CPU, which has no launches but still builds and dispatches every op);
//! 4. **slow kernel**: slow kernel is shown (the row is far below what the hardware allows for
//!    its work, and its calls are long enough that the kernel itself is the time);
//! 5. between the thresholds (nothing shown): the lower roof, **compute-bound** or
//!    **memory-bound**, unless memory traffic is refuted, then **slow kernel**. The figures
//!    settle nothing there: on the memory side memory traffic and a slow kernel are both open
//!    (the grader accepts either, flagged for review), on the compute side a slow kernel is.
//!
//! So a row below `not_memory_below_pct` of its memory roofline never reads memory-bound. A
//! row without a roofline (it declared no work, or the run measured no ceilings) has no
//! reading: nothing measured says what holds it back.

/// The file's words (report.json's `reading_thresholds` and each row's `reading`), defined in
/// the `formats` crate; this module holds the rule that gives them.
pub use formats::report::{Reading, Thresholds};

use crate::roofline::{Bound, RowRoofline};

/// What a row's figures say of one cause of its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The figures show it.
    Shown,
    /// Between the thresholds: the figures neither show nor refute it.
    Open,
    /// The figures rule it out.
    Refuted,
}

/// Is the row's time moving bytes? From its % of the memory roofline.
pub fn memory_traffic(pct_of_memory_roofline: f64, t: &Thresholds) -> Evidence {
    if pct_of_memory_roofline < t.not_memory_below_pct {
        Evidence::Refuted
    } else if pct_of_memory_roofline > t.memory_above_pct {
        Evidence::Shown
    } else {
        Evidence::Open
    }
}

/// Is the row's kernel far from what the hardware allows for its work? From its % of its
/// roofline.
pub fn slow_kernel(pct_of_roofline: f64, t: &Thresholds) -> Evidence {
    if pct_of_roofline < t.slow_kernel_below_pct {
        Evidence::Shown
    } else if pct_of_roofline > t.near_roofline_above_pct {
        Evidence::Refuted
    } else {
        Evidence::Open
    }
}

/// Is the fixed cost of issuing each call much of the row's time? From its self time a call.
pub fn launch_overhead(us_per_call: f64, t: &Thresholds) -> Evidence {
    if us_per_call < t.launch_overhead_below_us {
        Evidence::Shown
    } else {
        Evidence::Refuted
    }
}

/// The figures the rule reads off a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub pct_of_roofline: f64,
    pub pct_of_memory_roofline: f64,
    /// The lower roof at the row's intensity.
    pub bound: Bound,
    /// Self time a call in the run's column (CUDA on a CUDA run, else CPU), µs; None when the
    /// row records no calls.
    pub us_per_call: Option<f64>,
}

impl Figures {
    pub fn of(roofline: &RowRoofline, us_per_call: Option<f64>) -> Figures {
        Figures {
            pct_of_roofline: roofline.pct_of_roofline,
            pct_of_memory_roofline: roofline.pct_of_memory_roofline,
            bound: roofline.bound,
            us_per_call,
        }
    }
}

/// The reading of a row with these figures (the order of the module docs).
pub fn read(f: &Figures, t: &Thresholds) -> Reading {
    let memory = memory_traffic(f.pct_of_memory_roofline, t);
    let kernel = slow_kernel(f.pct_of_roofline, t);
    let launch = f.us_per_call.map(|us| launch_overhead(us, t));
    if f.bound == Bound::Compute && kernel == Evidence::Refuted {
        Reading::ComputeBound
    } else if memory == Evidence::Shown {
        Reading::MemoryBound
    } else if launch == Some(Evidence::Shown) {
        Reading::LaunchOverhead
    } else if kernel == Evidence::Shown {
        Reading::SlowKernel
    } else if f.bound == Bound::Compute {
        Reading::ComputeBound
    } else if memory == Evidence::Refuted {
        Reading::SlowKernel
    } else {
        Reading::MemoryBound
    }
}

/// The reading of a row, or None without a roofline.
pub fn read_row(
    roofline: Option<&RowRoofline>,
    us_per_call: Option<f64>,
    t: &Thresholds,
) -> Option<Reading> {
    roofline.map(|r| read(&Figures::of(r, us_per_call), t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(
        pct_of_roofline: f64,
        pct_of_memory_roofline: f64,
        bound: Bound,
        us_per_call: f64,
    ) -> Reading {
        read(
            &Figures {
                pct_of_roofline,
                pct_of_memory_roofline,
                bound,
                us_per_call: Some(us_per_call),
            },
            &Thresholds::DEFAULT,
        )
    }

    /// A memory-side row: its two percentages are the same number.
    fn memory_side(pct: f64, us_per_call: f64) -> Reading {
        at(pct, pct, Bound::Memory, us_per_call)
    }

    #[test]
    fn a_row_far_below_its_memory_roofline_is_a_slow_kernel_not_memory_bound() {
        // The CPU gelu of exercise 3: 1.1% of its roofline, 348 µs a call.
        assert_eq!(memory_side(1.1, 348.0), Reading::SlowKernel);
        assert_eq!(memory_side(24.9, 348.0), Reading::SlowKernel);
    }

    #[test]
    fn a_row_near_its_memory_roofline_is_memory_bound() {
        assert_eq!(memory_side(61.4, 415.0), Reading::MemoryBound);
        // Above 100% (a tensor that stayed in cache) the bytes still account for the time,
        // however short the calls.
        assert_eq!(memory_side(117.0, 5.5), Reading::MemoryBound);
    }

    #[test]
    fn short_calls_below_the_roofline_are_launch_overhead() {
        // A GPU decode step's element-wise kernel on kilobytes, and a CPU layer_norm dispatched
        // per op: both far from or between the roofs, both a few µs a call.
        assert_eq!(memory_side(0.4, 6.0), Reading::LaunchOverhead);
        assert_eq!(memory_side(35.5, 5.5), Reading::LaunchOverhead);
        // At the threshold a call is long enough to be its own work.
        assert_eq!(memory_side(10.0, 20.0), Reading::SlowKernel);
        // Without a call count nothing says the calls are short.
        let unknown = Figures {
            pct_of_roofline: 10.0,
            pct_of_memory_roofline: 10.0,
            bound: Bound::Memory,
            us_per_call: None,
        };
        assert_eq!(read(&unknown, &Thresholds::DEFAULT), Reading::SlowKernel);
    }

    #[test]
    fn compute_side_rows_read_by_the_peak_and_never_by_bytes_they_do_not_move() {
        // Near the peak; 3% of the bandwidth.
        assert_eq!(at(80.0, 3.0, Bound::Compute, 900.0), Reading::ComputeBound);
        // Far below the peak: the kernel leaves arithmetic on the table.
        assert_eq!(at(10.0, 1.0, Bound::Compute, 900.0), Reading::SlowKernel);
        // Between: the lower roof.
        assert_eq!(at(40.0, 5.0, Bound::Compute, 900.0), Reading::ComputeBound);
    }

    #[test]
    fn between_the_thresholds_a_row_reads_by_its_lower_roof_unless_memory_is_refuted() {
        assert_eq!(memory_side(25.0, 400.0), Reading::MemoryBound);
        assert_eq!(memory_side(50.0, 400.0), Reading::MemoryBound);
        // A key whose slow-kernel line is lower than its memory line leaves a band where memory
        // is refuted and the kernel open: not memory-bound.
        let t = Thresholds {
            slow_kernel_below_pct: 10.0,
            ..Thresholds::DEFAULT
        };
        let f = Figures {
            pct_of_roofline: 20.0,
            pct_of_memory_roofline: 20.0,
            bound: Bound::Memory,
            us_per_call: Some(400.0),
        };
        assert_eq!(read(&f, &t), Reading::SlowKernel);
    }

    #[test]
    fn the_caller_s_thresholds_move_the_lines() {
        let strict = Thresholds {
            memory_above_pct: 70.0,
            near_roofline_above_pct: 70.0,
            ..Thresholds::DEFAULT
        };
        let f = Figures {
            pct_of_roofline: 60.0,
            pct_of_memory_roofline: 60.0,
            bound: Bound::Memory,
            us_per_call: Some(400.0),
        };
        assert_eq!(read(&f, &Thresholds::DEFAULT), Reading::MemoryBound);
        assert_eq!(memory_traffic(60.0, &strict), Evidence::Open);
        let eager = Thresholds {
            launch_overhead_below_us: 500.0,
            ..Thresholds::DEFAULT
        };
        assert_eq!(
            read(
                &Figures {
                    pct_of_roofline: 10.0,
                    pct_of_memory_roofline: 10.0,
                    ..f
                },
                &eager
            ),
            Reading::LaunchOverhead
        );
    }

    #[test]
    fn no_memory_bound_reading_where_memory_traffic_is_refuted_over_a_grid() {
        // Whatever the thresholds (valid ones) and figures, the reading never contradicts the
        // test it stands on.
        let lines: [f64; 5] = [0.0, 10.0, 25.0, 50.0, 80.0];
        for a in lines {
            for b in lines {
                for c in lines {
                    for d in lines {
                        let t = Thresholds {
                            not_memory_below_pct: a.min(b),
                            memory_above_pct: a.max(b),
                            slow_kernel_below_pct: c.min(d),
                            near_roofline_above_pct: c.max(d),
                            launch_overhead_below_us: 20.0,
                        };
                        if t.problem().is_some() {
                            continue;
                        }
                        for pct in [0.5, 10.0, 24.0, 26.0, 49.0, 51.0, 79.0, 81.0, 120.0] {
                            for (bound, memory_pct) in
                                [(Bound::Memory, pct), (Bound::Compute, pct / 3.0)]
                            {
                                for us in [5.0, 400.0] {
                                    let f = Figures {
                                        pct_of_roofline: pct,
                                        pct_of_memory_roofline: memory_pct,
                                        bound,
                                        us_per_call: Some(us),
                                    };
                                    let r = read(&f, &t);
                                    match r {
                                        Reading::MemoryBound => assert_ne!(
                                            memory_traffic(memory_pct, &t),
                                            Evidence::Refuted,
                                            "{f:?} {t:?}"
                                        ),
                                        Reading::SlowKernel => assert_ne!(
                                            slow_kernel(pct, &t),
                                            Evidence::Refuted,
                                            "{f:?} {t:?}"
                                        ),
                                        Reading::LaunchOverhead => {
                                            assert_eq!(launch_overhead(us, &t), Evidence::Shown)
                                        }
                                        Reading::ComputeBound => assert_eq!(bound, Bound::Compute),
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn thresholds_that_contradict_themselves_are_named() {
        assert_eq!(Thresholds::DEFAULT.problem(), None);
        let inverted = Thresholds {
            not_memory_below_pct: 60.0,
            ..Thresholds::DEFAULT
        };
        assert!(inverted
            .problem()
            .unwrap()
            .contains("not_memory_below_pct (60)"));
        let negative = Thresholds {
            launch_overhead_below_us: -1.0,
            ..Thresholds::DEFAULT
        };
        assert!(negative
            .problem()
            .unwrap()
            .starts_with("launch_overhead_below_us is -1"));
        let nan = Thresholds {
            near_roofline_above_pct: f64::NAN,
            ..Thresholds::DEFAULT
        };
        assert!(nan.problem().is_some());
        let crossed = Thresholds {
            slow_kernel_below_pct: 5.0,
            near_roofline_above_pct: 10.0,
            ..Thresholds::DEFAULT
        };
        assert!(crossed
            .problem()
            .unwrap()
            .starts_with("near_roofline_above_pct (10) is below not_memory_below_pct (25)"));
    }

    #[test]
    fn readings_serialise_as_report_json_writes_them() {
        for r in Reading::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
            assert_eq!(
                serde_json::from_value::<Reading>(r.as_str().into()).unwrap(),
                r
            );
        }
        assert_eq!(Reading::SlowKernel.to_string(), "slow kernel");
        let v = serde_json::to_value(Thresholds::DEFAULT).unwrap();
        assert_eq!(v["launch_overhead_below_us"], 20.0);
    }
}
