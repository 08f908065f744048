//! Exercise 2: "is batch 16 faster than batch 8 for my traffic?", graded against the three
//! comparisons of the learner's bench.json (support::ex2_bench: throughput clearly up, the P90
//! TTFT interval straddling the noise band, the P90 TPOT clearly worse). Each case is a
//! snapshot of the feedback: right, right in other words, wrong answers that look right.

mod support;

use grader::{render, ExerciseReport, Outcome};
use support::*;

fn grade(answers: &str, bench: &str) -> ExerciseReport {
    let mut files = perfect_files();
    files.insert("exercise-2/answers.toml".into(), answers.to_string());
    files.insert("exercise-2/results/bench.json".into(), bench.to_string());
    grader().grade_exercise(&submission(files), 2)
}

fn answers(ratio: &str, throughput: &str, ttft: &str, tpot: &str, meaning: &str, answer: &str) -> String {
    format!(
        "[throughput]\nratio = {ratio}\nverdict = \"{throughput}\"\n[latency]\nttft_p90_verdict = \"{ttft}\"\ntpot_p90_verdict = \"{tpot}\"\n\
         [decision]\nmeaning = \"{meaning}\"\nanswer = \"{answer}\"\n"
    )
}

fn outcome(report: &ExerciseReport, id: &str) -> Outcome {
    report.questions.iter().find(|q| q.id == id).unwrap_or_else(|| panic!("no {id}")).outcome
}

#[test]
fn the_right_answers_pass() {
    let report = grade(PERFECT_EX2, &ex2_bench());
    assert!(report.passed, "{}", render::terminal(&report, false));
    insta::assert_snapshot!("the_right_answers", render::terminal(&report, false));
}

#[test]
fn right_answers_in_other_words() {
    // "Cannot tell" for within noise, the meaning spelled out, "yes" to "is it faster?".
    let report = grade(&answers("1.31", "Faster", "cannot tell at this sample size", "SLOWER", "Output tokens/s", "yes"), &ex2_bench());
    assert!(report.passed, "{}", render::terminal(&report, false));
    let report = grade(&answers("1.305", "faster", "Within noise", "slower", "P90 TTFT", "can't tell"), &ex2_bench());
    assert!(report.passed, "the decision may be about latency, with its own verdict: {}", render::terminal(&report, false));
    insta::assert_snapshot!("right_in_other_words", render::terminal(&report, false));
}

#[test]
fn faster_on_throughput_with_a_straddling_interval_is_wrong() {
    // The ratio says 9% more tokens/s, but the interval reaches below 1: this sample cannot tell.
    let straddling = ex2_bench_json(&[
        ("output_tokens_per_s", "higher", "within_noise", 1.09, (0.97, 1.22)),
        ("ttft_ms.p90", "lower", "within_noise", 0.95, (0.71, 1.24)),
        ("tpot_ms.p90", "lower", "slower", 1.48, (1.33, 1.66)),
    ]);
    let report = grade(&answers("1.09", "faster", "within_noise", "slower", "throughput", "faster"), &straddling);
    assert_eq!(outcome(&report, "throughput.verdict"), Outcome::Wrong);
    assert_eq!(outcome(&report, "decision"), Outcome::Wrong);
    assert!(!report.passed);
    insta::assert_snapshot!("faster_with_a_straddling_interval", render::terminal(&report, false));
}

#[test]
fn an_impossible_ratio_is_wrong() {
    let report = grade(&answers("-1.31", "faster", "within_noise", "slower", "throughput", "faster"), &ex2_bench());
    assert_eq!(outcome(&report, "throughput.ratio"), Outcome::Wrong);
    // A plausible number that is not this run's is wrong too.
    let other = grade(&answers("1.5", "faster", "within_noise", "slower", "throughput", "faster"), &ex2_bench());
    assert_eq!(outcome(&other, "throughput.ratio"), Outcome::Wrong);
    insta::assert_snapshot!("an_impossible_ratio", render::terminal(&report, false));
}

#[test]
fn a_decision_without_its_meaning_or_with_a_vague_one_is_wrong() {
    let mut out = String::new();
    for (meaning, answer) in [("", "faster"), ("latency", "slower"), ("speed", "faster"), ("tpot", "no"), ("tpot", "not faster")] {
        let report = grade(&answers("1.31", "faster", "within_noise", "slower", meaning, answer), &ex2_bench());
        assert_eq!(outcome(&report, "decision"), Outcome::Wrong, "meaning {meaning:?}, answer {answer:?}");
        let mut only = report.clone();
        only.questions.retain(|q| q.id == "decision");
        only.notes.clear();
        out.push_str(&render::terminal(&only, false));
        out.push('\n');
    }
    insta::assert_snapshot!("decisions_without_a_meaning", out);
}

#[test]
fn a_report_without_the_three_comparisons_cannot_be_graded() {
    // An older exercise 2 run: one comparison only.
    let one = bench_json("faster", 1.31, (1.12, 1.52), 40.0);
    let report = grade(PERFECT_EX2, &one);
    assert!(!report.passed);
    for id in ["throughput.ratio", "throughput.verdict", "latency.ttft_p90_verdict", "latency.tpot_p90_verdict", "decision"] {
        assert_eq!(outcome(&report, id), Outcome::Wrong, "{id}");
    }
}
