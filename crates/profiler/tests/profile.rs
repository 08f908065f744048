//! Behaviour of the recorder and aggregation, on a profile whose every duration is known.

mod fixture;

use profiler::reading::Thresholds;
use profiler::{
    Bound, ManualClock, Options, Profiler, Reading, Report, ReportRow, Row, Schedule, SortBy,
    TableOptions, TimeBasis, View, STEP_ROW,
};

fn row<'a>(rows: &'a [Row], name: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

const US: u64 = 1_000;

#[test]
fn op_view_self_time_is_total_minus_direct_children() {
    let p = fixture::profile(false);
    assert_eq!(p.active_steps(), 2);
    assert_eq!(p.steps.iter().map(|s| s.number).collect::<Vec<_>>(), [2, 3]);
    let k = p.key_averages(View::Op, false, SortBy::SelfCpuTimeTotal);
    let r = &k.rows;
    // Totals over two steps.
    assert_eq!(row(r, "matmul").calls, 4);
    assert_eq!(row(r, "matmul").self_cpu_ns, 2 * 55 * US);
    assert_eq!(row(r, "matmul").cpu_total_ns, 2 * 55 * US);
    assert_eq!(row(r, "linear").cpu_total_ns, 2 * 45 * US);
    assert_eq!(row(r, "linear").self_cpu_ns, 2 * US);
    assert_eq!(row(r, "bias_add").self_cpu_ns, 2 * 4 * US);
    assert_eq!(row(r, "softmax").self_cpu_ns, 2 * 8 * US);
    assert_eq!(row(r, "embedding").self_cpu_ns, 2 * 10 * US);
    assert_eq!(row(r, "lm_head").self_cpu_ns, 2 * 12 * US);
    // Modules are transparent: the block's 2 µs outside ops are the step's, with the
    // unscoped 5 + 3.
    assert_eq!(row(r, STEP_ROW).self_cpu_ns, 2 * 10 * US);
    assert_eq!(row(r, STEP_ROW).cpu_total_ns, 2 * 100 * US);
    assert_eq!(row(r, STEP_ROW).calls, 2);
    assert!(r.iter().all(|x| x.name != "block"));
    // Coverage: Σ self = wall, exactly.
    assert_eq!(k.self_cpu_total_ns, 2 * 100 * US);
    assert_eq!(k.wall_ns, 2 * 100 * US);
    assert!((k.scoped_fraction() - 0.9).abs() < 1e-12);
    // Sorted by self CPU time, decreasing.
    let names: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "matmul",
            "lm_head",
            "ProfilerStep*",
            "embedding",
            "softmax",
            "bias_add",
            "linear"
        ]
    );
    assert!(r.iter().all(|x| x.self_device_ns.is_none()));
}

#[test]
fn kernel_labels_are_kept_per_row_distinct_and_sorted() {
    let p = fixture::profile(false);
    let k = p.key_averages(View::Op, false, SortBy::SelfCpuTimeTotal);
    // Two matmul calls per step on two kernels: both labels, sorted, once each.
    assert_eq!(
        row(&k.rows, "matmul").kernel.as_deref(),
        Some("candle-gemm+packed-avx512")
    );
    assert_eq!(row(&k.rows, "bias_add").kernel.as_deref(), Some("avx512"));
    assert_eq!(row(&k.rows, "softmax").kernel, None);
    assert_eq!(row(&k.rows, STEP_ROW).kernel, None);
    let by_shape = p.key_averages(View::Op, true, SortBy::SelfCpuTimeTotal);
    let matmuls: Vec<Option<&str>> = by_shape
        .rows
        .iter()
        .filter(|r| r.name == "matmul")
        .map(|r| r.kernel.as_deref())
        .collect();
    assert_eq!(matmuls, [Some("packed-avx512"), Some("candle-gemm")]);
    // In the module view a module's row holds the kernels of the ops folded into it.
    let m = p.key_averages(View::Module, false, SortBy::SelfCpuTimeTotal);
    assert_eq!(
        row(&m.rows, "block").kernel.as_deref(),
        Some("avx512+candle-gemm+packed-avx512")
    );
    let report = p.report();
    let matmul = report.rows.iter().find(|r| r.name == "matmul").unwrap();
    assert_eq!(matmul.kernel.as_deref(), Some("candle-gemm+packed-avx512"));
}

fn report_row<'a>(report: &'a Report, name: &str, shapes: &str) -> &'a ReportRow {
    report
        .rows
        .iter()
        .find(|r| r.name == name && r.input_shapes.as_deref() == Some(shapes))
        .unwrap_or_else(|| panic!("no row {name} {shapes}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn rows_with_work_get_a_roofline_over_their_total_cpu_time() {
    let p = fixture::profile_with_ceilings(false);
    let report = p.report_with(TableOptions {
        group_by_input_shape: true,
        ..TableOptions::default()
    });
    assert_eq!(report.ceilings.as_ref(), Some(&fixture::ceilings()));
    // The big matmul: 2 × 28,311,552 FLOP and 2 × 7,176,192 bytes in 2 × 40 µs.
    let m = report_row(&report, "matmul", "[[1, 8, 768], [768, 2304]]")
        .roofline
        .as_ref()
        .unwrap();
    assert_eq!(m.time_basis, TimeBasis::Cpu);
    assert!(close(m.gflops_per_s, 56_623_104.0 / 80_000.0), "{m:?}");
    assert!(close(m.gbytes_per_s, 14_352_384.0 / 80_000.0), "{m:?}");
    assert!(close(m.intensity, 56_623_104.0 / 14_352_384.0));
    assert_eq!(
        m.bound,
        Bound::Compute,
        "3.95 FLOP/B is right of the 3.75 ridge"
    );
    assert!(close(m.roofline_gflops_per_s, 750.0));
    assert!(close(m.pct_of_roofline, 100.0 * m.gflops_per_s / 750.0));
    assert!(close(
        m.pct_of_memory_roofline,
        100.0 * m.gbytes_per_s / 200.0
    ));
    // bias_add: 2 × 18,432 FLOP, 2 × 156,672 bytes in 2 × 4 µs.
    let b = report_row(&report, "bias_add", "[[1, 8, 2304], [2304]]")
        .roofline
        .as_ref()
        .unwrap();
    assert_eq!(b.bound, Bound::Memory);
    assert!(close(b.gbytes_per_s, 313_344.0 / 8_000.0));
    assert!(close(b.roofline_gflops_per_s, 200.0 * 36_864.0 / 313_344.0));
    assert!(close(b.pct_of_roofline, b.pct_of_memory_roofline));
    // Rows that declared no work have none, kernel label or not.
    let small = report_row(&report, "matmul", "[[1, 8, 768], [768, 768]]");
    assert_eq!(
        (small.kernel.as_deref(), &small.roofline),
        (Some("candle-gemm"), &None)
    );
    assert!(report
        .rows
        .iter()
        .filter(|r| r.name != "matmul" && r.name != "bias_add")
        .all(|r| r.roofline.is_none()));
}

#[test]
fn every_row_with_a_roofline_has_a_reading_and_no_other_row_has_one() {
    let p = fixture::profile_with_ceilings(false);
    let report = p.report_with(TableOptions {
        group_by_input_shape: true,
        ..TableOptions::default()
    });
    assert_eq!(report.reading_thresholds, Thresholds::DEFAULT);
    // The big matmul at 94% of its compute roof; bias_add at 20% of the bandwidth in 4 µs calls.
    assert_eq!(
        report_row(&report, "matmul", "[[1, 8, 768], [768, 2304]]").reading,
        Some(Reading::ComputeBound)
    );
    assert_eq!(
        report_row(&report, "bias_add", "[[1, 8, 2304], [2304]]").reading,
        Some(Reading::LaunchOverhead)
    );
    for r in &report.rows {
        assert_eq!(r.reading.is_some(), r.roofline.is_some(), "{}", r.name);
    }
    // Without ceilings there is no roofline, so no reading either.
    assert!(fixture::profile(false)
        .report()
        .rows
        .iter()
        .all(|r| r.reading.is_none()));
}

#[test]
fn the_caller_s_thresholds_reach_the_report_and_the_table() {
    // With a launch-overhead line below bias_add's 4 µs a call, its 19.6% of the roofline is a
    // slow kernel; the report records the thresholds it was read with and the footer prints them.
    let strict = Thresholds {
        launch_overhead_below_us: 1.0,
        ..Thresholds::DEFAULT
    };
    let mut p = fixture::profile_with_ceilings(false);
    p.set_reading_thresholds(strict);
    let report = p.report_with(TableOptions {
        group_by_input_shape: true,
        ..TableOptions::default()
    });
    assert_eq!(report.reading_thresholds, strict);
    assert_eq!(
        report_row(&report, "bias_add", "[[1, 8, 2304], [2304]]").reading,
        Some(Reading::SlowKernel)
    );
    let table = p.table(TableOptions::default());
    assert!(
        table.contains("launch overhead (under 1us of self CPU time a call)"),
        "{table}"
    );
    let line = table
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("bias_add"))
        .unwrap();
    assert!(line.trim_end().ends_with("slow kernel"), "{line}");
    // The profiler's builder sets them the same way.
    let built = Profiler::new(Options::default())
        .with_reading_thresholds(strict)
        .finish();
    assert_eq!(built.reading_thresholds, strict);
    assert_eq!(
        Profiler::new(Options::default())
            .finish()
            .reading_thresholds,
        Thresholds::DEFAULT
    );
}

#[test]
fn an_op_far_below_its_memory_roofline_reads_slow_kernel_not_memory_bound() {
    // A gelu on exercise 3's shapes, as slow as candle's scalar tanh on a CPU: 8 × 3072 values in,
    // the same out, 348 µs a call, against 28.2 GB/s: 0.57 GB/s, 2% of the bandwidth.
    let clock = ManualClock::new();
    let options = Options {
        schedule: Schedule::new(0, 0, 1, 1),
        threads: Some(2),
        ..Options::default()
    };
    let mut prof = Profiler::new(options)
        .with_clock(clock.clone())
        .with_ceilings(profiler::Ceilings {
            mem_read_gbps: 28.2,
            peak_gflops: 361.9,
            ..fixture::ceilings()
        });
    prof.step(|| {
        for _ in 0..12 {
            let _g = profiler::op("gelu")
                .with_work(10 * 8 * 3072, 2 * 4 * 8 * 3072)
                .with_kernel("candle");
            clock.advance_us(348);
        }
    });
    let p = prof.finish();
    let report = p.report();
    let gelu = report.rows.iter().find(|r| r.name == "gelu").unwrap();
    let roofline = gelu.roofline.as_ref().unwrap();
    assert_eq!(roofline.bound, Bound::Memory, "left of the ridge");
    assert!(roofline.pct_of_memory_roofline < 3.0, "{roofline:?}");
    assert_eq!(gelu.reading, Some(Reading::SlowKernel));
    let table = p.table(TableOptions::default());
    let line = table
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("gelu"))
        .unwrap();
    assert!(
        line.contains("memory")
            && line.trim_end().ends_with("slow kernel")
            && !line.contains("memory-bound"),
        "{line}"
    );
}

#[test]
fn a_cuda_profile_takes_rates_over_stream_time() {
    let p = fixture::profile_with_ceilings(true);
    let report = p.report_with(TableOptions {
        group_by_input_shape: true,
        ..TableOptions::default()
    });
    let m = report_row(&report, "matmul", "[[1, 8, 768], [768, 2304]]")
        .roofline
        .as_ref()
        .unwrap();
    // The device took 50 µs per call where the host took 40.
    assert_eq!(m.time_basis, TimeBasis::CudaStream);
    assert!(close(m.gflops_per_s, 56_623_104.0 / 100_000.0), "{m:?}");
}

#[test]
fn ceilings_from_another_thread_count_are_called_out_under_the_table() {
    let mut p = fixture::profile(false);
    let table = |p: &profiler::Profile| p.table(TableOptions::default());
    p.set_ceilings(fixture::ceilings());
    assert!(!table(&p).contains("measured with"), "{}", table(&p));
    p.set_ceilings(profiler::Ceilings {
        threads: 8,
        ..fixture::ceilings()
    });
    let t = table(&p);
    assert!(
        t.contains("measured with 8 threads in a release build, this profile ran with 2 threads"),
        "{t}"
    );
}

#[test]
fn without_ceilings_there_are_no_rooflines() {
    let report = fixture::profile(false).report();
    assert_eq!(report.ceilings, None);
    assert!(report.rows.iter().all(|r| r.roofline.is_none()));
    assert!(report.warnings.is_empty());
}

#[test]
fn module_view_folds_ops_into_their_module() {
    let p = fixture::profile(false);
    let k = p.key_averages(View::Module, false, SortBy::SelfCpuTimeTotal);
    let r = &k.rows;
    assert_eq!(row(r, "block").calls, 2);
    assert_eq!(row(r, "block").self_cpu_ns, 2 * 70 * US);
    // Ops outside every module stay rows of their own.
    assert_eq!(row(r, "embedding").self_cpu_ns, 2 * 10 * US);
    assert_eq!(row(r, "lm_head").self_cpu_ns, 2 * 12 * US);
    assert_eq!(row(r, STEP_ROW).self_cpu_ns, 2 * 8 * US);
    assert_eq!(r.len(), 4);
    assert_eq!(k.self_cpu_total_ns, k.wall_ns);
    // The block's work is the sum of its ops' work.
    let matmul_flops = 2 * 8 * 768 * 2304;
    assert_eq!(row(r, "block").flops, Some(2 * (matmul_flops + 8 * 2304)));
}

#[test]
fn full_view_counts_every_scope() {
    let p = fixture::profile(false);
    let k = p.key_averages(View::All, false, SortBy::CpuTimeTotal);
    let r = &k.rows;
    assert_eq!(row(r, "block").self_cpu_ns, 2 * 2 * US);
    assert_eq!(row(r, "block").cpu_total_ns, 2 * 70 * US);
    assert_eq!(row(r, STEP_ROW).self_cpu_ns, 2 * 8 * US);
    assert_eq!(k.self_cpu_total_ns, k.wall_ns);
    assert_eq!(
        r[0].name, STEP_ROW,
        "sorted by CPU total, the step comes first"
    );
    assert_eq!(r[1].name, "block");
}

#[test]
fn grouping_by_input_shape_splits_rows() {
    let p = fixture::profile(false);
    let k = p.key_averages(View::Op, true, SortBy::SelfCpuTimeTotal);
    let matmuls: Vec<&Row> = k.rows.iter().filter(|r| r.name == "matmul").collect();
    assert_eq!(matmuls.len(), 2);
    assert_eq!(
        matmuls[0].input_shapes.as_deref(),
        Some("[[1, 8, 768], [768, 2304]]")
    );
    assert_eq!(matmuls[0].self_cpu_ns, 2 * 40 * US);
    assert_eq!(
        matmuls[1].input_shapes.as_deref(),
        Some("[[1, 8, 768], [768, 768]]")
    );
    assert_eq!(matmuls[1].calls, 2);
    assert_eq!(row(&k.rows, "softmax").input_shapes, None);
}

#[test]
fn device_times_come_from_the_device_timer() {
    let p = fixture::profile(true);
    assert!(p.has_device_times());
    let k = p.key_averages(View::Op, false, SortBy::SelfCudaTimeTotal);
    let r = &k.rows;
    assert_eq!(row(r, "matmul").self_device_ns, Some(2 * 70 * US));
    assert_eq!(row(r, "linear").self_device_ns, Some(0));
    assert_eq!(row(r, "linear").device_total_ns, Some(2 * 52 * US));
    assert_eq!(row(r, "lm_head").self_device_ns, Some(2 * 30 * US));
    assert_eq!(row(r, STEP_ROW).device_total_ns, Some(2 * 113 * US));
    assert_eq!(row(r, STEP_ROW).self_device_ns, Some(2 * 2 * US));
    assert_eq!(k.self_device_total_ns, Some(2 * 113 * US));
    // Host times are unchanged by device timing.
    assert_eq!(row(r, "matmul").self_cpu_ns, 2 * 55 * US);
    assert_eq!(r[0].name, "matmul");
    assert_eq!(r[1].name, "lm_head");
}

#[test]
fn report_percentages_add_up_and_averages_divide_by_steps() {
    let p = fixture::profile(true);
    let report = p.report();
    assert_eq!(report.active_steps, 2);
    let cpu: f64 = report.rows.iter().map(|r| r.self_cpu_pct).sum();
    let cuda: f64 = report.rows.iter().filter_map(|r| r.self_cuda_pct).sum();
    assert!((cpu - 100.0).abs() < 1e-9, "{cpu}");
    assert!((cuda - 100.0).abs() < 1e-9, "{cuda}");
    let matmul = report.rows.iter().find(|r| r.name == "matmul").unwrap();
    assert_eq!(matmul.self_cpu_us, 110.0);
    assert!((matmul.self_cpu_pct - 55.0).abs() < 1e-9);
    assert_eq!(report.totals.wall_us, 200.0);
    assert_eq!(report.totals.self_cuda_us, Some(226.0));
    let top: Vec<&str> = report.top(3).iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        top,
        ["matmul", "lm_head", "embedding"],
        "the step row is not an op"
    );
}

#[test]
fn scopes_outside_a_step_are_not_recorded() {
    let clock = ManualClock::new();
    let mut prof = Profiler::new(Options::default()).with_clock(clock.clone());
    {
        let _s = profiler::op("before");
        clock.advance_us(7);
    }
    assert!(!profiler::is_recording());
    prof.step(|| {
        assert!(profiler::is_recording());
        let _s = profiler::op("inside");
        clock.advance_us(3);
    });
    assert!(!profiler::is_recording());
    let p = prof.finish();
    let k = p.key_averages(View::Op, false, SortBy::SelfCpuTimeTotal);
    assert_eq!(k.rows.len(), 2);
    assert_eq!(row(&k.rows, "inside").self_cpu_ns, 3 * US);
    assert_eq!(k.wall_ns, 3 * US);
}

#[test]
fn a_scope_left_open_is_closed_at_the_end_of_its_step_and_cannot_touch_the_next() {
    let clock = ManualClock::new();
    let mut prof = Profiler::new(Options::default()).with_clock(clock.clone());
    let leaked = prof.step(|| {
        let s = profiler::op("leaked");
        clock.advance_us(4);
        s
    });
    clock.advance_us(100);
    prof.step(|| {
        let _s = profiler::op("next");
        clock.advance_us(2);
        drop(leaked);
        clock.advance_us(1);
    });
    let p = prof.finish();
    assert_eq!(p.steps[0].events[0].host_ns(), 4 * US);
    assert_eq!(p.steps[1].events.len(), 1);
    assert_eq!(p.steps[1].events[0].host_ns(), 3 * US);
}

#[test]
fn start_next_step_stop_matches_step() {
    let clock = ManualClock::new();
    let mut prof = Profiler::new(Options {
        schedule: Schedule::new(0, 1, 2, 1),
        ..Options::default()
    })
    .with_clock(clock.clone());
    prof.start();
    for i in 0..3u64 {
        {
            let _s = profiler::module("block");
            clock.advance_us(i + 1);
        }
        prof.next_step();
    }
    prof.stop();
    let p = prof.finish();
    assert_eq!(p.active_steps(), 2);
    let k = p.key_averages(View::Module, false, SortBy::Count);
    assert_eq!(row(&k.rows, "block").cpu_total_ns, (2 + 3) * US);
}

#[test]
fn table_options_pick_sort_limit_and_view() {
    let p = fixture::profile(false);
    let t = p.table(TableOptions {
        sort_by: SortBy::Count,
        row_limit: Some(2),
        ..TableOptions::default()
    });
    let body: Vec<&str> = t.lines().skip(3).take(2).collect();
    assert!(body[0].trim_start().starts_with("matmul"), "{t}");
    assert!(t.contains("first 2 of 7 rows"), "{t}");
    let m = p.table(TableOptions {
        view: View::Module,
        ..TableOptions::default()
    });
    assert!(m.contains("block") && !m.contains("softmax"), "{m}");
}

#[test]
fn report_json_round_trips_and_follows_the_schema() {
    let p = fixture::profile(false);
    let report = p.report_with(TableOptions {
        group_by_input_shape: true,
        ..TableOptions::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    report.write_json(&path).unwrap();
    let back = Report::read_json(&path).unwrap();
    assert_eq!(back, report);

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["schema"], "profiler-report/7");
    assert_eq!(v["device"], "cpu");
    assert_eq!(v["sort_by"], "self_cpu_time_total");
    assert_eq!(v["view"], "op");
    assert_eq!(v["grouped_by_input_shape"], true);
    assert_eq!(v["active_steps"], 2);
    assert_eq!(v["environment"]["threads"], 2);
    assert_eq!(v["environment"]["timing"], "host");
    assert_eq!(v["environment"]["device"], "cpu");
    assert!(
        v["environment"]["cpu_model"].is_string()
            && v["environment"]["optimized_build"].is_boolean()
    );
    for field in [
        "os",
        "arch",
        "cargo_features",
        "dtype",
        "git_revision",
        "git_dirty",
        "crate_version",
        "timestamp_unix_s",
    ] {
        assert!(
            v["environment"].get(field).is_some(),
            "environment field {field} missing"
        );
    }
    assert!(v["totals"]["self_cuda_us"].is_null());
    assert!(v["totals"]["cuda_time_basis"].is_null());
    assert!(v["ceilings"].is_null());
    for field in [
        "not_memory_below_pct",
        "memory_above_pct",
        "slow_kernel_below_pct",
        "near_roofline_above_pct",
        "launch_overhead_below_us",
    ] {
        assert!(
            v["reading_thresholds"][field].is_number(),
            "reading_thresholds field {field} missing"
        );
    }
    assert_eq!(v["warnings"], serde_json::json!([]));
    let first = &v["rows"][0];
    for field in [
        "name",
        "input_shapes",
        "calls",
        "self_cpu_us",
        "cpu_total_us",
        "self_cpu_pct",
        "self_cuda_us",
        "cuda_total_us",
        "self_cuda_pct",
        "flops",
        "bytes",
        "kernel",
        "roofline",
        "reading",
    ] {
        assert!(first.get(field).is_some(), "row field {field} missing");
    }
    assert_eq!(first["name"], "matmul");
    assert_eq!(first["input_shapes"], "[[1, 8, 768], [768, 2304]]");
    assert_eq!(first["flops"], 2 * 2 * 8 * 768 * 2304);
    assert_eq!(first["kernel"], "packed-avx512");
    assert!(first["roofline"].is_null(), "no ceilings, no roofline");
    assert!(first["reading"].is_null(), "no roofline, no reading");
}

#[test]
fn a_cuda_report_with_ceilings_round_trips_and_names_its_time_basis() {
    let p = fixture::profile_with_ceilings(true);
    let report = p.report();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    report.write_json(&path).unwrap();
    // serde_json reads floats back to within an ulp or so (no `float_roundtrip`), so the
    // computed rates are compared with a tolerance, everything else exactly.
    let back = Report::read_json(&path).unwrap();
    assert_eq!(
        (&back.ceilings, &back.totals, &back.warnings),
        (&report.ceilings, &report.totals, &report.warnings)
    );
    for (b, r) in back.rows.iter().zip(&report.rows) {
        assert_eq!(
            (&b.name, &b.kernel, b.flops, b.bytes, b.reading),
            (&r.name, &r.kernel, r.flops, r.bytes, r.reading)
        );
        match (&b.roofline, &r.roofline) {
            (Some(x), Some(y)) => {
                assert_eq!((x.time_basis, x.bound), (y.time_basis, y.bound));
                assert!(
                    close(x.gbytes_per_s, y.gbytes_per_s)
                        && close(x.pct_of_roofline, y.pct_of_roofline)
                );
            }
            (x, y) => assert_eq!(x, y),
        }
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["totals"]["cuda_time_basis"], "stream");
    assert_eq!(v["ceilings"]["mem_read_gbps"], 200.0);
    assert_eq!(v["ceilings"]["kernels"], "avx512");
    let bias = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "bias_add")
        .unwrap();
    assert_eq!(bias["roofline"]["time_basis"], "cuda-stream");
    assert_eq!(bias["roofline"]["bound"], "memory");
    assert_eq!(bias["reading"], "launch-overhead");
    assert_eq!(v["reading_thresholds"]["launch_overhead_below_us"], 20.0);
}

#[test]
fn reading_a_wrong_file_says_what_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(&path, r#"{"schema": "profiler-report/0"}"#).unwrap();
    let err = Report::read_json(&path).unwrap_err().to_string();
    assert!(
        err.contains("old.json")
            && err.contains("profiler-report/0")
            && err.contains("gpt2 profile"),
        "{err}"
    );
    // A complete report of the previous version is refused too, with the way out.
    let mut old = serde_json::to_value(fixture::profile(false).report()).unwrap();
    old["schema"] = "profiler-report/5".into();
    std::fs::write(&path, old.to_string()).unwrap();
    let err = Report::read_json(&path).unwrap_err().to_string();
    assert!(
        err.contains("old.json")
            && err.contains("profiler-report/5")
            && err.contains("profiler-report/7"),
        "{err}"
    );
    assert!(err.contains("Re-run the profile"), "{err}");
    std::fs::write(&path, "{ not json").unwrap();
    let err = Report::read_json(&path).unwrap_err().to_string();
    assert!(err.contains("old.json") && err.contains("line 1"), "{err}");
    let err = Report::read_json(dir.path().join("missing.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.json"), "{err}");
}

#[test]
fn chrome_trace_holds_steps_and_scopes_on_host_and_device_tracks() {
    let p = fixture::profile(true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    p.chrome_trace(&path).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    // Two steps, each with its step event and 8 scopes, on two tracks.
    assert_eq!(complete.len(), 2 * 2 * 9);
    let host_steps: Vec<_> = complete
        .iter()
        .filter(|e| e["cat"] == "step" && e["tid"] == 1)
        .collect();
    assert_eq!(host_steps[0]["name"], "ProfilerStep#2");
    assert_eq!(host_steps[0]["ts"], 0.0);
    assert_eq!(host_steps[0]["dur"], 100.0);
    let matmul = complete
        .iter()
        .find(|e| e["name"] == "matmul" && e["tid"] == 1)
        .unwrap();
    assert_eq!(matmul["cat"], "op");
    assert_eq!(matmul["ts"], 18.0);
    assert_eq!(matmul["dur"], 40.0);
    assert_eq!(matmul["args"]["input_shapes"], "[[1, 8, 768], [768, 2304]]");
    assert_eq!(matmul["args"]["kernel"], "packed-avx512");
    let device_matmul = complete
        .iter()
        .find(|e| e["name"] == "matmul" && e["tid"] == 2)
        .unwrap();
    assert_eq!(device_matmul["dur"], 50.0);
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"] == "CUDA stream"));
}

#[test]
fn folded_stacks_carry_self_time_and_the_flame_graph_is_an_svg() {
    let p = fixture::profile(false);
    let folded = p.folded_stacks();
    let lines: Vec<&str> = folded.lines().collect();
    assert!(
        lines.contains(&"ProfilerStep*;block;linear;matmul 80000"),
        "{folded}"
    );
    assert!(lines.contains(&"ProfilerStep*;block 4000"), "{folded}");
    assert!(lines.contains(&"ProfilerStep* 16000"), "{folded}");
    let total: u64 = lines
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        total, 200_000,
        "the frames' self times add up to the wall time"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flamegraph.svg");
    p.flamegraph_svg(&path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(
        svg.starts_with("<?xml") && svg.contains("<svg"),
        "not an SVG"
    );
    assert!(svg.contains("matmul") && svg.contains("softmax"));
}

#[test]
fn a_flame_graph_of_nothing_is_an_error_not_an_empty_file() {
    let p = Profiler::new(Options::default()).finish();
    let dir = tempfile::tempdir().unwrap();
    let err = p
        .flamegraph_svg(dir.path().join("f.svg"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no recorded time"), "{err}");
}

#[test]
fn a_second_profiler_on_the_same_thread_is_refused_with_a_warning() {
    let outer_clock = ManualClock::new();
    let mut outer = Profiler::new(Options::default()).with_clock(outer_clock.clone());
    let mut inner = Profiler::new(Options::default()).with_clock(ManualClock::new());
    outer.step(|| {
        inner.step(|| {
            let _s = profiler::op("x");
            outer_clock.advance_us(1);
        });
    });
    let inner = inner.finish();
    assert_eq!(inner.active_steps(), 0);
    assert!(inner.warnings[0].contains("another profiler"));
    assert_eq!(outer.finish().steps[0].events.len(), 1);
}

/// A device timer whose third mark fails, as a lost CUDA context would.
struct FailingTimer {
    marks: u32,
}

impl profiler::DeviceTimer for FailingTimer {
    fn timing(&self) -> profiler::Timing {
        profiler::Timing::CudaEvents
    }
    fn begin_step(&mut self) -> Result<(), profiler::DeviceError> {
        self.marks = 0;
        Ok(())
    }
    fn mark(&mut self) -> Result<u32, profiler::DeviceError> {
        self.marks += 1;
        if self.marks == 3 {
            return Err(profiler::DeviceError(
                "CUDA event record failed: context lost".into(),
            ));
        }
        Ok(self.marks - 1)
    }
    fn finish_step(&mut self) -> Result<Vec<u64>, profiler::DeviceError> {
        Ok((0..self.marks as u64).collect())
    }
}

#[test]
fn a_failing_device_timer_leaves_host_times_and_says_why() {
    let clock = ManualClock::new();
    let mut prof = Profiler::new(Options::default())
        .with_clock(clock.clone())
        .with_device_timer(FailingTimer { marks: 0 });
    prof.step(|| {
        let _a = profiler::op("a");
        clock.advance_us(2);
        let _b = profiler::op("b");
        clock.advance_us(3);
    });
    let p = prof.finish();
    assert_eq!(p.device, profiler::DeviceKind::Cuda);
    assert!(!p.has_device_times());
    assert!(
        p.warnings[0].contains("context lost") && p.warnings[0].contains("step 0"),
        "{:?}",
        p.warnings
    );
    let k = p.key_averages(View::Op, false, SortBy::SelfCpuTimeTotal);
    assert_eq!(row(&k.rows, "a").self_cpu_ns, 2 * US);
    assert_eq!(row(&k.rows, "b").self_cpu_ns, 3 * US);
    assert!(p
        .table(TableOptions::default())
        .contains("Warning: step 0: device timing failed"));
    // The report carries the warning, so a reader of report.json sees it too.
    assert_eq!(p.report().warnings, p.warnings);
}

#[test]
fn dropping_a_profiler_mid_step_stops_recording() {
    let mut prof = Profiler::new(Options::default());
    prof.begin_step();
    assert!(profiler::is_recording());
    drop(prof);
    assert!(!profiler::is_recording());
    assert!(!profiler::op("after").is_active());
}
