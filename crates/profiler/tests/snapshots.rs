//! The tables a learner reads, pinned as insta snapshots of a fixed profile.

mod fixture;

use profiler::{compare, Reading, ReportTable, RowRoofline, SortBy, TableOptions, View};

/// A row's reading at the profiler's default thresholds, as the report would hold it.
fn read(roofline: Option<&RowRoofline>, us_per_call: f64) -> Option<Reading> {
    profiler::reading::read_row(
        roofline,
        Some(us_per_call),
        &profiler::reading::Thresholds::DEFAULT,
    )
}

#[test]
fn table_cpu_only() {
    let p = fixture::profile(false);
    insta::assert_snapshot!(p.table(TableOptions::default()));
}

#[test]
fn table_with_cuda_columns() {
    let p = fixture::profile(true);
    insta::assert_snapshot!(p.table(TableOptions {
        sort_by: SortBy::SelfCudaTimeTotal,
        ..TableOptions::default()
    }));
}

#[test]
fn table_by_module() {
    let p = fixture::profile(false);
    insta::assert_snapshot!(p.table(TableOptions {
        view: View::Module,
        ..TableOptions::default()
    }));
}

#[test]
fn table_grouped_by_shape_with_work_columns() {
    let p = fixture::profile(false);
    insta::assert_snapshot!(p.table(TableOptions {
        group_by_input_shape: true,
        with_flops: true,
        row_limit: Some(4),
        ..TableOptions::default()
    }));
}

#[test]
fn compare_before_and_after() {
    let before = fixture::profile(false).report();
    // "After": the lm_head got 4x faster and a new op appeared; rebuilt from the fixture
    // by editing the report, as a learner's second run would differ.
    let mut after = before.clone();
    for row in &mut after.rows {
        if row.name == "lm_head" {
            row.self_cpu_us /= 4.0;
            row.cpu_total_us /= 4.0;
        }
    }
    after.rows.retain(|r| r.name != "bias_add");
    after.rows.push(profiler::ReportRow {
        name: "fused_bias_gelu".into(),
        self_cpu_us: 6.0,
        ..before.rows[0].clone()
    });
    after.totals.self_cpu_us = after.rows.iter().map(|r| r.self_cpu_us).sum();
    insta::assert_snapshot!(compare(&before, &after));
}

#[test]
fn table_with_roofline_columns() {
    let p = fixture::profile_with_ceilings(false);
    insta::assert_snapshot!(p.table(TableOptions {
        group_by_input_shape: true,
        ..TableOptions::default()
    }));
}

#[test]
fn table_with_roofline_columns_on_stream_time() {
    let p = fixture::profile_with_ceilings(true);
    insta::assert_snapshot!(p.table(TableOptions {
        sort_by: SortBy::SelfCudaTimeTotal,
        ..TableOptions::default()
    }));
}

#[test]
fn a_report_read_back_from_disk_prints_the_same_table() {
    for p in [
        fixture::profile(false),
        fixture::profile_with_ceilings(false),
        fixture::profile_with_ceilings(true),
    ] {
        let options = TableOptions {
            group_by_input_shape: true,
            with_flops: true,
            ..TableOptions::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        p.report_with(options).write_json(&path).unwrap();
        let back = profiler::Report::read_json(&path).unwrap();
        assert_eq!(back.table(None, true), p.table(options));
    }
}

#[test]
fn compare_shows_the_roofline_columns_before_and_after() {
    let before = fixture::profile_with_ceilings(false).report();
    // "After": matmul moved to one kernel and takes 0.8x the time; bias_add was fused away.
    let mut after = before.clone();
    let ceilings = fixture::ceilings();
    for row in &mut after.rows {
        if row.name == "matmul" {
            row.self_cpu_us *= 0.8;
            row.cpu_total_us *= 0.8;
            row.kernel = Some("packed-avx512".into());
            row.roofline = profiler::roofline::row_roofline(
                row.flops.unwrap(),
                row.bytes.unwrap(),
                row.cpu_total_us,
                profiler::TimeBasis::Cpu,
                &ceilings,
            );
            row.reading = read(row.roofline.as_ref(), row.self_cpu_us / row.calls as f64);
        }
    }
    after.rows.retain(|r| r.name != "bias_add");
    let fused =
        profiler::roofline::row_roofline(36_864, 160_000, 6.0, profiler::TimeBasis::Cpu, &ceilings);
    after.rows.push(profiler::ReportRow {
        name: "fused_bias_gelu".into(),
        self_cpu_us: 6.0,
        cpu_total_us: 6.0,
        kernel: Some("avx512".into()),
        reading: read(fused.as_ref(), 6.0 / before.rows[0].calls as f64),
        roofline: fused,
        ..before.rows[0].clone()
    });
    after.totals.self_cpu_us = after.rows.iter().map(|r| r.self_cpu_us).sum();
    insta::assert_snapshot!(compare(&before, &after));
}
