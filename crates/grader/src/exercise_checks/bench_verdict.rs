//! Exercise 2: is batch 16 faster than batch 8 for the learner's traffic? Graded against the
//! comparisons of their own results/bench.json, made at two rates: `below` batch 8's measured
//! saturation and `above` it. At each, output tokens/s (throughput), P90 TTFT and P90 TPOT, each
//! a ratio with its 95% interval and a verdict (faster, slower, same, inconclusive), or, for a
//! throughput both runs delivered as it arrived, "set by the arrivals". The learner gives the six
//! verdicts, the throughput ratio above saturation, and a decision there that names which
//! meaning of "faster" it is about.
//!
//! Exercise 5 reuses [`comparison`] and [`verdict_question`] for its single comparison.

use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::key::BenchVerdictKey;
use crate::question_types::number::show;
use crate::report::QuestionResult;
use crate::results::bench_report::{verdict_from_answer, Comparison, Verdict};

/// The metrics of exercise 2's comparisons, as bench.json names them.
const THROUGHPUT: &str = "output_tokens_per_s";
const TTFT: &str = "ttft_ms.p90";
const TPOT: &str = "tpot_ms.p90";

/// Each scenario's answers.toml table and how the feedback names it.
const SCENARIOS: [(&str, &str); 2] = [
    ("below", "below batch 8's saturation"),
    ("above", "above batch 8's saturation"),
];

pub fn check(ctx: &mut Ctx<'_>, key: &BenchVerdictKey) {
    let report = ctx.bench("bench").map(|r| (r.file, r.comparisons));
    let of = |scenario: &str, metric: &str| -> Result<Comparison, String> {
        let (file, all) = report.as_ref().map_err(Clone::clone)?;
        all.iter().find(|c| c.scenario.as_deref() == Some(scenario) && c.metric == metric).cloned().ok_or_else(|| {
            format!(
                "cannot be checked: {file} holds no {metric} comparison {scenario} saturation; run the exercise again (`course run 2`) to write all six"
            )
        })
    };

    for (scenario, where_) in SCENARIOS {
        if scenario == "above" {
            let throughput = of(scenario, THROUGHPUT);
            let q = QuestionResult::new(
                "above.throughput_ratio",
                "Output tokens/s above saturation, batch 16 over batch 8",
                1.0,
            );
            let ratio = ctx.number("above.throughput_ratio");
            ctx.push(match ratio {
                // A ratio of two rates is a positive number; anything else was not read from a run.
                Got::Answered(r) if !(r.is_finite() && r > 0.0) => q.answer(show(r)).wrong(format!(
                    "{} cannot be a ratio of two throughputs, which is always above 0; copy it from the output_tokens_per_s comparison above saturation",
                    show(r)
                )),
                ratio => {
                    let expected = throughput.as_ref().map(|c| c.ratio).map_err(Clone::clone);
                    number_question(ratio, expected, key.ratio_tolerance, 0.0, "results/bench.json's output_tokens_per_s comparison above saturation", q)
                }
            });
        }
        for (field, metric, what) in [
            ("throughput", THROUGHPUT, "output tokens/s"),
            ("ttft_p90", TTFT, "the P90 TTFT"),
            ("tpot_p90", TPOT, "the P90 TPOT"),
        ] {
            let id = format!("{scenario}.{field}");
            let got = ctx.text(&id);
            let q = QuestionResult::new(
                &id,
                format!("Batch 16 against batch 8 on {what}, {where_}"),
                1.0,
            );
            ctx.push(verdict_question(got, &of(scenario, metric), q));
        }
    }

    let meaning = ctx.text("decision.meaning");
    let answer = ctx.text("decision.answer");
    let q = QuestionResult::new(
        "decision",
        "Above saturation: is batch 16 faster than batch 8? (which faster, and the answer)",
        1.0,
    );
    let comparisons = [
        (THROUGHPUT, of("above", THROUGHPUT)),
        (TTFT, of("above", TTFT)),
        (TPOT, of("above", TPOT)),
    ];
    ctx.push(decision(meaning, answer, &comparisons, q));
}

/// The decision: a meaning of "faster" (one of the three metrics) and the verdict in it.
fn decision(
    meaning: Got<String>,
    answer: Got<String>,
    comparisons: &[(&str, Result<Comparison, String>)],
    q: QuestionResult,
) -> QuestionResult {
    let (meaning, answer) = match (meaning, answer) {
        (Got::Unanswered, Got::Unanswered) => return q.unanswered(NOT_ANSWERED),
        (Got::Invalid(reason), _) | (_, Got::Invalid(reason)) => return q.wrong(reason),
        (Got::Unanswered, Got::Answered(answer)) => {
            return q.answer(answer).wrong(
                "say which \"faster\" your answer is about in decision.meaning (throughput, ttft or tpot): batch 16 can be faster in one and slower in another",
            )
        }
        (Got::Answered(meaning), Got::Unanswered) => return q.answer(meaning).unanswered("decision.answer is not answered"),
        (Got::Answered(meaning), Got::Answered(answer)) => (meaning, answer),
    };
    let q = q.answer(format!("{meaning}: {answer}"));
    let metric = match read_meaning(&meaning) {
        Meaning::Metric(metric) => metric,
        Meaning::Latency => {
            return q.wrong(format!(
                "\"{meaning}\" is two figures here, the P90 TTFT and the P90 TPOT, and they can disagree: write ttft or tpot"
            ))
        }
        Meaning::Unknown => return q.wrong(format!("\"{meaning}\" is not one of the three meanings: write throughput, ttft or tpot")),
    };
    let Some((_, comparison)) = comparisons.iter().find(|(m, _)| *m == metric) else {
        return q.wrong(format!(
            "cannot be checked: no {metric} comparison; tell the instructor"
        ));
    };
    if normalised(&answer) == "no" {
        return q.wrong("\"no\" could mean slower, the same or cannot tell: write \"slower\", \"same\" or \"inconclusive\"");
    }
    grade_reading(
        &answer,
        read(&answer, true),
        comparison,
        &format!(" on {metric}"),
        q,
    )
}

/// The comparison of a bench.json, or why there is none.
pub(crate) fn comparison(ctx: &mut Ctx<'_>, role: &str) -> Result<Comparison, String> {
    let report = ctx.bench(role)?;
    report.comparison.ok_or_else(|| {
        format!("cannot be checked: {} holds no comparison; run the benchmark with its comparison (both configurations) again", report.file)
    })
}

const ONLY_WHOLE_INTERVALS: &str =
    "faster or slower needs the whole interval beyond the band of the minimum effect, same needs it inside, and one across an edge is inconclusive";

/// A verdict question: the learner's words against the comparison's verdict.
pub(crate) fn verdict_question(
    got: Got<String>,
    comparison: &Result<Comparison, String>,
    q: QuestionResult,
) -> QuestionResult {
    match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let q = q.answer(text.clone());
            grade_reading(&text, read(&text, false), comparison, "", q)
        }
    }
}

/// What the learner's answer says, against what the benchmark says (`on` names the metric in
/// the feedback, or is empty).
fn grade_reading(
    text: &str,
    reading: Option<Reading>,
    comparison: &Result<Comparison, String>,
    on: &str,
    q: QuestionResult,
) -> QuestionResult {
    let Some(reading) = reading else {
        return q.wrong(not_a_verdict(text));
    };
    let c = match comparison {
        Err(reason) => return q.wrong(reason.clone()),
        Ok(c) => c,
    };
    match (reading, c.set_by_arrivals) {
        (Reading::Arrivals, true) => q.right(format!(
            "matches the benchmark{on}: both runs kept up with the offered rate, so each delivered what arrived ({})",
            c.facts()
        )),
        (Reading::Verdict(given), true) => q.wrong(format!(
            "both runs kept up with the offered rate, so their throughput is the arrival rate ({}): \"{}\" would be a claim about the servers that this run cannot make; write \"arrivals\"",
            c.facts(),
            given.as_str()
        )),
        (Reading::Arrivals, false) => q.wrong(format!(
            "a run here fell behind its arrivals (its requests in flight kept piling up), so the throughput is the servers' own: the benchmark says \"{}\"{on}: {}",
            c.verdict.as_str(),
            c.facts()
        )),
        (Reading::Verdict(given), false) if given == c.verdict => q.right(format!("matches the benchmark{on}: {}", c.facts())),
        (Reading::Verdict(_), false) => q.wrong(format!("the benchmark says \"{}\"{on}: {}; {ONLY_WHOLE_INTERVALS}", c.verdict.as_str(), c.facts())),
    }
}

fn not_a_verdict(text: &str) -> String {
    if normalised(text).contains("noise") {
        format!("\"{text}\" is the old word: write \"same\" when the whole interval lies inside the band, \"inconclusive\" when it reaches across an edge")
    } else {
        format!("\"{text}\" is not a verdict: write \"faster\", \"slower\", \"same\" or \"inconclusive\" (or \"arrivals\" for a throughput the arrivals set)")
    }
}

/// Lower case, letters and digits only: "Can't tell!" and "cant tell" read the same.
fn normalised(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect()
}

/// An answer: one of the four verdicts, or "the arrivals set it".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Verdict(Verdict),
    Arrivals,
}

/// A verdict in the learner's words: the four names, "cannot tell" and its like for
/// inconclusive, "the same" for same, "arrivals" and its like for a throughput the arrivals
/// set; `yes` for faster where the question is "is it faster?". A negation ("not faster") or a
/// hedge ("no difference") is no verdict: it could mean the same or cannot tell.
fn read(text: &str, yes_is_faster: bool) -> Option<Reading> {
    if let Some(v) = verdict_from_answer(text) {
        return Some(Reading::Verdict(v));
    }
    match normalised(text).as_str() {
        "cannottell"
        | "canttell"
        | "cannottellatthissamplesize"
        | "canttellatthissamplesize"
        | "cannotbetold" => Some(Reading::Verdict(Verdict::Inconclusive)),
        "thesame" => Some(Reading::Verdict(Verdict::Same)),
        "arrivals" | "setbythearrivals" | "setbyarrivals" | "thearrivalssetit"
        | "arrivalssetit" | "thearrivalrate" | "arrivalrate" => Some(Reading::Arrivals),
        "yes" if yes_is_faster => Some(Reading::Verdict(Verdict::Faster)),
        _ => None,
    }
}

enum Meaning {
    Metric(&'static str),
    /// "latency" alone: two figures.
    Latency,
    Unknown,
}

fn read_meaning(text: &str) -> Meaning {
    match normalised(text).as_str() {
        "throughput"
        | "outputtokenspers"
        | "outputtokenss"
        | "outputtokenspersecond"
        | "tokenspersecond"
        | "tokenss"
        | "toks"
        | "outputthroughput"
        | "outputtokenthroughput" => Meaning::Metric(THROUGHPUT),
        "ttft"
        | "ttftmsp90"
        | "p90ttft"
        | "ttftp90"
        | "timetofirsttoken"
        | "p90timetofirsttoken" => Meaning::Metric(TTFT),
        "tpot"
        | "tpotmsp90"
        | "p90tpot"
        | "tpotp90"
        | "timeperoutputtoken"
        | "p90timeperoutputtoken" => Meaning::Metric(TPOT),
        "latency" | "perrequestlatency" | "requestlatency" | "p90latency" => Meaning::Latency,
        _ => Meaning::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_in_other_words() {
        let v = |text: &str, yes: bool| read(text, yes);
        assert_eq!(
            v("Cannot tell at this sample size", false),
            Some(Reading::Verdict(Verdict::Inconclusive))
        );
        assert_eq!(
            v("can't tell", false),
            Some(Reading::Verdict(Verdict::Inconclusive))
        );
        assert_eq!(
            v("Inconclusive", false),
            Some(Reading::Verdict(Verdict::Inconclusive))
        );
        assert_eq!(v("the same", false), Some(Reading::Verdict(Verdict::Same)));
        assert_eq!(v("Set by the arrivals", false), Some(Reading::Arrivals));
        assert_eq!(
            v("Within noise", false),
            None,
            "the old word says neither same nor cannot tell"
        );
        assert_eq!(v("yes", true), Some(Reading::Verdict(Verdict::Faster)));
        assert_eq!(
            v("yes", false),
            None,
            "yes answers a question only the decision asks"
        );
        assert_eq!(v("not faster", true), None, "a negation is no verdict");
        assert_eq!(
            v("no difference", false),
            None,
            "a hedge: the same (inside the band) or cannot tell?"
        );
        assert_eq!(
            v("faster slower same inconclusive", false),
            None,
            "a list of every verdict is none of them"
        );
    }

    #[test]
    fn meanings_in_other_words() {
        assert!(matches!(
            read_meaning("Output tokens/s"),
            Meaning::Metric(THROUGHPUT)
        ));
        assert!(matches!(read_meaning("P90 TTFT"), Meaning::Metric(TTFT)));
        assert!(matches!(
            read_meaning("time per output token"),
            Meaning::Metric(TPOT)
        ));
        assert!(matches!(read_meaning("latency"), Meaning::Latency));
        assert!(matches!(read_meaning("speed"), Meaning::Unknown));
    }
}
