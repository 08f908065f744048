//! Exercise 5, "fuse, then judge", graded from the learner's own reports: a real run's three
//! profiles on a CPU (support: unfused, stage 1 the natural fusion, stage 2 the kernel fix).
//! Snapshots of the feedback: the reference answers, the prediction missing or made after the
//! first profile, a submission that stops at stage 1, and mechanisms the roofline refutes.

mod support;

use grader::{render, ExerciseReport, Outcome};
use support::*;

fn grade_with(files: &[(&str, String)], modified_after: bool) -> ExerciseReport {
    let mut all = perfect_files();
    for (path, text) in files {
        all.insert(format!("exercise-5/{path}"), text.clone());
    }
    let mut s = submission(all);
    if modified_after {
        // The first profile written a minute before the prediction was made.
        s.set_modified(
            "exercise-5/results/unfused/report.json",
            report_written() - std::time::Duration::from_secs(3600 * 24 * 365 * 30),
        );
    }
    grader().grade_exercise(&s, 5)
}

fn outcome(report: &ExerciseReport, id: &str) -> Outcome {
    report
        .questions
        .iter()
        .find(|q| q.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
        .outcome
}

fn only(report: &ExerciseReport, ids: &[&str]) -> String {
    let mut r = report.clone();
    r.questions.retain(|q| ids.contains(&q.id.as_str()));
    render::terminal(&r, false)
}

#[test]
fn the_reference_answers_pass() {
    let report = grade_with(&[], false);
    assert!(report.passed, "{}", render::terminal(&report, false));
    assert_eq!(report.questions.len(), 10);
    insta::assert_snapshot!("fuse_the_reference", render::terminal(&report, false));
}

#[test]
fn a_prediction_missing_or_made_after_the_first_profile_loses_its_point() {
    let missing = grade_with(&[("answers.toml", answers_ex5("", true))], false);
    assert_eq!(
        outcome(&missing, "prediction.made_first"),
        Outcome::Unanswered
    );
    let after_recorded = PREDICTION_EX5.replace("report_existed = false", "report_existed = true");
    let existed = grade_with(
        &[("answers.toml", answers_ex5(&after_recorded, true))],
        false,
    );
    assert_eq!(outcome(&existed, "prediction.made_first"), Outcome::Wrong);
    let late = grade_with(&[], true);
    assert_eq!(outcome(&late, "prediction.made_first"), Outcome::Wrong);
    let mut out = render::terminal(&missing, false);
    for report in [&existed, &late] {
        out.push('\n');
        out.push_str(&only(report, &["prediction.made_first"]));
    }
    insta::assert_snapshot!("fuse_prediction_missing_or_after", out);
}

#[test]
fn a_submission_that_stops_at_stage_1_does_not_pass_on_a_cpu_and_says_what_to_do_next() {
    let mut files = perfect_files();
    files.remove("exercise-5/results/stage2/report.json");
    files.insert(
        "exercise-5/answers.toml".into(),
        answers_ex5(PREDICTION_EX5, false),
    );
    files.insert(
        "exercise-5/results/fused_check.json".into(),
        fused_check_json(false),
    );
    let report = grader().grade_exercise(&submission(files), 5);
    assert!(!report.passed, "{}", render::terminal(&report, false));
    for id in ["stage2.pct_of_roofline_after", "stage2.mechanism"] {
        assert_ne!(outcome(&report, id), Outcome::Right, "{id}");
    }
    let text = render::terminal(&report, false);
    assert!(
        text.contains("slow kernel") && text.contains("write stage 2"),
        "{text}"
    );
    insta::assert_snapshot!("fuse_stage_1_only", text);
}

#[test]
fn mechanisms_the_roofline_refutes_are_wrong_with_the_figures() {
    // Stage 2 "fixed memory traffic": the unfused row ran far below its memory roofline.
    // Stage 1 "fixed a slow kernel": a fusion computes the same math in one pass.
    // The reading given as memory-bound: the table read it as a slow kernel.
    let answers = perfect_ex5()
        .replace(
            "mechanism = \"slow-kernel\"",
            "mechanism = \"memory-traffic\"",
        )
        .replacen(
            "mechanism = \"memory-traffic\"",
            "mechanism = \"slow-kernel\"",
            1,
        )
        .replace("reading = \"slow kernel\"", "reading = \"memory-bound\"");
    let report = grade_with(&[("answers.toml", answers)], false);
    for id in ["stage1.mechanism", "stage2.mechanism", "stage1.reading"] {
        assert_eq!(
            outcome(&report, id),
            Outcome::Wrong,
            "{id}: {}",
            render::terminal(&report, false)
        );
    }
    assert!(!report.passed);
    insta::assert_snapshot!(
        "fuse_refuted_mechanisms",
        only(
            &report,
            &["stage1.reading", "stage1.mechanism", "stage2.mechanism"]
        )
    );
}

#[test]
fn right_answers_in_other_words_and_wrong_ones_that_look_right() {
    // The reading as the report writes it, the mechanism with spaces, "launch overhead" for what
    // a fusion removes (one op fewer to launch): right.
    let other = perfect_ex5()
        .replace("reading = \"slow kernel\"", "reading = \"Slow-Kernel\"")
        .replacen(
            "mechanism = \"memory-traffic\"",
            "mechanism = \"launch overhead\"",
            1,
        )
        .replace("verdict = \"faster\"", "verdict = \"FASTER\"");
    let report = grade_with(&[("answers.toml", other)], false);
    assert!(report.passed, "{}", render::terminal(&report, false));
    // A list of every mechanism, and "wasted work" for a fusion: wrong.
    for said in ["memory-traffic slow-kernel", "wasted-work"] {
        let answers = perfect_ex5().replacen(
            "mechanism = \"memory-traffic\"",
            &format!("mechanism = \"{said}\""),
            1,
        );
        let report = grade_with(&[("answers.toml", answers)], false);
        assert_eq!(
            outcome(&report, "stage1.mechanism"),
            Outcome::Wrong,
            "{said}"
        );
    }
    // An impossible % of roofline (the stage 2 row's figure copied for stage 1's): wrong.
    let (_, fast) = fixture_row(&cpu_stage2_profile(), "fused_bias_gelu_fast");
    let swapped = perfect_ex5().replacen(
        "pct_of_roofline_after = ",
        &format!(
            "pct_of_roofline_after = {:.2}\n# was ",
            fast["pct_of_roofline"].as_f64().unwrap()
        ),
        1,
    );
    let report = grade_with(&[("answers.toml", swapped)], false);
    assert_eq!(
        outcome(&report, "stage1.pct_of_roofline_after"),
        Outcome::Wrong
    );
}

#[test]
fn on_a_gpu_stage_2_is_not_required() {
    // A CUDA profile whose `gelu` row is the unfused activation, and the same run with the row
    // as the fused op (stage 1): no stage 2.
    let unfused = cuda_profile();
    let stage1 = unfused.replace("\"name\": \"gelu\"", "\"name\": \"fused_bias_gelu\"");
    let mut files = perfect_files();
    files.remove("exercise-5/results/stage2/report.json");
    let (_, gelu) = fixture_row(&unfused, "gelu");
    let pct = gelu["pct_of_roofline"].as_f64().unwrap();
    let answers = format!(
        "{PREDICTION_EX5}[fused_check]\nmax_abs_error = 2.4e-7\n[stage1]\npct_of_roofline_before = {pct:.2}\npct_of_roofline_after = {pct:.2}\n\
         reading = \"{}\"\nmechanism = \"launch-overhead\"\n[benchmark]\nverdict = \"faster\"\n",
        cuda_reading(&unfused, "gelu")
    );
    files.insert("exercise-5/answers.toml".into(), answers);
    files.insert(
        "exercise-5/results/fused_check.json".into(),
        fused_check_json(false),
    );
    let stage2 = unfused.replace("\"name\": \"gelu\"", "\"name\": \"fused_bias_gelu_fast\"");
    files.insert("exercise-5/results/unfused/report.json".into(), unfused);
    files.insert("exercise-5/results/stage1/report.json".into(), stage1);
    // Without a stage 2 profile (the exercise runs stage 1 alone on a GPU), and with one left
    // from another run but no stage 2 answers: passed, stage 2 not asked.
    let mut with_stage2 = files.clone();
    with_stage2.insert("exercise-5/results/stage2/report.json".into(), stage2);
    for files in [files, with_stage2] {
        let report = grader().grade_exercise(&submission(files), 5);
        assert!(report.passed, "{}", render::terminal(&report, false));
        assert!(report.questions.iter().all(|q| !q.id.starts_with("stage2")));
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.contains("not required on a GPU")),
            "{:?}",
            report.notes
        );
    }
}

/// The reading a report gives a row, as the table prints it.
fn cuda_reading(report: &str, name: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap();
    row["reading"].as_str().unwrap().replace('-', " ")
}
