//! `course bench budget`: the grouping of ops into budget lines, the bars, and the command.

use std::path::{Path, PathBuf};
use std::process::Command;

use bench::budget::{self, Budget, Line};
use profiler::Report;

fn fixture() -> PathBuf {
    // Written by `gpt2 profile --model synthetic --device cpu --mlp stock` (op view, 5 steps).
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-report.json")
}

fn read_fixture() -> Report {
    Report::read_json(fixture()).unwrap()
}

/// The budget with times rounded, so the snapshot reads like the table.
fn rounded(budget: &Budget) -> serde_json::Value {
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    serde_json::json!({
        "title": budget.title,
        "step_ms": round(budget.step_ms),
        "lines": budget.lines.iter().map(|l| serde_json::json!({
            "line": l.line.name(),
            "ms": round(l.ms),
            "share_pct": round(l.share_pct),
            "ops": l.ops,
        })).collect::<Vec<_>>(),
    })
}

#[test]
fn rows_are_grouped_by_the_line_the_report_gives_them_not_by_their_names() {
    let mut report = read_fixture();
    let matmuls_before = budget::from_report(&report, "x").unwrap().lines[0].ms;
    // Move `softmax` onto the matmuls line in the report itself: the budget follows the
    // report's `line`, and no list of op names in this crate overrides it.
    let softmax = report
        .rows
        .iter_mut()
        .find(|r| r.name == "softmax")
        .expect("the fixture has a softmax row");
    assert_eq!(softmax.line, Line::Attention);
    softmax.line = Line::Matmuls;
    let softmax_ms = softmax.self_cpu_us / 1000.0 / report.active_steps as f64;
    let b = budget::from_report(&report, "x").unwrap();
    assert_eq!(b.lines[0].line, Line::Matmuls);
    assert!(
        b.lines[0].ops.contains(&"softmax".to_string()),
        "{:?}",
        b.lines[0].ops
    );
    assert!((b.lines[0].ms - (matmuls_before + softmax_ms)).abs() < 1e-9);
    assert!(!b.lines[1].ops.contains(&"softmax".to_string()));
}

#[test]
fn the_illustrative_step_is_the_chapters_table() {
    let b = budget::illustrative();
    assert_eq!(b.step_ms, 40.0);
    let got: Vec<(&str, f64, f64)> = b
        .lines
        .iter()
        .map(|l| (l.line.name(), l.ms, l.share_pct))
        .collect();
    assert_eq!(
        got,
        [
            ("matmuls", 22.0, 55.0),
            ("attention", 10.0, 25.0),
            ("activations and elementwise", 6.0, 15.0),
            ("everything else", 2.0, 5.0)
        ]
    );
    assert!(b.title.contains("not measured"), "{}", b.title);
}

#[test]
fn a_profile_is_grouped_per_step_and_its_shares_add_up() {
    let report = read_fixture();
    let b = budget::from_report(&report, "GPT-2 forward").unwrap();
    // Every self time of the report is on exactly one line, divided by the recorded steps.
    let per_step_ms = report.totals.self_cpu_us / 1000.0 / report.active_steps as f64;
    assert!(
        (b.step_ms - per_step_ms).abs() < 1e-9,
        "{} vs {per_step_ms}",
        b.step_ms
    );
    let shares: f64 = b.lines.iter().map(|l| l.share_pct).sum();
    assert!((shares - 100.0).abs() < 1e-9);
    insta::assert_json_snapshot!("budget_of_the_fixture_profile", rounded(&b));
}

#[test]
fn a_cuda_profile_is_read_by_its_self_cuda_column() {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    value["device"] = "cuda".into();
    value["totals"]["self_cuda_us"] = 50.0.into();
    for row in value["rows"].as_array_mut().unwrap() {
        // Device time only on the GPU ops: 10 µs each for gelu and matmul, none elsewhere.
        let cuda = if row["name"] == "gelu" || row["name"] == "matmul" {
            Some(10.0)
        } else {
            None
        };
        row["self_cuda_us"] = serde_json::to_value(cuda).unwrap();
    }
    let report = Report::from_json(&value.to_string(), Path::new("cuda.json")).unwrap();
    let b = budget::from_report(&report, "on a GPU").unwrap();
    let shares: Vec<(&str, f64)> = b
        .lines
        .iter()
        .map(|l| (l.line.name(), l.share_pct))
        .collect();
    assert_eq!(
        shares,
        [
            ("matmuls", 50.0),
            ("attention", 0.0),
            ("activations and elementwise", 50.0),
            ("everything else", 0.0)
        ]
    );
    assert!(b.title.contains("self CUDA"), "{}", b.title);
}

#[test]
fn a_module_view_report_is_refused_with_the_flag_to_use() {
    let mut report = read_fixture();
    report.view = profiler::View::Module;
    let err = budget::from_report(&report, "x").unwrap_err().to_string();
    assert!(err.contains("--view op"), "{err}");
}

/// Widths of the filled bars in the SVG, in drawing order.
fn bar_widths(svg: &str, fills: &[&str]) -> Vec<f64> {
    svg.split("<rect")
        .skip(1)
        .map(|rest| rest.split('>').next().unwrap())
        .filter(|l| fills.iter().any(|f| l.contains(&format!("fill=\"{f}\""))))
        .map(|l| {
            let w = l
                .split("width=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            w.parse::<f64>().unwrap()
        })
        .collect()
}

#[test]
fn the_chart_draws_one_bar_per_line_scaled_to_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budget.svg");
    budget::write_svg(&path, &[budget::illustrative()]).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    for text in [
        "matmuls",
        "attention",
        "activations and elementwise",
        "everything else",
        "22.0 ms (55%)",
        "not measured",
    ] {
        assert!(svg.contains(text), "the chart should show {text:?}");
    }
    let widths = bar_widths(&svg, &["#1F77B4", "#2CA02C", "#D62728", "#7F7F7F"]);
    assert_eq!(widths.len(), 4, "one bar per line: {widths:?}");
    // 55 : 25 : 15 : 5, to within a pixel of rounding.
    let unit = widths[0] / 55.0;
    for (w, share) in widths.iter().zip([55.0, 25.0, 15.0, 5.0]) {
        assert!((w - share * unit).abs() <= 1.0, "{widths:?}");
    }
}

fn bench_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bench"))
}

#[test]
fn the_command_draws_both_panels_and_prints_the_ops_of_each_line() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("budget.svg");
    let out = bench_bin()
        .args(["budget", "--label", "GPT-2 small forward"])
        .arg("--report")
        .arg(fixture())
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Illustrative 40 ms decode step")
            && stdout.contains("GPT-2 small forward: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("(lm_head, matmul)"),
        "the ops summed into a line are listed: {stdout}"
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("not measured") && drawn.contains("GPT-2 small forward"));
}

#[test]
fn a_missing_report_names_the_file_and_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench_bin()
        .args(["budget", "--report", "no/such/report.json", "--svg"])
        .arg(dir.path().join("b.svg"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no/such/report.json") && stderr.contains("gpt2 profile --out"),
        "{stderr}"
    );
}

#[test]
fn a_missing_output_folder_is_named() {
    let out = bench_bin()
        .args(["budget", "--svg", "no/such/dir/b.svg"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no/such/dir") && stderr.contains("does not exist"),
        "{stderr}"
    );
}

#[test]
fn no_illustrative_draws_only_the_report_and_needs_one() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("own.svg");
    let out = bench_bin()
        .args(["budget", "--no-illustrative", "--report"])
        .arg(fixture())
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        !drawn.contains("not measured") && drawn.contains("Your profile"),
        "only the report's panel"
    );

    let out = bench_bin()
        .args(["budget", "--no-illustrative"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "nothing would be left to draw");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--report"));
}
