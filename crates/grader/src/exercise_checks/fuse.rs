//! Exercise 5, the whole story from the learner's own reports: the prediction made before the
//! first profile; the fused ops are correct (results/fused_check.json); what moved at stage 1
//! (the fusion: the unfused `gelu` row of results/unfused/report.json against the
//! `fused_bias_gelu` row of results/stage1/report.json), what the roofline said of the unfused
//! row (its reading) and what a fusion removes; what moved at stage 2 (the kernel fix,
//! `fused_bias_gelu_fast` in results/stage2/report.json) and the mechanism it fixed (judged by
//! `crate::plan_rule` on the unfused row, so the answer follows the learner's device); and the
//! end-to-end benchmark's verdict.
//!
//! On a CPU stage 2 is required: fusion alone leaves a slow kernel as it was, and a submission
//! that stops there is told what stage 1 showed and what the roofline points to next. On a GPU,
//! where fusing removes a launch and both stages launch one kernel, stage 2 is not required: the
//! exercise runs stage 1 alone there, and stage 2's questions are graded only where answered.

use super::bench_verdict::{comparison, verdict_question};
use super::plan::mechanism_question;
use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::key::{FuseKey, MechanismKey};
use crate::plan_rule::{figure, pct, Mechanism};
use crate::question_types::number::show;
use crate::report::QuestionResult;
use crate::results::profile_report::{ProfileReport, RankedOp};
use profiler::reading::Reading;

/// The rows the exercise's ops write.
const UNFUSED: &str = "gelu";
const STAGE1: &str = "fused_bias_gelu";
const STAGE2: &str = "fused_bias_gelu_fast";

pub fn check(ctx: &mut Ctx<'_>, key: &FuseKey, mechanism: &MechanismKey) {
    let unfused = ctx.profile("profile_before");
    let stage1 = ctx.profile("profile_stage1");
    // Written only once stage 2 is: its absence is what stage 2's questions grade, not a problem.
    let stage2 = if ctx.has_result("profile_stage2") {
        ctx.profile("profile_stage2")
    } else {
        Err("results/stage2/report.json is not written".to_string())
    };
    if let Ok(p) = unfused.as_ref().or(stage1.as_ref()) {
        ctx.report.device = Some(p.device.name().to_string());
    }
    let on_gpu = unfused
        .as_ref()
        .is_ok_and(|p| p.device == formats::report::DeviceKind::Cuda);
    let row = |profile: &Result<ProfileReport, String>, name: &str| -> Result<RankedOp, String> {
        let p = profile.as_ref().map_err(Clone::clone)?;
        p.find(name).map(|(_, r)| r.clone()).ok_or_else(|| {
            format!(
                "`{name}` is not a row of {}: run the exercise again (`course run 5`)",
                p.file
            )
        })
    };
    let (gelu, fused, fast) = (
        row(&unfused, UNFUSED),
        row(&stage1, STAGE1),
        row(&stage2, STAGE2),
    );

    let beside = match (&gelu, &fused) {
        (Ok(g), Ok(f)) => format!("Stage 1 measured: {}", moved(g, f)),
        _ => String::new(),
    };
    let shown = match (
        ctx.text("prediction.row_time"),
        ctx.text("prediction.pct_of_roofline"),
    ) {
        (Got::Answered(time), Got::Answered(roof)) => {
            Got::Answered(format!("row time {time}, % of roofline {roof}"))
        }
        (Got::Invalid(reason), _) | (_, Got::Invalid(reason)) => Got::Invalid(reason),
        _ => Got::Unanswered,
    };
    super::prediction::made_first(
        ctx,
        shown,
        1.0,
        "profile",
        "results/unfused/report.json",
        &beside,
        "`cargo run -p exercise-5` (or `course run 5`)",
    );

    // Correctness, from the file alone.
    let check = ctx.fused_check("fused_check");
    let q = QuestionResult::new(
        "fused_check.correct",
        format!(
            "Your fused ops match the unfused ops (≤ {})",
            show(key.max_abs_error_limit)
        ),
        1.0,
    );
    let q = match &check {
        Err(reason) => q.wrong(reason.clone()),
        Ok(f) if f.max_abs_error <= key.max_abs_error_limit => {
            let ops: Vec<String> = f
                .stages
                .iter()
                .map(|s| format!("`{}` {}", s.op, show(s.max_abs_error)))
                .collect();
            q.right(format!(
                "largest difference {} ({})",
                show(f.max_abs_error),
                ops.join(", ")
            ))
        }
        Ok(f) => q.wrong(format!(
            "largest difference {} is over the limit of {}: fix the op before measuring it",
            show(f.max_abs_error),
            show(key.max_abs_error_limit)
        )),
    };
    ctx.push(q);
    let got = ctx.number("fused_check.max_abs_error");
    let expected = check
        .as_ref()
        .map(|f| f.max_abs_error)
        .map_err(Clone::clone);
    let q = QuestionResult::new(
        "fused_check.max_abs_error",
        "The largest difference you measured",
        1.0,
    );
    ctx.push(number_question(
        got,
        expected,
        0.0,
        key.error_rel_tolerance,
        "results/fused_check.json",
        q,
    ));

    // Stage 1: the fusion.
    if let (Ok(g), Ok(f)) = (&gelu, &fused) {
        ctx.report
            .notes
            .push(format!("Stage 1, what moved: {}", moved(g, f)));
    }
    roofline_question(
        ctx,
        "stage1.pct_of_roofline_before",
        "The unfused `gelu` row's % of its roofline",
        &gelu,
        key,
    );
    roofline_question(
        ctx,
        "stage1.pct_of_roofline_after",
        "Your `fused_bias_gelu` row's % of its roofline",
        &fused,
        key,
    );
    let got = ctx.text("stage1.reading");
    ctx.push(reading_question(
        got,
        &gelu,
        QuestionResult::new(
            "stage1.reading",
            "What the roofline said held the unfused `gelu` row back (its Reading)",
            1.0,
        ),
    ));
    let got = ctx.text("stage1.mechanism");
    ctx.push(fusion_question(
        got,
        &gelu,
        &fused,
        on_gpu,
        QuestionResult::new("stage1.mechanism", "What a fusion removes", 1.0),
    ));

    // Stage 2: the kernel fix, required where fusion alone cannot fix the row. On a GPU it is
    // not asked (the exercise runs stage 1 alone there); stage 2 answers given anyway, beside a
    // stage 2 profile, are graded.
    let stage2_unanswered = matches!(ctx.number("stage2.pct_of_roofline_after"), Got::Unanswered)
        && matches!(ctx.text("stage2.mechanism"), Got::Unanswered);
    match (&fast, on_gpu) {
        (_, true) if fast.is_err() || stage2_unanswered => ctx.report.notes.push(
            "Stage 2 is not required on a GPU: there the fusion itself removes a launch, and stage 2 runs the same kernel.".to_string(),
        ),
        (Err(_), _) => {
            let showed = match (&gelu, &fused) {
                (Ok(g), Ok(f)) => format!("stage 1 showed {}; ", moved(g, f)),
                _ => String::new(),
            };
            let reading = gelu.as_ref().ok().and_then(|g| g.reading).map_or("its Reading".to_string(), |r| format!("\"{r}\""));
            let next = format!(
                "{showed}the unfused row reads {reading}: its time is the per-element math, which a pass less over memory leaves as it was. \
                 The roofline points at the kernel: write stage 2 (FastFusedBiasGelu in src/fused.rs) and run `course run 5` again"
            );
            ctx.report.notes.push(format!("Stage 2 is not done: {next}."));
            for (id, label) in [("stage2.pct_of_roofline_after", "Your `fused_bias_gelu_fast` row's % of its roofline"), ("stage2.mechanism", "What the kernel fix addressed")] {
                let answered = !matches!(ctx.text(id), Got::Unanswered);
                let q = QuestionResult::new(id, label, 1.0);
                ctx.push(if answered { q.wrong(format!("results/stage2/report.json is missing: {next}")) } else { q.unanswered(next.clone()) });
            }
        }
        (Ok(f2), _) => {
            ctx.report.notes.push(format!("Stage 2, what moved: {}", gelu.as_ref().map_or_else(|e| e.clone(), |g| moved(g, f2))));
            roofline_question(ctx, "stage2.pct_of_roofline_after", "Your `fused_bias_gelu_fast` row's % of its roofline", &fast, key);
            let got = ctx.text("stage2.mechanism");
            let q = QuestionResult::new("stage2.mechanism", "What the kernel fix addressed (judged on the unfused `gelu` row)", 1.0);
            let (q, _) = mechanism_question(got, unfused.as_ref().ok(), gelu.as_ref().ok(), mechanism, q);
            ctx.push(q);
        }
    }

    // The benchmark judges the fix.
    let comparison = comparison(ctx, "bench");
    let verdict = ctx.text("benchmark.verdict");
    let q = QuestionResult::new(
        "benchmark.verdict",
        "Your final op against unfused, end to end",
        1.0,
    );
    ctx.push(verdict_question(verdict, &comparison, q));
}

/// A row's % of its roofline, as the learner copied it.
fn roofline_question(
    ctx: &mut Ctx<'_>,
    id: &str,
    label: &str,
    row: &Result<RankedOp, String>,
    key: &FuseKey,
) {
    let got = ctx.number(id);
    let expected = match row {
        Err(reason) => Err(reason.clone()),
        Ok(op) => op
            .roofline
            .as_ref()
            .map(|r| r.pct_of_roofline)
            .ok_or_else(|| format!("`{}` has no roofline columns (it declared no work, or the run measured no ceilings): profile again", op.name)),
    };
    ctx.push(number_question(
        got,
        expected,
        0.005,
        key.roofline_rel_tolerance,
        "the row's roofline columns",
        QuestionResult::new(id, label, 1.0),
    ));
}

/// The unfused row's reading, in the learner's words ("slow kernel", "slow-kernel").
fn reading_question(
    got: Got<String>,
    row: &Result<RankedOp, String>,
    q: QuestionResult,
) -> QuestionResult {
    let text = match got {
        Got::Unanswered => return q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => return q.wrong(reason),
        Got::Answered(text) => text,
    };
    let q = q.answer(text.clone());
    let key = |s: &str| {
        s.to_lowercase()
            .chars()
            .filter(char::is_ascii_alphabetic)
            .collect::<String>()
    };
    let Some(given) = Reading::ALL
        .into_iter()
        .find(|r| key(r.label()) == key(&text))
    else {
        let names: Vec<&str> = Reading::ALL.iter().map(|r| r.label()).collect();
        return q.wrong(format!(
            "\"{text}\" is not a reading the table prints: one of {}",
            names.join(", ")
        ));
    };
    let op = match row {
        Err(reason) => return q.wrong(reason.clone()),
        Ok(op) => op,
    };
    match op.reading {
        None => q.wrong(format!(
            "`{}` has no reading (no roofline columns): profile again",
            op.name
        )),
        Some(r) if r == given => q.right(format!(
            "the table reads `{}` as {r}: {}",
            op.name,
            facts(op)
        )),
        Some(r) => q.wrong(format!(
            "the table reads `{}` as {r}, not {given}: {}",
            op.name,
            facts(op)
        )),
    }
}

/// What a fusion removes: a pass over memory (memory traffic) and, with it, one op's launch. Not
/// the per-element math: stage 1 computes what the unfused GELU computes.
fn fusion_question(
    got: Got<String>,
    gelu: &Result<RankedOp, String>,
    fused: &Result<RankedOp, String>,
    on_gpu: bool,
    q: QuestionResult,
) -> QuestionResult {
    let text = match got {
        Got::Unanswered => return q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => return q.wrong(reason),
        Got::Answered(text) => text,
    };
    let q = q.answer(text.clone());
    let Some(mechanism) = Mechanism::parse(&text) else {
        return q.wrong(format!("write one of {}", Mechanism::choices()));
    };
    let moved = match (gelu, fused) {
        (Ok(g), Ok(f)) => format!(" (stage 1 here: {})", self::moved(g, f)),
        _ => String::new(),
    };
    let held_back = gelu.as_ref().ok().and_then(|g| g.reading);
    match mechanism {
        Mechanism::MemoryTraffic | Mechanism::LaunchOverhead => {
            let and = match (on_gpu, held_back) {
                (false, Some(Reading::SlowKernel)) => {
                    "; on this CPU that was not what held the row back (it reads slow kernel), which is why stage 1 moved so little"
                }
                _ => "",
            };
            q.right(format!("one pass instead of two: a write and a read of the whole tensor less, and one op less to launch{and}{moved}"))
        }
        Mechanism::SlowKernel => q.wrong(format!(
            "a fusion computes the same per-element math as the unfused GELU, in one pass: it removes a pass over memory and a launch, not a slow kernel{moved}"
        )),
        Mechanism::WastedWork => q.wrong(format!("a fusion skips no work: every element is still added to and activated, in one pass instead of two{moved}")),
    }
}

/// A row's roofline figures and reading, for feedback.
fn facts(op: &RankedOp) -> String {
    match &op.roofline {
        Some(r) => format!(
            "{} GB/s, {} of its roofline, {} of its memory roofline",
            figure(r.gbytes_per_s),
            pct(r.pct_of_roofline),
            pct(r.pct_of_memory_roofline)
        ),
        None => "no roofline columns".to_string(),
    }
}

/// What moved from the activation's row to a fused op's: share, rates, % of roofline, reading
/// and kernel.
pub fn moved(before: &RankedOp, after: &RankedOp) -> String {
    let rates = match (&before.roofline, &after.roofline) {
        (Some(b), Some(a)) => format!(
            "{} → {} GB/s, {} → {} of the roofline",
            figure(b.gbytes_per_s),
            figure(a.gbytes_per_s),
            pct(b.pct_of_roofline),
            pct(a.pct_of_roofline)
        ),
        _ => "no roofline columns on one of the rows".to_string(),
    };
    let reading = |op: &RankedOp| {
        op.reading
            .map_or_else(|| "no reading".to_string(), |r| r.label().to_string())
    };
    let kernel = |op: &RankedOp| op.kernel.clone().unwrap_or_else(|| "unlabelled".into());
    format!(
        "`{}` → `{}`: {} → {} of the step, {rates}, read as {} → {}, kernel `{}` → `{}`",
        before.name,
        after.name,
        pct(before.share_pct),
        pct(after.share_pct),
        reading(before),
        reading(after),
        kernel(before),
        kernel(after)
    )
}
