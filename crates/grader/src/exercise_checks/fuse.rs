//! Exercise 5: the fused op is correct (results/fused_check.json), the activation line shrinks
//! from the unfused profile to the fused one, what moved in the roofline columns (GB/s, % of
//! roofline) and the mechanism the fusion fixed (judged by `crate::plan_rule` on the unfused
//! activation's row, so the answer differs between a CPU and a GPU), and the end-to-end
//! benchmark gives the verdict.

use super::bench_verdict::{comparison, verdict_question};
use super::plan::mechanism_question;
use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::question_types::number::show;
use crate::key::{FuseKey, MechanismKey};
use crate::plan_rule::{figure, pct};
use crate::report::QuestionResult;
use crate::results::profile_report::{ProfileReport, RankedOp, Roofline};

pub fn check(ctx: &mut Ctx<'_>, key: &FuseKey, mechanism: &MechanismKey) {
    // Correctness, from the file alone.
    let fused = ctx.fused_check("fused_check");
    let q = QuestionResult::new("fused_check.correct", format!("The fused op matches the unfused ops (≤ {})", show(key.max_abs_error_limit)), 1.0);
    let q = match &fused {
        Err(reason) => q.wrong(reason.clone()),
        Ok(f) if f.max_abs_error <= key.max_abs_error_limit => q.right(format!("largest difference {}", show(f.max_abs_error))),
        Ok(f) => q.wrong(format!(
            "largest difference {} is over the limit of {}: fix the fused op before measuring it",
            show(f.max_abs_error),
            show(key.max_abs_error_limit)
        )),
    };
    ctx.push(q);
    let got = ctx.number("fused_check.max_abs_error");
    let expected = fused.as_ref().map(|f| f.max_abs_error).map_err(Clone::clone);
    let q = QuestionResult::new("fused_check.max_abs_error", "The largest difference you measured", 1.0);
    ctx.push(number_question(got, expected, 0.0, key.error_rel_tolerance, "results/fused_check.json", q));

    // Before and after profiles.
    let before = ctx.profile("profile_before");
    let after = ctx.profile("profile_after");
    if let Ok(p) = before.as_ref().or(after.as_ref()) {
        ctx.report.device = Some(p.device.name().to_string());
    }
    let row_before = op_and_share(ctx, &before, "profile.activation_op", "profile.share_before_pct", "The activation's row before fusing", key);
    let row_after = op_and_share(ctx, &after, "profile.fused_op", "profile.share_after_pct", "Your fused op's row after fusing", key);
    let q = QuestionResult::new("profile.shrinks", "The activation line shrinks", 1.0);
    let q = match (row_before.as_ref().map(|r| r.share_pct), row_after.as_ref().map(|r| r.share_pct)) {
        (Some(b), Some(a)) if a < b => q.right(format!("{:.2}% → {:.2}% of self time", b, a)),
        (Some(b), Some(a)) => q.wrong(format!("{:.2}% → {:.2}%: the fused op takes no smaller a share than the unfused activation", b, a)),
        _ => q.wrong("cannot be checked until both rows are named and found in the two profiles"),
    };
    ctx.push(q);

    roofline_questions(ctx, key, mechanism, &before, row_before.as_ref(), row_after.as_ref());

    // The benchmark judges the fix.
    let comparison = comparison(ctx, "bench");
    let verdict = ctx.text("benchmark.verdict");
    let q = QuestionResult::new("benchmark.verdict", "Fused against unfused, end to end", 1.0);
    ctx.push(verdict_question(verdict, &comparison, q));
}

/// `[roofline]`: the rates before and after as the two rows show them, and the mechanism.
fn roofline_questions(
    ctx: &mut Ctx<'_>,
    key: &FuseKey,
    mechanism: &MechanismKey,
    before: &Result<ProfileReport, String>,
    row_before: Option<&RankedOp>,
    row_after: Option<&RankedOp>,
) {
    if let (Some(b), Some(a)) = (row_before, row_after) {
        ctx.report.notes.push(moved(b, a));
    }
    type Pick = fn(&Roofline) -> f64;
    let figures: [(&str, &str, Option<&RankedOp>, Pick); 4] = [
        ("roofline.gbytes_per_s_before", "The activation's GB/s before fusing", row_before, |r| r.gbytes_per_s),
        ("roofline.gbytes_per_s_after", "Your fused op's GB/s after", row_after, |r| r.gbytes_per_s),
        ("roofline.pct_of_roofline_before", "The activation's % of its roofline before", row_before, |r| r.pct_of_roofline),
        ("roofline.pct_of_roofline_after", "Your fused op's % of its roofline after", row_after, |r| r.pct_of_roofline),
    ];
    for (id, label, row, pick) in figures {
        let got = ctx.number(id);
        let q = QuestionResult::new(id, label, 1.0);
        let expected = match row {
            None => Err("cannot be checked until the row is named and found in its profile".to_string()),
            Some(op) => match &op.roofline {
                Some(r) => Ok(pick(r)),
                None => Err(format!("`{}` has no roofline columns (it declared no work, or the run measured no ceilings): profile again", op.name)),
            },
        };
        ctx.push(number_question(got, expected, 0.005, key.roofline_rel_tolerance, "the row's roofline columns", q));
    }
    let got = ctx.text("roofline.mechanism");
    let q = QuestionResult::new("roofline.mechanism", "What the fusion fixed (judged on the unfused activation's row)", 1.0);
    let (q, _) = mechanism_question(got, before.as_ref().ok(), row_before, mechanism, q);
    ctx.push(q);
}

/// What moved from the activation's row to the fused op's, in the roofline columns.
pub fn moved(before: &RankedOp, after: &RankedOp) -> String {
    let rates = match (&before.roofline, &after.roofline) {
        (Some(b), Some(a)) => format!(
            "{} → {} GB/s, {} → {} of the roofline, {}-bound → {}-bound",
            figure(b.gbytes_per_s),
            figure(a.gbytes_per_s),
            pct(b.pct_of_roofline),
            pct(a.pct_of_roofline),
            b.bound.name(),
            a.bound.name()
        ),
        _ => "no roofline columns on one of the rows".to_string(),
    };
    let kernel = |op: &RankedOp| op.kernel.clone().unwrap_or_else(|| "unlabelled".into());
    format!(
        "What moved, `{}` → `{}`: {}, {rates}, kernel `{}` → `{}`",
        before.name,
        after.name,
        format_args!("{} → {} of the step", pct(before.share_pct), pct(after.share_pct)),
        kernel(before),
        kernel(after)
    )
}

/// Grade an op name and its share in one profile; return the row when the op was found (for
/// the "shrinks" and roofline checks).
fn op_and_share(ctx: &mut Ctx<'_>, profile: &Result<ProfileReport, String>, op_path: &str, share_path: &str, label: &str, key: &FuseKey) -> Option<RankedOp> {
    let name = ctx.text(op_path);
    let q = QuestionResult::new(op_path, label, 1.0);
    let mut share = Err("cannot be checked: the op is not answered or not found".to_string());
    let mut found = None;
    let q = match name {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(n) => {
            let q = q.answer(n.clone());
            match profile {
                Err(reason) => {
                    share = Err(reason.clone());
                    q.wrong(reason.clone())
                }
                Ok(p) => match p.find(&n) {
                    Some((rank, op)) => {
                        share = Ok(op.share_pct);
                        found = Some(op.clone());
                        q.right(format!("#{} by {} in {}", rank + 1, p.device.column(), p.file))
                    }
                    None => q.wrong(format!("`{n}` is not a row of {}", p.file)),
                },
            }
        }
    };
    ctx.push(q);
    let got = ctx.number(share_path);
    let q = QuestionResult::new(share_path, "Its self-time share, %", 1.0);
    ctx.push(number_question(got, share, key.share_tolerance_pct, 0.0, "the profile", q));
    found
}
