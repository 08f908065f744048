//! The contract with crates/profiler: a report.json written by the real profiler, on a CPU
//! run and on a (simulated) CUDA run, in every sort order, passes the grader's consistency
//! checks, and the grader ranks it by the device's self time.

use course_model::results::profile_report::ProfileReport;
use profiler::{
    DeviceKind, ManualClock, ManualDeviceTimer, Options, Profiler, Schedule, SortBy, TableOptions,
};

/// A toy forward whose host and device times differ, so the two rankings differ.
fn forward(host: &ManualClock, device: &ManualClock) {
    let tick = |h: u64, d: u64| {
        host.advance_us(h);
        device.advance_us(d);
    };
    tick(3, 1);
    {
        let _b = profiler::module("block");
        profiler::op!("matmul", tick(40, 60));
        profiler::op!("gelu", tick(30, 5));
        profiler::op!("softmax", tick(8, 9));
        profiler::op!("add", tick(4, 2));
    }
}

fn report_json(device: DeviceKind, sort_by: SortBy) -> String {
    let host = ManualClock::new();
    let dev = ManualClock::new();
    let options = Options {
        schedule: Schedule::new(0, 1, 3, 1),
        device,
        threads: Some(2),
        ..Options::default()
    };
    let mut prof = Profiler::new(options).with_clock(host.clone());
    if device == DeviceKind::Cuda {
        prof = prof.with_device_timer(ManualDeviceTimer::new(dev.clone()));
    }
    for _ in 0..4 {
        prof.step(|| forward(&host, &dev));
    }
    let profile = prof.finish();
    profile
        .report_with(TableOptions {
            sort_by,
            ..TableOptions::default()
        })
        .to_json()
}

#[test]
fn a_real_cpu_report_passes_and_ranks_by_self_cpu() {
    for sort_by in SortBy::ALL {
        let text = report_json(DeviceKind::Cpu, sort_by);
        let report = ProfileReport::parse(&text, "report.json")
            .unwrap_or_else(|p| panic!("{sort_by:?}: {p}\n{text}"));
        assert_eq!(report.device, DeviceKind::Cpu);
        let names: Vec<&str> = report.top(3).iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["matmul", "gelu", "softmax"], "{sort_by:?}");
    }
}

#[test]
fn a_real_cuda_report_passes_and_ranks_by_self_cuda() {
    for sort_by in SortBy::ALL {
        let text = report_json(DeviceKind::Cuda, sort_by);
        let report = ProfileReport::parse(&text, "report.json")
            .unwrap_or_else(|p| panic!("{sort_by:?}: {p}\n{text}"));
        assert_eq!(report.device, DeviceKind::Cuda);
        let names: Vec<&str> = report.top(3).iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["matmul", "softmax", "gelu"], "{sort_by:?}");
    }
}

/// 20 GB/s and 400 GFLOP/s, 2 threads: the ceilings both roofline tests record.
fn test_ceilings() -> profiler::Ceilings {
    profiler::Ceilings {
        device: "test cpu".into(),
        threads: 2,
        kernels: "avx512".into(),
        build: "release".into(),
        mem_read_gbps: 20.0,
        peak_gflops: 400.0,
        bandwidth_how: "test".into(),
        peak_how: "test".into(),
    }
}

/// With ceilings, declared work and kernel labels: the grader reads the same roofline columns,
/// kernels and ceilings the profiler wrote, and its consistency checks accept them.
#[test]
fn a_real_report_with_ceilings_carries_kernels_and_rooflines() {
    let host = ManualClock::new();
    let ceilings = test_ceilings();
    let options = Options {
        schedule: Schedule::new(0, 1, 3, 1),
        threads: Some(2),
        ..Options::default()
    };
    let mut prof = Profiler::new(options)
        .with_clock(host.clone())
        .with_ceilings(ceilings);
    for _ in 0..4 {
        prof.step(|| {
            {
                let _s = profiler::op("matmul")
                    .with_work(8_000_000, 2_000_000)
                    .with_kernel("packed-avx512");
                host.advance_us(400);
            }
            {
                let _s = profiler::op("gelu")
                    .with_work(240_000, 196_608)
                    .with_kernel("candle");
                host.advance_us(300);
            }
            profiler::op!("mask", host.advance_us(20));
        });
    }
    let text = prof.finish().report_with(TableOptions::default()).to_json();
    let report =
        ProfileReport::parse(&text, "report.json").unwrap_or_else(|p| panic!("{p}\n{text}"));
    let ceilings = report.ceilings.as_ref().expect("ceilings");
    assert_eq!(ceilings.mem_read_gbps, 20.0);
    let gelu = report.find("gelu").unwrap().1;
    assert_eq!(gelu.kernel.as_deref(), Some("candle"));
    let roofline = gelu.roofline.as_ref().expect("gelu declared work");
    // 196 608 bytes in 300 µs: 0.655 GB/s, 3.3% of 20 GB/s.
    assert!(
        (roofline.gbytes_per_s - 0.196_608 / 0.3).abs() < 1e-6,
        "{roofline:?}"
    );
    assert!((roofline.pct_of_memory_roofline - 100.0 * roofline.gbytes_per_s / 20.0).abs() < 1e-9);
    assert!(
        report.find("mask").unwrap().1.roofline.is_none(),
        "no work, no roofline"
    );
    // The reading the table printed, read back as written: gelu far below its memory roofline
    // is a slow kernel, though memory is its lower roof; mask, without work, has none.
    assert_eq!(gelu.reading, Some(profiler::Reading::SlowKernel));
    assert_eq!(roofline.bound.as_str(), "memory");
    assert_eq!(report.find("mask").unwrap().1.reading, None);
    assert_eq!(
        report.reading_thresholds,
        Some(profiler::reading::Thresholds::DEFAULT)
    );
}

/// A profile read with a key's own thresholds: the report records them, and the grader's
/// check of each reading uses them, not the defaults.
#[test]
fn a_report_read_with_other_thresholds_passes_with_its_own() {
    let host = ManualClock::new();
    let ceilings = test_ceilings();
    // 10 µs calls at 3% of the bandwidth: launch overhead by default, a slow kernel below a
    // 5 µs launch line.
    let strict = profiler::reading::Thresholds {
        launch_overhead_below_us: 5.0,
        ..profiler::reading::Thresholds::DEFAULT
    };
    let options = Options {
        schedule: Schedule::new(0, 0, 1, 1),
        threads: Some(2),
        ..Options::default()
    };
    let mut prof = Profiler::new(options)
        .with_clock(host.clone())
        .with_ceilings(ceilings)
        .with_reading_thresholds(strict);
    prof.step(|| {
        let _s = profiler::op("softmax")
            .with_work(10_000, 6_000)
            .with_kernel("candle");
        host.advance_us(10);
    });
    let text = prof.finish().report().to_json();
    let report =
        ProfileReport::parse(&text, "report.json").unwrap_or_else(|p| panic!("{p}\n{text}"));
    assert_eq!(report.reading_thresholds, Some(strict));
    assert_eq!(
        report.find("softmax").unwrap().1.reading,
        Some(profiler::Reading::SlowKernel)
    );
}
