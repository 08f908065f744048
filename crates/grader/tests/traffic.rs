//! Exercise 7's grading, adversarially: the verdicts follow from the P90 intervals against the
//! key's target; a right answer in other words passes; a plausible wrong one (the point
//! estimate read without its interval, a list of every answer, the learner's own target, a
//! calibration against another target) fails with the figures that show why.

mod support;

use course_model::traffic::{RateRule, Verdict, RATE_RULE};
use grader::{render, ExerciseReport};
use std::collections::BTreeMap;
use support::*;

/// The perfect submission's exercise 7 with some files replaced (`None` removes one).
fn report7(changes: &[(&str, Option<String>)]) -> ExerciseReport {
    let mut files: BTreeMap<String, String> = perfect_files();
    for (k, v) in changes {
        let path = format!("exercise-7/{k}");
        match v {
            Some(v) => files.insert(path, v.clone()),
            None => files.remove(&path),
        };
    }
    grader()
        .grade_all(&submission(files))
        .into_iter()
        .find(|r| r.exercise == 7)
        .expect("exercise 7 is graded")
}

/// [`report7`] with replaced files only, rendered for the terminal.
fn grade7(changes: &[(&str, String)]) -> String {
    let changes: Vec<(&str, Option<String>)> =
        changes.iter().map(|(k, v)| (*k, Some(v.clone()))).collect();
    render::terminal(&report7(&changes), false)
}

fn answers(target: &str, knee: &str, at_rate: (&str, &str), at_double: (&str, &str)) -> String {
    format!(
        "target_p90_ttft_ms = {target}\nknee_rps = {knee}\np90_ttft_ms_at_rate = {}\ntarget_holds_at_rate = \"{}\"\np90_ttft_ms_at_double = {}\ntarget_holds_at_double = \"{}\"\n",
        at_rate.0, at_rate.1, at_double.0, at_double.1
    )
}

#[test]
fn the_verdict_is_read_from_the_interval() {
    assert_eq!(Verdict::of([150.0, 230.0], 500.0), Verdict::Holds);
    assert_eq!(
        Verdict::of([450.0, 500.0], 500.0),
        Verdict::Holds,
        "an interval ending on the target meets it"
    );
    assert_eq!(Verdict::of([501.0, 900.0], 500.0), Verdict::Fails);
    assert_eq!(Verdict::of([420.0, 610.0], 500.0), Verdict::CannotTell);
}

#[test]
fn right_answers_in_other_words_are_read_and_lists_are_not() {
    for (text, verdict) in [
        ("Yes", Verdict::Holds),
        ("it holds.", Verdict::Holds),
        ("NO", Verdict::Fails),
        ("it doesn't hold", Verdict::Fails),
        ("does not hold", Verdict::Fails),
        ("cannot tell", Verdict::CannotTell),
        ("Can't tell", Verdict::CannotTell),
        ("cannot tell at this sample size", Verdict::CannotTell),
        ("inconclusive", Verdict::CannotTell),
    ] {
        assert_eq!(Verdict::from_answer(text), Some(verdict), "{text:?}");
    }
    for text in [
        "yes no cannot tell",
        "yes or no",
        "maybe",
        "holds, probably not",
        "not yes",
        "",
    ] {
        assert_eq!(Verdict::from_answer(text), None, "{text:?} is no answer");
    }
}

#[test]
fn the_perfect_answers_pass() {
    insta::assert_snapshot!(grade7(&[]));
}

#[test]
fn a_straddling_p90_is_cannot_tell_and_the_point_estimate_alone_is_wrong() {
    // P90 495 ms is under the 500 ms target, but its interval reaches 640: this sample cannot tell.
    let straddling = ex7_run_json(8.0, 495.0, (380.0, 640.0));
    let point_read = answers("500", "5.2", ("180", "yes"), ("495", "yes"));
    insta::assert_snapshot!(
        "straddle_read_as_yes",
        grade7(&[
            ("results/rate-2x/bench.json", straddling.clone()),
            ("answers.toml", point_read)
        ])
    );
    let right = answers(
        "500",
        "5.2",
        ("180", "yes"),
        ("495", "cannot tell at this sample size"),
    );
    let report = report7(&[
        ("results/rate-2x/bench.json", Some(straddling)),
        ("answers.toml", Some(right)),
    ]);
    assert!(report.passed, "{}", render::terminal(&report, false));
}

#[test]
fn a_keyword_list_and_a_wrong_verdict_fail_with_the_figures() {
    let listed = answers("500", "5.2", ("180", "yes no cannot tell"), ("900", "yes"));
    insta::assert_snapshot!(
        "keyword_list_and_wrong_verdict",
        grade7(&[("answers.toml", listed)])
    );
}

#[test]
fn the_learner_cannot_choose_the_target() {
    // The rule gives 4 × the lone request's median TTFT (125 ms): 500 ms. Their own lenient
    // target, and a calibration run against it, are both refused.
    let lenient = answers("1000", "9.8", ("180", "yes"), ("900", "yes"));
    let sweep = ex7_sweep_json(
        1000.0,
        8.0,
        serde_json::json!({"at": 9.8}),
        Some((8.9, 10.6)),
    );
    insta::assert_snapshot!(
        "own_target",
        grade7(&[
            ("answers.toml", lenient),
            ("results/sweep/bench.json", sweep),
            // R and 2R by the rule for that sweep (it held up to 8 req/s).
            (
                "results/rate-1x/bench.json",
                ex7_run_json(8.0, 180.0, (150.0, 230.0))
            ),
            (
                "results/rate-2x/bench.json",
                ex7_run_json(16.0, 900.0, (700.0, 1200.0))
            ),
        ])
    );
}

#[test]
fn a_knee_beyond_the_sweep_or_a_missing_calibration_cannot_be_checked() {
    let beyond = ex7_sweep_json(
        500.0,
        32.0,
        serde_json::json!({"above": 32.0}),
        Some((32.0, 32.0)),
    );
    let report = grade7(&[("results/sweep/bench.json", beyond)]);
    assert!(
        report.contains("held at every rate up to 32 req/s"),
        "{report}"
    );
    let missing = report7(&[("results/sweep/bench.json", None)]);
    let shown = render::terminal(&missing, false);
    assert!(
        !missing.passed && shown.contains("results/sweep/bench.json"),
        "{shown}"
    );
}

#[test]
fn r_is_the_highest_sweep_rate_that_held_and_2r_is_above_it() {
    // A doubling sweep that held at 1, 2 and 4 req/s and failed at 8: R = 4, 2R = 8.
    let rule = RateRule::from_sweep([(1.0, true), (2.0, true), (4.0, true), (8.0, false)]).unwrap();
    assert_eq!(rule.rate(), 4.0);
    assert_eq!(rule.check(4.0, 8.0), Ok(()));
    assert_eq!(
        rule.check(3.0, 6.0),
        Ok(()),
        "a lower R whose 2R is still above 4"
    );
    for (rate, double) in [(2.0, 4.0), (5.0, 10.0), (4.0, 7.0)] {
        assert!(rule.check(rate, double).is_err(), "R {rate}, 2R {double}");
    }
    // The target held at every rate tried: the last one is R.
    let all = RateRule::from_sweep([(1.0, true), (2.0, true)]).unwrap();
    assert_eq!(all.rate(), 2.0);
    // It failed at the first: there is no R, and the reason says what to run.
    let none = RateRule::from_sweep([(1.0, false)]).unwrap_err();
    assert!(none.contains("--sweep-rates"), "{none}");
}

#[test]
fn runs_at_rates_off_the_rule_do_not_answer_the_question() {
    // `--rate 2` against a sweep that held up to 4 req/s: 2R = 4 is not above it, so neither
    // verdict counts, however well it reads its interval.
    let report = report7(&[
        (
            "results/rate-1x/bench.json",
            Some(ex7_run_json(2.0, 180.0, (150.0, 230.0))),
        ),
        (
            "results/rate-2x/bench.json",
            Some(ex7_run_json(4.0, 900.0, (700.0, 1200.0))),
        ),
    ]);
    assert!(!report.passed);
    let shown = render::terminal(&report, false);
    assert!(
        shown.contains("2R = 4 req/s is not above 4 req/s") && shown.contains(RATE_RULE),
        "{shown}"
    );
    insta::assert_snapshot!("rates_off_the_rule", shown);
}
