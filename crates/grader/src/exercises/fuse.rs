//! Exercise 5: the fused op is correct (results/fused_check.json), the activation line shrinks
//! from the unfused profile to the fused one, and the end-to-end benchmark gives the verdict.

use super::bench_verdict::{comparison, verdict_question};
use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::checks::number::show;
use crate::key::FuseKey;
use crate::report::QuestionResult;
use crate::results::profile_report::ProfileReport;

pub fn check(ctx: &mut Ctx<'_>, key: &FuseKey) {
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
    let share_before = op_and_share(ctx, &before, "profile.activation_op", "profile.share_before_pct", "The activation's row before fusing", key);
    let share_after = op_and_share(ctx, &after, "profile.fused_op", "profile.share_after_pct", "Your fused op's row after fusing", key);
    let q = QuestionResult::new("profile.shrinks", "The activation line shrinks", 1.0);
    let q = match (share_before, share_after) {
        (Some(b), Some(a)) if a < b => q.right(format!("{:.2}% → {:.2}% of self time", b, a)),
        (Some(b), Some(a)) => q.wrong(format!("{:.2}% → {:.2}%: the fused op takes no smaller a share than the unfused activation", b, a)),
        _ => q.wrong("cannot be checked until both rows are named and found in the two profiles"),
    };
    ctx.push(q);

    // The benchmark judges the fix.
    let comparison = comparison(ctx, "bench");
    let verdict = ctx.text("benchmark.verdict");
    let q = QuestionResult::new("benchmark.verdict", "Fused against unfused, end to end", 1.0);
    ctx.push(verdict_question(verdict, &comparison, q));
}

/// Grade an op name and its share in one profile; return the share from the profile when the
/// op was found (for the "shrinks" check).
fn op_and_share(ctx: &mut Ctx<'_>, profile: &Result<ProfileReport, String>, op_path: &str, share_path: &str, label: &str, key: &FuseKey) -> Option<f64> {
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
                        found = Some(op.share_pct);
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
