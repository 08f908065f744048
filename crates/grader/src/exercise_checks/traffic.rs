//! Exercise 7: does a P90 TTFT target hold at a rate R below the knee, and at 2R? Graded from
//! four bench.json files: a lone request's TTFT (which sets the target when the key does not),
//! the calibration sweep (its target and knee), and the runs at R and 2R, each P90 with its 95%
//! interval.
//!
//! A verdict follows from the interval, as the benchmarking chapter teaches: the target holds
//! when the whole interval is at or below it, fails when the whole interval is above it, and
//! otherwise this sample cannot tell (which is the right answer when it is true).

use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::key::TrafficKey;
use crate::question_types::number::show;
use crate::report::QuestionResult;
use crate::results::bench_report::{BenchReport, Knee};

/// The exercise page's rule, used when the key sets no target: P90 TTFT at most this many
/// times a lone request's median TTFT (queueing may add three times the work itself), in whole
/// ms. Measured on the learner's machine, so a knee exists on any machine; a learner never
/// chooses it, and their calibration must have used it.
pub const TARGET_PER_LONE_TTFT: f64 = 4.0;

/// The target the rule gives for a lone request's median TTFT.
pub fn target_for(lone_median_ttft_ms: f64) -> f64 {
    (TARGET_PER_LONE_TTFT * lone_median_ttft_ms)
        .round()
        .max(1.0)
}

/// What a P90 and its interval say about a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    Fails,
    CannotTell,
}

impl Verdict {
    /// The verdict of a 95% interval `[low, high]` against `target`.
    pub fn of(ci: [f64; 2], target: f64) -> Verdict {
        let [low, high] = ci;
        if high <= target {
            Verdict::Holds
        } else if low > target {
            Verdict::Fails
        } else {
            Verdict::CannotTell
        }
    }

    /// The answer written in answers.toml.
    pub fn as_answer(self) -> &'static str {
        match self {
            Verdict::Holds => "yes",
            Verdict::Fails => "no",
            Verdict::CannotTell => "cannot tell",
        }
    }

    /// Reads an answer: yes / no / cannot tell, in a few phrasings. Anything else (a list of
    /// all three, a hedge that names two) is not an answer.
    pub fn from_answer(text: &str) -> Option<Verdict> {
        let words: String = text
            .to_lowercase()
            .replace(['’', '\''], "")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' })
            .collect();
        let phrase = words.split_whitespace().collect::<Vec<_>>().join(" ");
        let holds = [
            "yes",
            "y",
            "true",
            "holds",
            "it holds",
            "the target holds",
            "yes it holds",
            "met",
            "it is met",
        ];
        let fails = [
            "no",
            "n",
            "false",
            "fails",
            "it fails",
            "the target fails",
            "does not hold",
            "it does not hold",
            "doesnt hold",
            "it doesnt hold",
            "no it does not hold",
            "not met",
            "missed",
        ];
        let cannot = [
            "cannot tell",
            "can not tell",
            "cant tell",
            "cannot tell at this sample size",
            "cannot be told",
            "inconclusive",
            "undecided",
            "too close to call",
            "not enough data",
            "unknown",
        ];
        if holds.contains(&phrase.as_str()) {
            Some(Verdict::Holds)
        } else if fails.contains(&phrase.as_str()) {
            Some(Verdict::Fails)
        } else if cannot.contains(&phrase.as_str()) {
            Some(Verdict::CannotTell)
        } else {
            None
        }
    }
}

pub fn check(ctx: &mut Ctx<'_>, key: &TrafficKey) {
    let (target, source) = match key.target_p90_ttft_ms {
        Some(t) => (Ok(t), "the course key's target".to_string()),
        None => (lone_target(ctx), format!("the exercise page's rule ({TARGET_PER_LONE_TTFT} × the lone request's median TTFT in results/lone/bench.json)")),
    };
    let stated = ctx.number("target_p90_ttft_ms");
    let q = QuestionResult::new("target_p90_ttft_ms", "The P90 TTFT target, ms", 1.0);
    ctx.push(number_question(
        stated,
        target.clone(),
        1e-9,
        0.0,
        &source,
        q,
    ));

    let knee = target.clone().and_then(|t| calibration(ctx, t));
    let got = ctx.number("knee_rps");
    let q = QuestionResult::new(
        "knee_rps",
        "The knee your calibration sweep measured, req/s",
        1.0,
    );
    ctx.push(number_question(
        got,
        knee,
        0.0,
        key.p90_rel_tolerance,
        "results/sweep/bench.json",
        q,
    ));

    for (role, file, suffix, what) in [
        (
            "rate",
            "results/rate-1x/bench.json",
            "at_rate",
            "your rate R",
        ),
        ("double", "results/rate-2x/bench.json", "at_double", "2R"),
    ] {
        let measured = p90(ctx, role);
        let got = ctx.number(&format!("p90_ttft_ms_{suffix}"));
        let q = QuestionResult::new(
            format!("p90_ttft_ms_{suffix}"),
            format!("P90 TTFT at {what}, ms"),
            1.0,
        );
        ctx.push(number_question(
            got,
            measured.clone().map(|(p, _)| p),
            0.0,
            key.p90_rel_tolerance,
            file,
            q,
        ));
        let answer = ctx.text(&format!("target_holds_{suffix}"));
        let q = QuestionResult::new(
            format!("target_holds_{suffix}"),
            format!("Does the target hold at {what}?"),
            1.0,
        );
        ctx.push(verdict_question(answer, &measured, &target, q));
    }
}

/// The rule's target from the lone request's run.
fn lone_target(ctx: &mut Ctx<'_>) -> Result<f64, String> {
    let report = ctx.bench("lone")?;
    match report.runs.first().and_then(|r| r.median_ttft_ms) {
        Some(median) => Ok(target_for(median)),
        None => Err(format!(
            "cannot be checked: {} has no median TTFT of a lone request; run the exercise again",
            report.file
        )),
    }
}

fn verdict_question(
    answer: Got<String>,
    measured: &Result<(f64, [f64; 2]), String>,
    target: &Result<f64, String>,
    q: QuestionResult,
) -> QuestionResult {
    match answer {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let q = q.answer(text.clone());
            let Some(given) = Verdict::from_answer(&text) else {
                return q.wrong(format!(
                    "\"{text}\" is not an answer: write \"yes\", \"no\" or \"cannot tell\""
                ));
            };
            let ((p90, ci), target) = match (measured, target) {
                (Err(reason), _) | (_, Err(reason)) => return q.wrong(reason.clone()),
                (Ok(m), Ok(t)) => (*m, *t),
            };
            let truth = Verdict::of(ci, target);
            let fact = format!(
                "P90 TTFT {} ms, 95% interval [{}, {}] ms, against a target of {} ms",
                show(p90),
                show(ci[0]),
                show(ci[1]),
                show(target)
            );
            let why = match truth {
                Verdict::Holds => "the whole interval is within the target, so it holds",
                Verdict::Fails => "the whole interval is above the target, so it fails",
                Verdict::CannotTell => {
                    "the interval straddles the target, so this sample size cannot tell"
                }
            };
            if given == truth {
                q.right(format!("{fact}: {why}"))
            } else if truth == Verdict::CannotTell {
                q.wrong(format!("{fact}: {why}; the P90 alone is not a verdict, so the answer is \"cannot tell\" (or measure more requests)"))
            } else {
                q.wrong(format!(
                    "{fact}: {why}; the answer is \"{}\"",
                    truth.as_answer()
                ))
            }
        }
    }
}

/// The knee of the calibration sweep, once its target is checked to be the exercise's.
fn calibration(ctx: &mut Ctx<'_>, target: f64) -> Result<f64, String> {
    let report: BenchReport = ctx.bench("sweep")?;
    let Some(sweep) = report.sweep else {
        return Err(format!(
            "cannot be checked: {} holds no sweep; run the exercise again (it calibrates first)",
            report.file
        ));
    };
    let on_target = sweep.bounds.len() == 1
        && sweep.bounds.iter().all(|b| {
            b.metric == "ttft_ms" && b.percentile == 90.0 && (b.bound_ms - target).abs() < 1e-9
        });
    if !on_target {
        let used: Vec<String> = sweep
            .bounds
            .iter()
            .map(|b| format!("P{} {} ≤ {} ms", b.percentile, b.metric, show(b.bound_ms)))
            .collect();
        return Err(format!(
            "the calibration in {} was against {}, not the exercise's P90 TTFT ≤ {} ms: run the exercise again with --target-ms {}",
            report.file,
            used.join(" and "),
            show(target),
            show(target)
        ));
    }
    match sweep.knee {
        Knee::At(k) => Ok(k),
        Knee::Above(r) => Err(format!("cannot be checked: in {} the target held at every rate up to {} req/s, so the knee is beyond the sweep: run it again with higher --sweep-rates", report.file, show(r))),
        Knee::Below(r) => Err(format!("cannot be checked: in {} the target failed already at {} req/s: run it again with lower --sweep-rates", report.file, show(r))),
    }
}

/// P90 TTFT of the (first) run of a bench.json, with its 95% interval.
fn p90(ctx: &mut Ctx<'_>, role: &str) -> Result<(f64, [f64; 2]), String> {
    let report = ctx.bench(role)?;
    let Some(run) = report.runs.first() else {
        return Err(format!("cannot be checked: {} holds no run", report.file));
    };
    match (run.p90_ttft_ms, run.p90_ttft_ci95) {
        (Some(p), Some(ci)) => Ok((p, ci)),
        (None, _) => Err(format!("cannot be checked: run `{}` of {} has no TTFT figures (did every request fail?)", run.label, report.file)),
        (Some(_), None) => Err(format!("cannot be checked: run `{}` of {} has no interval for its P90 TTFT; run the exercise again", run.label, report.file)),
    }
}
