//! Exercise 2: "is batch 16 faster than batch 8 for my traffic?", graded against the six
//! comparisons of the learner's bench.json (support::ex2_bench: below saturation the arrivals
//! set the throughput, the P90 TTFT straddles the band, the P90 TPOT is clearly worse; above it
//! the throughput is clearly up, the P90 TTFT inconclusive, the P90 TPOT clearly worse). Each
//! case is a snapshot of the feedback: right, right in other words, wrong answers that look right.

mod support;

use grader::{render, ExerciseReport, Outcome};
use support::*;

fn grade(answers: &str, bench: &str) -> ExerciseReport {
    let mut files = perfect_files();
    files.insert("exercise-2/answers.toml".into(), answers.to_string());
    files.insert("exercise-2/results/bench.json".into(), bench.to_string());
    grader().grade_exercise(&submission(files), 2)
}

/// Answers: below (throughput, ttft, tpot), the ratio, above (throughput, ttft, tpot), the
/// decision (meaning, answer).
fn answers(below: [&str; 3], ratio: &str, above: [&str; 3], meaning: &str, answer: &str) -> String {
    format!(
        "[below]\nthroughput = \"{}\"\nttft_p90 = \"{}\"\ntpot_p90 = \"{}\"\n[above]\nthroughput_ratio = {ratio}\nthroughput = \"{}\"\n\
         ttft_p90 = \"{}\"\ntpot_p90 = \"{}\"\n[decision]\nmeaning = \"{meaning}\"\nanswer = \"{answer}\"\n",
        below[0], below[1], below[2], above[0], above[1], above[2]
    )
}

const BELOW: [&str; 3] = ["arrivals", "inconclusive", "slower"];
const ABOVE: [&str; 3] = ["faster", "inconclusive", "slower"];

fn outcome(report: &ExerciseReport, id: &str) -> Outcome {
    report
        .questions
        .iter()
        .find(|q| q.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
        .outcome
}

#[test]
fn the_right_answers_pass() {
    let report = grade(PERFECT_EX2, &ex2_bench());
    assert!(report.passed, "{}", render::terminal(&report, false));
    assert_eq!(
        report.questions.len(),
        8,
        "six verdicts, the ratio and the decision"
    );
    insta::assert_snapshot!("the_right_answers", render::terminal(&report, false));
}

#[test]
fn right_answers_in_other_words() {
    // "Set by the arrivals", "cannot tell" for inconclusive, the meaning spelled out, "yes" to
    // "is it faster?".
    let other_words = answers(
        [
            "Set by the arrivals",
            "cannot tell at this sample size",
            "SLOWER",
        ],
        "1.305",
        ["Faster", "can't tell", "slower"],
        "Output tokens/s",
        "yes",
    );
    let report = grade(&other_words, &ex2_bench());
    assert!(report.passed, "{}", render::terminal(&report, false));
    let latency = grade(
        &answers(BELOW, "1.31", ABOVE, "P90 TTFT", "inconclusive"),
        &ex2_bench(),
    );
    assert!(
        latency.passed,
        "the decision may be about TTFT, with its own verdict: {}",
        render::terminal(&latency, false)
    );
    insta::assert_snapshot!("right_in_other_words", render::terminal(&report, false));
}

#[test]
fn a_verdict_about_the_servers_where_the_arrivals_set_the_throughput_is_wrong() {
    // Below saturation both servers delivered what arrived: "same" or "inconclusive" would claim
    // something about the servers; "arrivals" where batch 8 fell behind is wrong too.
    for said in ["same", "inconclusive", "faster"] {
        let report = grade(
            &answers(
                [said, "inconclusive", "slower"],
                "1.31",
                ABOVE,
                "tpot",
                "slower",
            ),
            &ex2_bench(),
        );
        assert_eq!(
            outcome(&report, "below.throughput"),
            Outcome::Wrong,
            "{said}"
        );
    }
    let report = grade(
        &answers(
            BELOW,
            "1.31",
            ["arrivals", "inconclusive", "slower"],
            "tpot",
            "slower",
        ),
        &ex2_bench(),
    );
    assert_eq!(outcome(&report, "above.throughput"), Outcome::Wrong);
    let mut only = report.clone();
    only.questions.retain(|q| q.id.ends_with("throughput"));
    insta::assert_snapshot!(
        "arrivals_where_they_did_not_set_it",
        render::terminal(&only, false)
    );
}

#[test]
fn faster_on_throughput_with_a_straddling_interval_is_wrong() {
    // The ratio says 9% more tokens/s above saturation, but the interval reaches below 1: this
    // run cannot tell. And the interval [0.80, 0.97] of the TTFT leaves out 1 without clearing
    // the band: inconclusive, not faster.
    let straddling = ex2_bench_json(&[
        (
            "below",
            "output_tokens_per_s",
            "higher",
            "arrivals",
            1.01,
            (0.93, 1.09),
        ),
        (
            "below",
            "ttft_ms.p90",
            "lower",
            "inconclusive",
            0.95,
            (0.71, 1.24),
        ),
        (
            "below",
            "tpot_ms.p90",
            "lower",
            "slower",
            1.48,
            (1.33, 1.66),
        ),
        (
            "above",
            "output_tokens_per_s",
            "higher",
            "inconclusive",
            1.09,
            (0.97, 1.22),
        ),
        (
            "above",
            "ttft_ms.p90",
            "lower",
            "inconclusive",
            0.88,
            (0.80, 0.97),
        ),
        (
            "above",
            "tpot_ms.p90",
            "lower",
            "slower",
            1.62,
            (1.40, 1.88),
        ),
    ]);
    let report = grade(
        &answers(
            BELOW,
            "1.09",
            ["faster", "faster", "slower"],
            "throughput",
            "faster",
        ),
        &straddling,
    );
    assert_eq!(outcome(&report, "above.throughput"), Outcome::Wrong);
    assert_eq!(outcome(&report, "above.ttft_p90"), Outcome::Wrong);
    assert_eq!(outcome(&report, "decision"), Outcome::Wrong);
    assert!(!report.passed);
    insta::assert_snapshot!(
        "faster_with_a_straddling_interval",
        render::terminal(&report, false)
    );
}

#[test]
fn an_impossible_ratio_is_wrong() {
    let report = grade(
        &answers(BELOW, "-1.31", ABOVE, "tpot", "slower"),
        &ex2_bench(),
    );
    assert_eq!(outcome(&report, "above.throughput_ratio"), Outcome::Wrong);
    // A plausible number that is not this run's is wrong too.
    let other = grade(
        &answers(BELOW, "1.5", ABOVE, "tpot", "slower"),
        &ex2_bench(),
    );
    assert_eq!(outcome(&other, "above.throughput_ratio"), Outcome::Wrong);
    insta::assert_snapshot!("an_impossible_ratio", render::terminal(&report, false));
}

#[test]
fn a_decision_without_its_meaning_or_with_a_vague_one_is_wrong() {
    let mut out = String::new();
    for (meaning, answer) in [
        ("", "faster"),
        ("latency", "slower"),
        ("speed", "faster"),
        ("tpot", "no"),
        ("tpot", "not faster"),
        ("tpot", "within noise"),
    ] {
        let report = grade(
            &answers(BELOW, "1.31", ABOVE, meaning, answer),
            &ex2_bench(),
        );
        assert_eq!(
            outcome(&report, "decision"),
            Outcome::Wrong,
            "meaning {meaning:?}, answer {answer:?}"
        );
        let mut only = report.clone();
        only.questions.retain(|q| q.id == "decision");
        only.notes.clear();
        out.push_str(&render::terminal(&only, false));
        out.push('\n');
    }
    insta::assert_snapshot!("decisions_without_a_meaning", out);
}

#[test]
fn a_report_without_the_six_comparisons_cannot_be_graded() {
    // An older exercise 2 run: one comparison, no scenarios.
    let one = bench_json("faster", 1.31, (1.12, 1.52), 40.0);
    let report = grade(PERFECT_EX2, &one);
    assert!(!report.passed);
    for q in &report.questions {
        assert_eq!(q.outcome, Outcome::Wrong, "{}", q.id);
    }
}
