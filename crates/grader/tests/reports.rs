//! Snapshots of the rendered reports for fixture submissions: perfect, partial, empty,
//! malformed, tampered results, a CPU and a CUDA run of the same exercise.

mod support;

use grader::render;
use grader::submission::Submission;
use grader::{ExerciseReport, Grader};
use std::collections::BTreeMap;
use support::*;

fn grade(files: BTreeMap<String, String>) -> Vec<ExerciseReport> {
    let grader: Grader = grader();
    grader.grade_all(&Submission::from_texts("exercises", files))
}

fn terminal_all(reports: &[ExerciseReport]) -> String {
    reports.iter().map(|r| render::terminal(r, false)).collect::<Vec<_>>().join("\n")
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
        assert!(r.passed, "exercise {} did not pass:\n{}", r.exercise, render::terminal(r, false));
        assert!(r.problems.is_empty());
        assert_eq!(r.points, r.max_points, "exercise {}", r.exercise);
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
                "[[top_ops]]\nname = \"matmul\"\nshare_pct = 60\n[[top_ops]]\nname = \"add\"\nshare_pct = 11\n[[top_ops]]\nname = \"attention\"\nshare_pct = 5\n[plan]\nattack_first = \"gelu is memory-bound, so fuse it.\"\n",
            ),
            ("exercise-4/answers.toml", "[illustrative]\nactivations_share_pct = 15\nsaving_ms = 6\nsaving_pct = 15\nnew_step_ms = \"36\"\n[own]\nop = \"gelu\"\nop_share_pct = 26\nremoved_fraction = 66.7\nsaving_pct = 17\n"),
        ],
    );
    let reports = grade(files);
    assert!(!reports[0].passed);
    assert!(reports[2].needs_review(), "a partial rubric match is flagged for review");
    insta::assert_snapshot!("partial_terminal", terminal_all(&reports[..4]));
}

#[test]
fn empty_submission_is_the_untouched_templates() {
    let grader = grader();
    let files: BTreeMap<String, String> =
        grader.manifest.exercises.iter().map(|e| (e.answers_path(), e.answers_template.clone())).collect();
    let reports = grader.grade_all(&Submission::from_texts("exercises", files));
    for r in &reports {
        assert!(!r.passed);
        assert_eq!(r.points, 0.0);
        assert!(r.questions.iter().all(|q| q.outcome == grader::Outcome::Unanswered || q.id == "fused_check.correct" || q.id == "profile.shrinks"));
        // Nothing in a template is malformed or of the wrong type.
        assert!(r.problems.iter().all(|p| p.kind == grader::ProblemKind::Missing), "{:?}", r.problems);
    }
    insta::assert_snapshot!("empty_terminal", terminal_all(&reports));
}

#[test]
fn malformed_files_name_file_line_and_column() {
    let files = with(
        perfect_files(),
        &[
            ("exercise-1/answers.toml", "[quiz]\nntq-1 = Benchmark\n"),
            ("exercise-2/answers.toml", "[comparison]\nratio = \"fast\"\nverdict = 3\n"),
            ("exercise-2/results/bench.json", "{\"schema\": \"bench-report/1\",\n \"runs\": [\n"),
            ("exercise-3/results/report.json", "{\"schema\": \"profiler-report/1\", \"device\": \"tpu\"}"),
        ],
    );
    let reports = grade(files);
    insta::assert_snapshot!("malformed_terminal", terminal_all(&reports[..3]));
}

#[test]
fn tampered_results_are_not_trusted() {
    // Shares that do not add up: the gelu row claims more than its time.
    let shares = cpu_profile().replace("\"self_cpu_pct\": 26.0", "\"self_cpu_pct\": 36.0");
    // A ranking that contradicts the rows: the first two rows swapped.
    let swapped = profile_json("cpu", &[("gelu", 2600.0, None), ("matmul", 5200.0, None), ("add", 1100.0, None)]);
    // Totals that disagree with the rows.
    let totals = cpu_profile().replace("\"self_cpu_us\": 10000.0", "\"self_cpu_us\": 20000.0");
    // A verdict its own interval contradicts.
    let verdict = bench_json("faster", 0.99, (0.95, 1.04), 40.0);
    let mut out = String::new();
    for (case, report_json) in [("shares", shares), ("ranking", swapped), ("totals", totals)] {
        assert_ne!(report_json, cpu_profile(), "the {case} case must change the file");
        let reports = grade(with(perfect_files(), &[("exercise-3/results/report.json", &report_json)]));
        assert!(reports[2].problems.iter().any(|p| p.kind == grader::ProblemKind::Tampered), "{case}");
        out.push_str(&render::terminal(&reports[2], false));
        out.push('\n');
    }
    let reports = grade(with(perfect_files(), &[("exercise-2/results/bench.json", &verdict)]));
    out.push_str(&render::terminal(&reports[1], false));
    insta::assert_snapshot!("tampered_terminal", out);
}

#[test]
fn cpu_and_cuda_runs_rank_by_their_own_column() {
    let cpu = grade(perfect_files());
    let cuda_answers = "[[top_ops]]\nname = \"matmul\"\nshare_pct = 60\n[[top_ops]]\nname = \"softmax\"\nshare_pct = 20\n[[top_ops]]\nname = \"gelu\"\nshare_pct = 15\n[plan]\nattack_first = \"Fuse the softmax kernel first: it takes 20% of GPU time and is limited by memory bandwidth.\"\n";
    let cuda = grade(with(perfect_files(), &[("exercise-3/results/report.json", &cuda_profile()), ("exercise-3/answers.toml", cuda_answers)]));
    assert!(cpu[2].passed && cuda[2].passed);
    assert_eq!(cpu[2].device.as_deref(), Some("CPU"));
    assert_eq!(cuda[2].device.as_deref(), Some("CUDA"));
    // The CPU answers against the CUDA run: gelu is third by self CUDA time, though first by CPU.
    let crossed = grade(with(perfect_files(), &[("exercise-3/results/report.json", &cuda_profile())]));
    assert!(!crossed[2].passed);
    insta::assert_snapshot!("cpu_run_exercise_3", render::terminal(&cpu[2], false));
    insta::assert_snapshot!("cuda_run_exercise_3", render::terminal(&cuda[2], false));
    insta::assert_snapshot!("cpu_answers_on_cuda_run_exercise_3", render::terminal(&crossed[2], false));
}

#[test]
fn json_report_carries_every_question() {
    let reports = grade(perfect_files());
    let json: serde_json::Value = serde_json::from_str(&reports[0].to_json()).unwrap();
    assert_eq!(json["questions"].as_array().unwrap().len(), 6);
    assert_eq!(json["passed"], true);
    assert_eq!(json["questions"][0]["outcome"], "right");
}
