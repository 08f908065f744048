//! Exercise 2: is batch 16 faster than batch 8 for the learner's traffic? Graded against the
//! three comparisons of their own results/bench.json: output tokens/s (throughput), P90 TTFT
//! and P90 TPOT (per-request latency), each a ratio with its 95% interval and a verdict. The
//! learner gives the throughput ratio, the three verdicts, and a decision that names which
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

pub fn check(ctx: &mut Ctx<'_>, key: &BenchVerdictKey) {
    let comparisons = ctx.bench("bench").map(|r| (r.file, r.comparisons));
    let of = |metric: &str| -> Result<Comparison, String> {
        let (file, all) = comparisons.as_ref().map_err(Clone::clone)?;
        all.iter().find(|c| c.metric == metric).cloned().ok_or_else(|| {
            format!("cannot be checked: {file} holds no {metric} comparison; run the exercise again (`course run 2`) to write all three")
        })
    };
    let (throughput, ttft, tpot) = (of(THROUGHPUT), of(TTFT), of(TPOT));

    let q = QuestionResult::new("throughput.ratio", "Output tokens/s, batch 16 over batch 8", 1.0);
    let ratio = ctx.number("throughput.ratio");
    ctx.push(match ratio {
        // A ratio of two rates is a positive number; anything else was not read from a run.
        Got::Answered(r) if !(r.is_finite() && r > 0.0) => {
            q.answer(show(r)).wrong(format!("{} cannot be a ratio of two throughputs, which is always above 0; copy it from the output_tokens_per_s comparison", show(r)))
        }
        ratio => {
            let expected = throughput.as_ref().map(|c| c.ratio).map_err(Clone::clone);
            number_question(ratio, expected, key.ratio_tolerance, 0.0, "results/bench.json's output_tokens_per_s comparison", q)
        }
    });

    for (field, label, comparison) in [
        ("throughput.verdict", "Batch 16 against batch 8 on output tokens/s", &throughput),
        ("latency.ttft_p90_verdict", "Batch 16 against batch 8 on the P90 TTFT", &ttft),
        ("latency.tpot_p90_verdict", "Batch 16 against batch 8 on the P90 TPOT", &tpot),
    ] {
        let got = ctx.text(field);
        ctx.push(verdict_question(got, comparison, QuestionResult::new(field, label, 1.0)));
    }

    let meaning = ctx.text("decision.meaning");
    let answer = ctx.text("decision.answer");
    let q = QuestionResult::new("decision", "Is batch 16 faster than batch 8 for your traffic? (which faster, and the answer)", 1.0);
    ctx.push(decision(meaning, answer, [(THROUGHPUT, &throughput), (TTFT, &ttft), (TPOT, &tpot)], q));
}

/// The decision: a meaning of "faster" (one of the three metrics) and the verdict in it.
fn decision(meaning: Got<String>, answer: Got<String>, comparisons: [(&str, &Result<Comparison, String>); 3], q: QuestionResult) -> QuestionResult {
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
    let Some((_, comparison)) = comparisons.into_iter().find(|(m, _)| *m == metric) else {
        return q.wrong(format!("cannot be checked: no {metric} comparison; tell the instructor"));
    };
    let given = match read_verdict(&answer, true) {
        Some(given) => given,
        None if normalised(&answer) == "no" => {
            return q.wrong("\"no\" could mean slower, the same or cannot tell: write \"slower\", \"same\" or \"inconclusive\"")
        }
        None => return q.wrong(not_a_verdict(&answer)),
    };
    match comparison {
        Err(reason) => q.wrong(reason.clone()),
        Ok(c) if c.verdict == given => q.right(format!("matches the benchmark on {metric}: {}", facts(c))),
        Ok(c) => q.wrong(format!("on {metric} the benchmark says \"{}\": {}; {}", c.verdict.as_str(), facts(c), ONLY_WHOLE_INTERVALS)),
    }
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

fn facts(c: &Comparison) -> String {
    c.facts()
}

fn not_a_verdict(text: &str) -> String {
    if normalised(text).contains("noise") {
        format!("\"{text}\" is the old word: write \"same\" when the whole interval lies inside the band, \"inconclusive\" when it reaches across an edge")
    } else {
        format!("\"{text}\" is not a verdict: write \"faster\", \"slower\", \"same\" or \"inconclusive\"")
    }
}

pub(crate) fn verdict_question(got: Got<String>, comparison: &Result<Comparison, String>, q: QuestionResult) -> QuestionResult {
    match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let q = q.answer(text.clone());
            let Some(given) = read_verdict(&text, false) else {
                return q.wrong(not_a_verdict(&text));
            };
            match comparison {
                Err(reason) => q.wrong(reason.clone()),
                Ok(c) if c.verdict == given => q.right(format!("matches the benchmark: {}", facts(c))),
                Ok(c) => q.wrong(format!("the benchmark says \"{}\": {}; {ONLY_WHOLE_INTERVALS}", c.verdict.as_str(), c.facts())),
            }
        }
    }
}

/// Lower case, letters and digits only: "Can't tell!" and "cant tell" read the same.
fn normalised(text: &str) -> String {
    text.trim().to_lowercase().chars().filter(char::is_ascii_alphanumeric).collect()
}

/// A verdict in the learner's words: the three names, or "cannot tell (at this sample size)"
/// and its like for within noise; `yes` for faster where the question is "is it faster?". A
/// negated word ("not faster") is no verdict: it could mean slower or cannot tell.
fn read_verdict(text: &str, yes_is_faster: bool) -> Option<Verdict> {
    if let Some(v) = verdict_from_answer(text) {
        return Some(v);
    }
    match normalised(text).as_str() {
        "cannottell" | "canttell" | "cannottellatthissamplesize" | "canttellatthissamplesize" | "cannotbetold" => Some(Verdict::Inconclusive),
        "thesame" | "sameasa" | "sameasbatch8" => Some(Verdict::Same),
        "yes" if yes_is_faster => Some(Verdict::Faster),
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
        "throughput" | "outputtokenspers" | "outputtokenss" | "outputtokenspersecond" | "tokenspersecond" | "tokenss" | "toks" | "outputthroughput"
        | "outputtokenthroughput" => Meaning::Metric(THROUGHPUT),
        "ttft" | "ttftmsp90" | "p90ttft" | "ttftp90" | "timetofirsttoken" | "p90timetofirsttoken" => Meaning::Metric(TTFT),
        "tpot" | "tpotmsp90" | "p90tpot" | "tpotp90" | "timeperoutputtoken" | "p90timeperoutputtoken" => Meaning::Metric(TPOT),
        "latency" | "perrequestlatency" | "requestlatency" | "p90latency" => Meaning::Latency,
        _ => Meaning::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_in_other_words() {
        assert_eq!(read_verdict("Cannot tell at this sample size", false), Some(Verdict::Inconclusive));
        assert_eq!(read_verdict("can't tell", false), Some(Verdict::Inconclusive));
        assert_eq!(read_verdict("Inconclusive", false), Some(Verdict::Inconclusive));
        assert_eq!(read_verdict("the same", false), Some(Verdict::Same));
        assert_eq!(read_verdict("Within noise", false), None, "the old word says neither same nor cannot tell");
        assert_eq!(read_verdict("yes", true), Some(Verdict::Faster));
        assert_eq!(read_verdict("yes", false), None, "yes answers a question only the decision asks");
        assert_eq!(read_verdict("not faster", true), None, "a negation is no verdict");
        assert_eq!(read_verdict("no difference", false), None, "a hedge: the same (inside the band) or cannot tell?");
    }

    #[test]
    fn meanings_in_other_words() {
        assert!(matches!(read_meaning("Output tokens/s"), Meaning::Metric(THROUGHPUT)));
        assert!(matches!(read_meaning("P90 TTFT"), Meaning::Metric(TTFT)));
        assert!(matches!(read_meaning("time per output token"), Meaning::Metric(TPOT)));
        assert!(matches!(read_meaning("latency"), Meaning::Latency));
        assert!(matches!(read_meaning("speed"), Meaning::Unknown));
    }
}
