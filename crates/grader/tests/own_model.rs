//! Exercise 8 ("Your own model"): exercise 3's questions on a profile of a Llama-family model,
//! graded by the same rule. The fixture is a real run of solution 8 on `synthetic-smollm2-135m`.

mod support;

use grader::report::{ExerciseReport, Outcome};
use support::*;

fn grade(answers: String) -> ExerciseReport {
    let mut files = perfect_files();
    files.insert("exercise-8/answers.toml".into(), answers);
    grader().grade_exercise(&submission(files), 8)
}

fn with_plan(plan: &str) -> String {
    let top: Vec<(String, f64)> = fixture_top3(&llama_profile())
        .into_iter()
        .map(|(n, s)| (n, (s * 100.0).round() / 100.0))
        .collect();
    let top: Vec<(&str, f64)> = top.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    perfect_ex3(&top, plan)
}

fn plan(attack: &str, cut: f64, mechanism: &str, why: &str) -> String {
    format!("[plan]\nattack = \"{attack}\"\nexpected_cut_pct = {cut}\nmechanism = \"{mechanism}\"\nwhy = \"{why}\"\n")
}

/// The plan's questions, as the learner reads them.
fn plan_feedback(r: &ExerciseReport) -> String {
    r.questions
        .iter()
        .filter(|q| q.id.starts_with("plan."))
        .map(|q| {
            format!(
                "{} [{:?}] {}\n    {}",
                q.id,
                q.outcome,
                q.answer.as_deref().unwrap_or("-"),
                q.reason
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_llama_profiles_top_three_and_plan_pass() {
    let r = grade(perfect_ex8());
    assert!(r.passed, "{:#?}", r.questions);
    let top: Vec<String> = fixture_top3(&llama_profile())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        top,
        ["matmul", "lm_head", "rope"],
        "the fixture's top three"
    );
}

#[test]
fn a_cut_above_the_ops_share_breaks_the_ceiling_rule() {
    // rope is 5.3% of the step: no fix of it can cut 10%.
    let r = grade(with_plan(&plan(
        "rope",
        10.0,
        "slow-kernel",
        "rope runs at 3% of its roofline in candle's kernel",
    )));
    let cut = r
        .questions
        .iter()
        .find(|q| q.id == "plan.expected_cut_pct")
        .unwrap();
    assert_eq!(cut.outcome, Outcome::Wrong, "{}", cut.reason);
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn a_mechanism_asked_of_a_row_without_a_roofline_cannot_be_shown() {
    // split_heads declared no work: its row has no roofline, so memory traffic cannot be shown.
    let r = grade(with_plan(&plan(
        "split_heads",
        0.5,
        "memory-traffic",
        "it copies the heads into a new layout",
    )));
    let mechanism = r
        .questions
        .iter()
        .find(|q| q.id == "plan.mechanism")
        .unwrap();
    assert_ne!(mechanism.outcome, Outcome::Right, "{}", mechanism.reason);
    insta::assert_snapshot!(plan_feedback(&r));
}

#[test]
fn exercise_3s_answers_copied_over_do_not_pass() {
    // GPT-2's top three and shares are not this model's: gelu is no row of a Llama-family
    // profile, and matmul's share differs.
    let r = grade(perfect_ex3_cpu());
    let outcome = |id: &str| r.questions.iter().find(|q| q.id == id).unwrap().outcome;
    assert_eq!(
        outcome("top_ops.0.name"),
        Outcome::Right,
        "matmul tops both"
    );
    assert_eq!(outcome("top_ops.0.share_pct"), Outcome::Wrong);
    assert_eq!(outcome("top_ops.2.name"), Outcome::Wrong);
    assert!(!r.passed, "{:#?}", r.questions);
}

#[test]
fn the_right_mechanism_in_other_words_is_still_right() {
    let why = "About two thirds of each step is the layer products streaming weights from DRAM at 20 GB/s, close to the 32 GB/s \
               ceiling; storing them as bfloat16 would read half as much.";
    let r = grade(with_plan(&plan("matmul", 10.0, "memory-traffic", why)));
    for id in ["plan.attack", "plan.mechanism", "plan.expected_cut_pct"] {
        let q = r.questions.iter().find(|q| q.id == id).unwrap();
        assert_eq!(q.outcome, Outcome::Right, "{id}: {}", q.reason);
    }
}
