//! The roofline of a row: what the device's measured ceilings allow at the row's arithmetic
//! intensity, and how close the row came to it.
//!
//! The profiler does not measure ceilings: the caller measures them on its own machine with
//! its own kernels and hands them in ([`crate::Profiler::with_ceilings`]). This module owns
//! the one computation every table, report and grader reads:
//!
//! ```text
//! intensity             = flops / bytes                         FLOP per byte
//! roofline GFLOP/s      = min(peak_gflops, mem_read_gbps × intensity)
//! % of roofline         = 100 × achieved GFLOP/s / roofline GFLOP/s
//! % of memory roofline  = 100 × achieved GB/s / mem_read_gbps
//! bound                 = memory when mem_read_gbps × intensity < peak_gflops, else compute
//! ```
//!
//! Rates are taken over the row's total time: the CPU total on a run without device times,
//! the device total on a CUDA run. On CUDA that total is stream time (see [`TimeBasis`]).

/// The file's types (report.json's `ceilings` and each row's `roofline`), defined in the
/// `formats` crate; this module computes them.
pub use formats::report::{Bound, Ceilings, RowRoofline, TimeBasis};

/// Achieved rate in units of 1e9 per second: `count` over `time_us` microseconds. `None`
/// without a count or without time. The table's GFLOP/s and GB/s columns use this too.
pub fn giga_per_second(count: Option<u64>, time_us: f64) -> Option<f64> {
    match count {
        Some(c) if time_us > 0.0 => Some(c as f64 / (time_us * 1e3)),
        _ => None,
    }
}

/// The roofline of a row that did `flops` and moved `bytes` in `time_us` (its total time on
/// `basis`), under `ceilings`.
///
/// `None` where a roofline means nothing: no time, no bytes (the intensity is unbounded,
/// and JSON has no infinity), no work at all, or ceilings that are not positive.
pub fn row_roofline(
    flops: u64,
    bytes: u64,
    time_us: f64,
    basis: TimeBasis,
    ceilings: &Ceilings,
) -> Option<RowRoofline> {
    let (bw, peak) = (ceilings.mem_read_gbps, ceilings.peak_gflops);
    if !(time_us > 0.0 && bw > 0.0 && peak > 0.0 && bw.is_finite() && peak.is_finite())
        || bytes == 0
    {
        return None;
    }
    let gflops_per_s = giga_per_second(Some(flops), time_us)?;
    let gbytes_per_s = giga_per_second(Some(bytes), time_us)?;
    let intensity = flops as f64 / bytes as f64;
    let memory_roof = bw * intensity;
    let bound = if memory_roof < peak {
        Bound::Memory
    } else {
        Bound::Compute
    };
    let roofline_gflops_per_s = memory_roof.min(peak);
    let pct_of_memory_roofline = 100.0 * gbytes_per_s / bw;
    // On the memory side achieved / (bw × intensity) is exactly achieved GB/s / bw; taking
    // it that way keeps it defined for rows that only move data (no flops, a roof of 0).
    let pct_of_roofline = match bound {
        Bound::Memory => pct_of_memory_roofline,
        Bound::Compute => 100.0 * gflops_per_s / peak,
    };
    Some(RowRoofline {
        time_basis: basis,
        gflops_per_s,
        gbytes_per_s,
        intensity,
        roofline_gflops_per_s,
        pct_of_roofline,
        pct_of_memory_roofline,
        bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20 GB/s and 400 GFLOP/s: the ridge is at 20 FLOP/B.
    fn ceilings() -> Ceilings {
        Ceilings {
            device: "test cpu".into(),
            threads: 2,
            kernels: "avx512".into(),
            build: "release".into(),
            mem_read_gbps: 20.0,
            peak_gflops: 400.0,
            bandwidth_how: "sum of a 1 GiB buffer".into(),
            peak_how: "1024³ matmul, packed-avx512".into(),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn a_low_intensity_row_is_memory_bound_and_measured_against_bandwidth() {
        // 1e6 FLOP, 4e6 bytes in 1 ms: 1 GFLOP/s, 4 GB/s, 0.25 FLOP/B.
        let r = row_roofline(1_000_000, 4_000_000, 1_000.0, TimeBasis::Cpu, &ceilings()).unwrap();
        assert!(
            close(r.gflops_per_s, 1.0) && close(r.gbytes_per_s, 4.0),
            "{r:?}"
        );
        assert!(close(r.intensity, 0.25));
        assert_eq!(r.bound, Bound::Memory);
        assert!(close(r.roofline_gflops_per_s, 5.0), "20 GB/s × 0.25 FLOP/B");
        assert!(close(r.pct_of_roofline, 20.0), "1 of 5 GFLOP/s");
        assert!(close(r.pct_of_memory_roofline, 20.0), "4 of 20 GB/s");
        assert_eq!(r.time_basis, TimeBasis::Cpu);
    }

    #[test]
    fn a_high_intensity_row_is_compute_bound_and_measured_against_peak() {
        // 2e8 FLOP, 1e6 bytes in 1 ms: 200 GFLOP/s, 1 GB/s, 200 FLOP/B.
        let r = row_roofline(
            200_000_000,
            1_000_000,
            1_000.0,
            TimeBasis::CudaStream,
            &ceilings(),
        )
        .unwrap();
        assert_eq!(r.bound, Bound::Compute);
        assert!(close(r.roofline_gflops_per_s, 400.0));
        assert!(close(r.pct_of_roofline, 50.0));
        assert!(close(r.pct_of_memory_roofline, 5.0));
        assert_eq!(r.time_basis, TimeBasis::CudaStream);
    }

    #[test]
    fn at_the_ridge_both_roofs_meet_and_the_row_counts_as_compute_bound() {
        let c = ceilings();
        assert!(close(c.ridge_intensity(), 20.0));
        // 20 FLOP/B exactly: 2e7 FLOP over 1e6 bytes.
        let r = row_roofline(20_000_000, 1_000_000, 1_000.0, TimeBasis::Cpu, &c).unwrap();
        assert!(close(r.roofline_gflops_per_s, 400.0));
        assert_eq!(r.bound, Bound::Compute);
        // Just below the ridge the memory roof is the lower one.
        let below = row_roofline(19_999_999, 1_000_000, 1_000.0, TimeBasis::Cpu, &c).unwrap();
        assert_eq!(below.bound, Bound::Memory);
        assert!(below.roofline_gflops_per_s < 400.0);
    }

    #[test]
    fn a_row_that_only_moves_data_has_a_roof_of_zero_and_a_defined_percentage() {
        // A copy: no flops, 2e6 bytes in 1 ms = 2 GB/s, 10% of the bandwidth.
        let r = row_roofline(0, 2_000_000, 1_000.0, TimeBasis::Cpu, &ceilings()).unwrap();
        assert_eq!(r.bound, Bound::Memory);
        assert_eq!(r.roofline_gflops_per_s, 0.0);
        assert!(
            close(r.pct_of_roofline, 10.0) && close(r.pct_of_memory_roofline, 10.0),
            "{r:?}"
        );
    }

    #[test]
    fn no_time_no_bytes_or_no_ceilings_give_no_roofline() {
        let c = ceilings();
        assert_eq!(
            row_roofline(1_000, 1_000, 0.0, TimeBasis::Cpu, &c),
            None,
            "zero time"
        );
        assert_eq!(
            row_roofline(1_000, 0, 1.0, TimeBasis::Cpu, &c),
            None,
            "zero bytes"
        );
        assert_eq!(row_roofline(0, 0, 1.0, TimeBasis::Cpu, &c), None, "no work");
        let unmeasured = Ceilings {
            mem_read_gbps: 0.0,
            ..c.clone()
        };
        assert_eq!(
            row_roofline(1_000, 1_000, 1.0, TimeBasis::Cpu, &unmeasured),
            None
        );
        let nan = Ceilings {
            peak_gflops: f64::NAN,
            ..c
        };
        assert_eq!(row_roofline(1_000, 1_000, 1.0, TimeBasis::Cpu, &nan), None);
    }

    #[test]
    fn rates_need_a_count_and_a_time() {
        assert_eq!(giga_per_second(Some(3_000), 1.0), Some(3.0));
        assert_eq!(giga_per_second(None, 1.0), None);
        assert_eq!(giga_per_second(Some(3_000), 0.0), None);
    }

    #[test]
    fn ceilings_and_rooflines_serialise_with_the_contract_names() {
        let v = serde_json::to_value(ceilings()).unwrap();
        for field in [
            "device",
            "threads",
            "kernels",
            "build",
            "mem_read_gbps",
            "peak_gflops",
            "bandwidth_how",
            "peak_how",
        ] {
            assert!(v.get(field).is_some(), "ceilings field {field}");
        }
        let r = row_roofline(
            1_000_000,
            4_000_000,
            1_000.0,
            TimeBasis::CudaStream,
            &ceilings(),
        )
        .unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["time_basis"], "cuda-stream");
        assert_eq!(v["bound"], "memory");
        for field in [
            "gflops_per_s",
            "gbytes_per_s",
            "intensity",
            "roofline_gflops_per_s",
            "pct_of_roofline",
            "pct_of_memory_roofline",
        ] {
            assert!(v[field].is_f64(), "roofline field {field}");
        }
    }
}
