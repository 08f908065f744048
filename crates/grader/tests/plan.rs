//! Exercise 3's plan, graded by the course's own arithmetic (course_model::plan_rule) against the
//! committed CPU profile (tests/fixtures/reports, a real run on the 2-core AVX-512 machine:
//! matmul 60.9%, lm_head 20.0% at 90.1% of its memory roofline, gelu 13.4% at 0.57 GB/s, 2.0% of
//! the 27.8 GB/s read bandwidth) and the hand-written CUDA one. Each case is a snapshot of the plan's feedback: right, wrong with the arithmetic or the
//! figures shown, flagged.

mod support;

use grader::{render, ExerciseReport, Outcome};
use support::*;

fn grade_plan(report: &str, plan: &str) -> ExerciseReport {
    let mut files = perfect_files();
    files.insert("exercise-3/results/report.json".into(), report.to_string());
    // The top ops right, so the score line shows what the plan alone does to the grade.
    let top = fixture_top3(report);
    let top: Vec<(&str, f64)> = top
        .iter()
        .map(|(n, s)| (n.as_str(), (s * 100.0).round() / 100.0))
        .collect();
    files.insert("exercise-3/answers.toml".into(), perfect_ex3(&top, plan));
    grader().grade_exercise(&submission(files), 3)
}

/// The plan's questions only, so each snapshot shows the case it is named for (the score line
/// is the whole exercise's).
fn plan_feedback(report: &ExerciseReport) -> String {
    render::terminal(&only(report, "plan.", |_| false), false)
}

fn plan(attack: &str, cut: f64, mechanism: &str, why: &str) -> String {
    format!("[plan]\nattack = \"{attack}\"\nexpected_cut_pct = {cut}\nmechanism = \"{mechanism}\"\nwhy = \"{why}\"\n")
}

#[test]
fn the_right_plan() {
    let r = grade_plan(&cpu_profile(), PERFECT_PLAN_CPU);
    for id in [
        "plan.attack",
        "plan.mechanism",
        "plan.expected_cut_pct",
        "plan.why",
    ] {
        assert_eq!(
            question(&r, id).outcome,
            Outcome::Right,
            "{id}: {}",
            question(&r, id).reason
        );
        assert!(!question(&r, id).needs_review, "{id}");
    }
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn a_cut_larger_than_the_share_is_wrong_with_the_arithmetic() {
    // gelu for a 15% cut, with the kernel as the cause: more than its 13.4% can ever give.
    let r = grade_plan(
        &cpu_profile(),
        &plan(
            "gelu",
            15.0,
            "slow-kernel",
            "gelu computes tanh one element at a time, far below its roofline.",
        ),
    );
    let cut = question(&r, "plan.expected_cut_pct");
    assert_eq!(cut.outcome, Outcome::Wrong);
    assert!(
        cut.reason.contains("`gelu` has 13.4% of the step")
            && cut.reason.ends_with("you expect 15.0%"),
        "{}",
        cut.reason
    );
    assert_eq!(question(&r, "plan.mechanism").outcome, Outcome::Right);
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn a_mechanism_the_roofline_refutes_is_wrong_with_the_figures() {
    // The book's old claim: GELU's time is memory traffic. It moves 0.57 GB/s of 27.8.
    let r = grade_plan(
        &cpu_profile(),
        &plan(
            "gelu",
            5.0,
            "memory-traffic",
            "Fusing the bias add into gelu removes a pass over memory.",
        ),
    );
    let mechanism = question(&r, "plan.mechanism");
    assert_eq!(mechanism.outcome, Outcome::Wrong);
    for figure in [
        "ran at 0.566 GB/s",
        "2.0% of the 27.8 GB/s read bandwidth",
        "kernel `candle`",
        "where the memory roof is the lower",
    ] {
        assert!(
            mechanism.reason.contains(figure),
            "{figure}: {}",
            mechanism.reason
        );
    }
    // Memory is its lower roof, but at 2% of it the feedback, like the table, does not call it
    // memory-bound: it quotes the table's reading.
    assert!(
        mechanism
            .reason
            .contains("the table reads it as slow kernel")
            && !mechanism.reason.contains("memory-bound"),
        "{}",
        mechanism.reason
    );
    // The cut is still within the ceiling rule.
    assert_eq!(
        question(&r, "plan.expected_cut_pct").outcome,
        Outcome::Right
    );
    assert!(!r.passed, "a refuted mechanism fails the exercise");
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn lm_head_wasted_work_for_18_percent_is_wrong_with_the_arithmetic() {
    // 7/8 of lm_head's 20%: but skipping positions leaves its 154 MB of weights to read, and
    // it already runs at 90.1% of the memory roofline.
    let r = grade_plan(
        &cpu_profile(),
        &plan("lm_head", 18.0, "wasted-work", "lm_head computes logits for all 8 positions when one is needed, so 7/8 of its time is wasted."),
    );
    let cut = question(&r, "plan.expected_cut_pct");
    assert_eq!(cut.outcome, Outcome::Wrong);
    assert!(
        cut.reason
            .contains("20.0% × (1 − 90.1/100) = 2.0%, you expect 18.0%"),
        "{}",
        cut.reason
    );
    assert!(!r.passed);
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn a_right_answer_in_other_words() {
    // Another op, another mechanism, written loosely, in words the rubric does not list.
    let r = grade_plan(
        &cpu_profile(),
        &plan("GELU", 10.0, "Slow kernel", "It reaches 2% of what this CPU allows for its work because it evaluates tanh element by element; a vectorised pass would win most of its 13% back."),
    );
    for id in ["plan.attack", "plan.mechanism", "plan.expected_cut_pct"] {
        assert_eq!(
            question(&r, id).outcome,
            Outcome::Right,
            "{id}: {}",
            question(&r, id).reason
        );
    }
    assert!(r.passed);
    // An honest cut short of 10% is right too, and the feedback says it is short.
    let r = grade_plan(
        &cpu_profile(),
        &plan(
            "softmax",
            0.2,
            "slow-kernel",
            "A scalar softmax at 3% of its roofline.",
        ),
    );
    assert!(question(&r, "plan.expected_cut_pct")
        .reason
        .contains("short of the 10.0% asked"));
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn a_why_that_argues_against_its_plan_is_flagged_not_rewarded() {
    let against = "Memory traffic is not what slows lm_head down, so do not bother halving the bytes of its weights.";
    let r = grade_plan(
        &cpu_profile(),
        &plan("lm_head", 10.0, "memory-traffic", against),
    );
    let why = question(&r, "plan.why");
    assert!(why.needs_review, "{}", why.reason);
    assert_eq!(
        (why.points, why.max_points),
        (0.0, 0.0),
        "the rubric never gives points"
    );
    assert!(why.reason.contains("negation"), "{}", why.reason);
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn a_bare_keyword_list_is_flagged() {
    let r = grade_plan(
        &cpu_profile(),
        &plan("lm_head", 10.0, "memory-traffic", "bandwidth bf16 share"),
    );
    let why = question(&r, "plan.why");
    assert!(why.needs_review);
    assert_eq!(why.points, 0.0);
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn on_a_gpu_the_same_rule_gives_the_other_answers() {
    // gelu sits at 69.7% of the H200's memory roofline: memory traffic is right there, and a
    // slow kernel is not; lm_head is compute-bound, so skipping unneeded positions can save
    // nearly all of its share.
    let r = grade_plan(
        &cuda_profile(),
        &plan(
            "gelu",
            1.2,
            "memory-traffic",
            "At 70% of the memory roofline gelu is moving bytes: fuse it into one pass.",
        ),
    );
    assert_eq!(
        question(&r, "plan.mechanism").outcome,
        Outcome::Right,
        "{}",
        question(&r, "plan.mechanism").reason
    );
    let r = grade_plan(
        &cuda_profile(),
        &plan("gelu", 1.0, "slow-kernel", "Its kernel is slow."),
    );
    assert_eq!(question(&r, "plan.mechanism").outcome, Outcome::Wrong);
    let mut r = grade_plan(
        &cuda_profile(),
        &plan(
            "lm_head",
            18.0,
            "wasted-work",
            "Logits for 1024 positions, where 8 are read.",
        ),
    );
    assert_eq!(
        question(&r, "plan.expected_cut_pct").outcome,
        Outcome::Right,
        "{}",
        question(&r, "plan.expected_cut_pct").reason
    );
    // (The CPU top ops are wrong on this run; only the plan is shown.)
    r.questions.retain(|q| q.id.starts_with("plan."));
    r.total();
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn launch_overhead_needs_short_calls_and_a_row_without_work_is_flagged() {
    let r = grade_plan(
        &cpu_profile(),
        &plan("matmul", 10.0, "launch-overhead", "Too many small calls."),
    );
    let m = question(&r, "plan.mechanism");
    assert_eq!(m.outcome, Outcome::Wrong);
    assert!(m.reason.contains("µs a call"), "{}", m.reason);
    // `split_heads` declared no work: memory-traffic cannot be shown, wasted-work is flagged.
    let r = grade_plan(
        &cpu_profile(),
        &plan("split_heads", 0.2, "memory-traffic", "It moves bytes."),
    );
    assert_eq!(question(&r, "plan.mechanism").outcome, Outcome::Wrong);
    let r = grade_plan(
        &cpu_profile(),
        &plan(
            "split_heads",
            0.2,
            "wasted-work",
            "It copies q, k and v into a new layout that a strided kernel would not need.",
        ),
    );
    assert!(question(&r, "plan.mechanism").needs_review);
}

#[test]
fn the_prediction_counts_when_made_before_the_report() {
    let prediction_only = |r: &ExerciseReport| {
        let mut only = r.clone();
        only.questions.retain(|q| q.id.starts_with("prediction."));
        only.total();
        render::terminal(&only, false)
    };
    let files = perfect_files();
    let r = grader().grade_exercise(&submission(files.clone()), 3);
    let q = question(&r, "prediction.made_first");
    assert_eq!(q.outcome, Outcome::Right, "{}", q.reason);
    assert!(q.reason.contains("You predicted `matmul` at 50.0%; the table's top op by self CPU time is `matmul` at 60.9%"), "{}", q.reason);
    let mut shown = prediction_only(&r);

    // Made after the report was written.
    let mut late = files.clone();
    let answers = late["exercise-3/answers.toml"].replace("09:03:12", "09:05:12");
    late.insert("exercise-3/answers.toml".into(), answers);
    let r = grader().grade_exercise(&submission(late), 3);
    assert_eq!(
        question(&r, "prediction.made_first").outcome,
        Outcome::Wrong
    );
    shown.push_str(&prediction_only(&r));

    // Made when a report already existed (a second run).
    let mut again = files.clone();
    let answers =
        again["exercise-3/answers.toml"].replace("report_existed = false", "report_existed = true");
    again.insert("exercise-3/answers.toml".into(), answers);
    let r = grader().grade_exercise(&submission(again), 3);
    assert_eq!(
        question(&r, "prediction.made_first").outcome,
        Outcome::Wrong
    );
    shown.push_str(&prediction_only(&r));

    // No modification time (a zip): accepted on the recorded "no report existed", and said so.
    let r = grader().grade_exercise(&grader::Submission::from_texts("exercises", files), 3);
    let q = question(&r, "prediction.made_first");
    assert!(
        q.outcome == Outcome::Right && q.reason.contains("does not record when"),
        "{}",
        q.reason
    );
    shown.push_str(&prediction_only(&r));
    insta::assert_snapshot!(shown);
}
