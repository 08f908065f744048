//! Snapshots of the rendered reports for fixture submissions: perfect, partial, empty,
//! malformed, tampered results, a CPU and a CUDA run of the same exercise.

mod support;

use grader::render;
use grader::{ExerciseReport, Grader};
use std::collections::BTreeMap;
use support::*;

fn grade(files: BTreeMap<String, String>) -> Vec<ExerciseReport> {
    let grader: Grader = grader();
    grader.grade_all(&submission(files))
}

/// A report with one JSON edit applied (a learner editing their results by hand).
fn edited(report: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut value: serde_json::Value = serde_json::from_str(report).unwrap();
    edit(&mut value);
    serde_json::to_string_pretty(&value).unwrap()
}

fn row<'a>(report: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
    report["rows"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["name"] == name)
        .unwrap()
}

fn terminal_all(reports: &[ExerciseReport]) -> String {
    reports
        .iter()
        .map(|r| render::terminal(r, false))
        .collect::<Vec<_>>()
        .join("\n")
}

fn with(mut files: BTreeMap<String, String>, changes: &[(&str, &str)]) -> BTreeMap<String, String> {
    for (k, v) in changes {
        files.insert(k.to_string(), v.to_string());
    }
    files
}

#[test]
fn perfect_submission_passes_every_exercise() {
    let reports = grade(perfect_files());
    for r in &reports {
        assert!(
            r.passed,
            "exercise {} did not pass:\n{}",
            r.exercise,
            render::terminal(r, false)
        );
        assert!(r.problems.is_empty());
        // A why line the instructor awards (exercise 1's) waits for review at 0 points.
        let awaiting: f64 = r
            .questions
            .iter()
            .filter(|q| q.reason.starts_with("awaits review"))
            .map(|q| q.max_points)
            .sum();
        assert_eq!(r.points + awaiting, r.max_points, "exercise {}", r.exercise);
    }
    insta::assert_snapshot!("perfect_terminal", terminal_all(&reports));
    insta::assert_snapshot!("perfect_markdown_exercise_6", render::markdown(&reports[5]));
}

#[test]
fn partial_submission() {
    let files = with(
        perfect_files(),
        &[
            ("exercise-1/answers.toml", "[quiz]\nntq-1 = \"Benchmark\"\nntq-2 = \"Benchmark\"\nntq-3 = \"benchmarking\"\nntq-4 = \"Nsight\"\nntq-5 = \"\"\n"),
            (
                "exercise-3/answers.toml",
                "[[top_ops]]\nname = \"matmul\"\nshare_pct = 60\n[[top_ops]]\nname = \"add\"\nshare_pct = 11\n[[top_ops]]\nname = \"attention\"\nshare_pct = 5\n[plan]\nattack = \"gelu\"\nexpected_cut_pct = 10\nmechanism = \"memory-traffic\"\nwhy = \"gelu is memory-bound, so fuse it.\"\n",
            ),
            ("exercise-4/answers.toml", "[illustrative]\nactivations_share_pct = 15\nsaving_ms = 6\nsaving_pct = 15\nnew_step_ms = \"36\"\n[own]\nop = \"gelu\"\nop_share_pct = 7.29\nremoved_fraction = 66.7\nsaving_pct = 4.86\n[lines]\nlargest = \"attention\"\nlargest_ceiling_pct = 3\none_line_gives_target = \"no\"\n"),
        ],
    );
    let reports = grade(files);
    assert!(!reports[0].passed);
    assert!(
        reports[2].needs_review(),
        "a partial rubric match is flagged for review"
    );
    insta::assert_snapshot!("partial_terminal", terminal_all(&reports[..4]));
}

#[test]
fn empty_submission_is_the_untouched_templates() {
    let grader = grader();
    let files: BTreeMap<String, String> = grader
        .manifest
        .exercises
        .iter()
        .map(|e| (e.answers_path(), e.answers_template.clone()))
        .collect();
    let reports = grader.grade_all(&submission(files));
    for r in &reports {
        assert!(!r.passed);
        assert_eq!(r.points, 0.0);
        assert!(r
            .questions
            .iter()
            .all(|q| q.outcome == grader::Outcome::Unanswered
                || q.id == "fused_check.correct"
                || q.id == "profile.shrinks"));
        // Nothing in a template is malformed or of the wrong type.
        assert!(
            r.problems
                .iter()
                .all(|p| p.kind == grader::ProblemKind::Missing),
            "{:?}",
            r.problems
        );
    }
    insta::assert_snapshot!("empty_terminal", terminal_all(&reports));
}

#[test]
fn malformed_files_name_file_line_and_column() {
    let files = with(
        perfect_files(),
        &[
            ("exercise-1/answers.toml", "[quiz]\nntq-1 = Benchmark\n"),
            (
                "exercise-2/answers.toml",
                "[throughput]\nratio = \"fast\"\nverdict = 3\n",
            ),
            (
                "exercise-2/results/bench.json",
                "{\"schema\": \"bench-report/4\",\n \"runs\": [\n",
            ),
            (
                "exercise-3/results/report.json",
                "{\"schema\": \"profiler-report/7\", \"device\": \"tpu\"}",
            ),
        ],
    );
    let reports = grade(files);
    insta::assert_snapshot!("malformed_terminal", terminal_all(&reports[..3]));
}

#[test]
fn tampered_results_are_not_trusted() {
    // Shares that do not add up: the gelu row claims more than its time.
    let shares = edited(&cpu_profile(), |r| {
        row(r, "gelu")["self_cpu_pct"] = 17.29.into()
    });
    // A ranking that contradicts the rows: the first two rows swapped.
    let swapped = profile_json(
        "cpu",
        &[
            ("gelu", 2600.0, None),
            ("matmul", 5200.0, None),
            ("add", 1100.0, None),
        ],
    );
    // Totals that disagree with the rows.
    let totals = edited(&cpu_profile(), |r| {
        r["totals"]["self_cpu_us"] = 20000.0.into()
    });
    // A roofline figure edited to pass: gelu claimed at 60% of its memory roofline.
    let roofline = edited(&cpu_profile(), |r| {
        row(r, "gelu")["roofline"]["pct_of_memory_roofline"] = 60.0.into()
    });
    // ... and its rate edited with it, to match: the rate no longer matches the bytes and time.
    let rate = edited(&cpu_profile(), |r| {
        let gelu = row(r, "gelu");
        gelu["roofline"]["gbytes_per_s"] = 13.2.into();
        gelu["roofline"]["pct_of_memory_roofline"] = 60.0.into();
        gelu["roofline"]["pct_of_roofline"] = 60.0.into();
    });
    // A reading edited to pass a memory-traffic plan: gelu at 2% of its roofline claimed memory-bound.
    let reading = edited(&cpu_profile(), |r| {
        row(r, "gelu")["reading"] = "memory-bound".into()
    });
    // Old reports: from before the roofline columns, from before the shared environment, from
    // before the Reading column, from before each row's budget line, and from before each
    // row's type.
    let old = cpu_profile().replace("profiler-report/7", "profiler-report/1");
    let old_environment = cpu_profile().replace("profiler-report/7", "profiler-report/2");
    let old_reading = cpu_profile().replace("profiler-report/7", "profiler-report/3");
    let old_line = cpu_profile().replace("profiler-report/7", "profiler-report/4");
    let old_dtype = cpu_profile().replace("profiler-report/7", "profiler-report/5");
    // A verdict its own interval contradicts.
    let verdict = ex2_bench_json(&[(
        "above",
        "output_tokens_per_s",
        "higher",
        "faster",
        0.99,
        (0.95, 1.04),
    )]);
    let mut out = String::new();
    for (case, report_json) in [
        ("shares", shares),
        ("ranking", swapped),
        ("totals", totals),
        ("roofline", roofline),
        ("rate", rate),
        ("reading", reading),
        ("old", old),
        ("old environment", old_environment),
        ("old reading", old_reading),
        ("old line", old_line),
        ("old dtype", old_dtype),
    ] {
        assert_ne!(
            report_json,
            cpu_profile(),
            "the {case} case must change the file"
        );
        let reports = grade(with(
            perfect_files(),
            &[("exercise-3/results/report.json", &report_json)],
        ));
        assert!(
            reports[2]
                .problems
                .iter()
                .any(|p| p.kind == grader::ProblemKind::Tampered),
            "{case}"
        );
        out.push_str(&render::terminal(&reports[2], false));
        out.push('\n');
    }
    let reports = grade(with(
        perfect_files(),
        &[("exercise-2/results/bench.json", &verdict)],
    ));
    out.push_str(&render::terminal(&reports[1], false));
    insta::assert_snapshot!("tampered_terminal", out);
}

#[test]
fn cpu_and_cuda_runs_rank_by_their_own_column() {
    let cpu = grade(perfect_files());
    // On the GPU at B=8, T=128 lm_head is compute-bound (67.6% of its roofline) and computes
    // logits for 1024 positions where generation needs 8: skipping that is right there.
    let cuda_answers = perfect_ex3(
        &[("matmul", 60.97), ("lm_head", 28.82), ("layer_norm", 1.66)],
        "[plan]\nattack = \"lm_head\"\nexpected_cut_pct = 18\nmechanism = \"wasted-work\"\nwhy = \"lm_head takes 29% of GPU time computing logits for every position, while only the last one is read.\"\n",
    );
    let cuda = grade(with(
        perfect_files(),
        &[
            ("exercise-3/results/report.json", &cuda_profile()),
            ("exercise-3/answers.toml", &cuda_answers),
        ],
    ));
    assert!(cpu[2].passed && cuda[2].passed);
    assert_eq!(cpu[2].device.as_deref(), Some("CPU"));
    assert_eq!(cuda[2].device.as_deref(), Some("CUDA"));
    // The CPU answers against the CUDA run: gelu is third by self CUDA time, though first by CPU.
    let crossed = grade(with(
        perfect_files(),
        &[("exercise-3/results/report.json", &cuda_profile())],
    ));
    assert!(!crossed[2].passed);
    insta::assert_snapshot!("cpu_run_exercise_3", render::terminal(&cpu[2], false));
    insta::assert_snapshot!("cuda_run_exercise_3", render::terminal(&cuda[2], false));
    insta::assert_snapshot!(
        "cpu_answers_on_cuda_run_exercise_3",
        render::terminal(&crossed[2], false)
    );
}

#[test]
fn json_report_carries_every_question() {
    let reports = grade(perfect_files());
    let json: serde_json::Value = serde_json::from_str(&reports[0].to_json()).unwrap();
    assert_eq!(
        json["questions"].as_array().unwrap().len(),
        7,
        "six scenarios and the why line"
    );
    assert_eq!(json["passed"], true);
    assert_eq!(json["questions"][0]["outcome"], "right");
}

#[test]
fn exercise_4s_lines_are_checked_against_the_line_each_row_of_the_profile_gives() {
    let budget: serde_json::Value = serde_json::from_str(&budget_json(&cpu_profile())).unwrap();
    let edit_lines = |edit: &dyn Fn(&mut Vec<serde_json::Value>)| {
        let mut b = budget.clone();
        edit(b["lines"].as_array_mut().unwrap());
        serde_json::to_string_pretty(&b).unwrap()
    };
    let share = |lines: &[serde_json::Value], i: usize| lines[i]["share_pct"].as_f64().unwrap();
    let lm_head = fixture_row(&cpu_profile(), "lm_head").0;
    // lm_head moved from matmuls to attention with both shares moved too, so every sum still
    // holds: only the report's own `line` for lm_head says the file was edited.
    let moved = edit_lines(&|lines| {
        let (m, a) = (share(lines, 0), share(lines, 1));
        lines[0]["ops"] = serde_json::json!(["matmul"]);
        lines[0]["share_pct"] = (m - lm_head).into();
        lines[1]["ops"]
            .as_array_mut()
            .unwrap()
            .push("lm_head".into());
        lines[1]["share_pct"] = (a + lm_head).into();
    });
    // The same op listed on two lines.
    let twice = edit_lines(&|lines| {
        lines[1]["ops"]
            .as_array_mut()
            .unwrap()
            .push("matmul".into())
    });
    let problems = |budget: &str| -> Vec<(grader::ProblemKind, String)> {
        let reports = grade(with(
            perfect_files(),
            &[("exercise-4/results/budget.json", budget)],
        ));
        reports[3]
            .problems
            .iter()
            .map(|p| (p.kind, p.message.clone()))
            .collect()
    };
    assert!(grade(perfect_files())[3].passed, "the unedited lines pass");
    let found = problems(&moved);
    assert!(
        found
            .iter()
            .any(|(k, m)| *k == grader::ProblemKind::Tampered
                && m.contains("lists `lm_head`, which")
                && m.contains("puts on `matmuls`")),
        "{found:?}"
    );
    let found = problems(&twice);
    assert!(
        found
            .iter()
            .any(|(k, _)| *k == grader::ProblemKind::Tampered),
        "{found:?}"
    );
}
