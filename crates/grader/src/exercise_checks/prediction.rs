//! `[prediction]`, for the exercises that start with one (3 and 5): answered, made at a time the
//! exercise recorded, when the first results file did not exist yet, and before that file was
//! written. Graded for having been made first, never for being right.

use super::{Ctx, Got, NOT_ANSWERED};
use crate::prediction;
use crate::report::QuestionResult;

/// The prediction question, worth `points`, about the results file of role `role` (named
/// `file` in the feedback). `shown` is the prediction as the feedback gives it (`Unanswered` when
/// its first answer is empty), `beside` a sentence on what was measured, put after each message
/// (or empty); `how` says how to make one (the exercise's command).
pub fn made_first(
    ctx: &mut Ctx<'_>,
    shown: Got<String>,
    points: f64,
    role: &str,
    file: &str,
    beside: &str,
    how: &str,
) {
    let q = QuestionResult::new(
        "prediction.made_first",
        "Your prediction, made before the first profile ran",
        points,
    );
    let shown = match shown {
        Got::Answered(shown) => shown,
        Got::Invalid(reason) => return ctx.push(q.wrong(reason)),
        Got::Unanswered => {
            ctx.report.notes.push(format!(
                "no prediction recorded: {how} asks for one in the terminal before the first profile runs (delete {file} first if it exists, so the prediction comes before the measurement)"
            ));
            return ctx.push(q.unanswered(NOT_ANSWERED));
        }
    };
    let q = q.answer(shown);
    let beside = if beside.is_empty() {
        String::new()
    } else {
        format!(". {beside}")
    };
    let made_at = match ctx.text("prediction.made_at") {
        Got::Answered(text) => match prediction::parse_time(&text) {
            Some(at) => at,
            None => return ctx.push(q.wrong(format!("`prediction.made_at` is {text:?}, not a time the exercise wrote{beside}"))),
        },
        Got::Invalid(reason) => return ctx.push(q.wrong(reason)),
        Got::Unanswered => {
            return ctx.push(q.wrong(format!("`prediction.made_at` is empty: a prediction counts when the exercise recorded when it was made{beside}")))
        }
    };
    let when = prediction::format_time(made_at);
    match ctx.flag("prediction.report_existed") {
        Got::Answered(false) => {}
        Got::Answered(true) => {
            return ctx.push(q.wrong(format!(
                "made {when}, when {file} already existed: a prediction made after a measurement can be read off it (delete the results, clear [prediction] and run the exercise again){beside}"
            )))
        }
        Got::Invalid(reason) => return ctx.push(q.wrong(reason)),
        Got::Unanswered => return ctx.push(q.wrong(format!("`prediction.report_existed` is empty: the exercise records whether a report existed{beside}"))),
    }
    let Some(rel) = ctx.info.result_path(role) else {
        return ctx.push(q.wrong(format!(
            "the exercise manifest declares no `{role}` results file; tell the instructor"
        )));
    };
    let q = match ctx.submission.modified(&rel) {
        Some(written) if made_at < written => q.right(format!("made {when}, before {file} was written ({}){beside}", prediction::format_time(written))),
        Some(written) => q.wrong(format!("made {when}, but {file} was written at {}, before it: predict first, then profile{beside}", prediction::format_time(written))),
        // A zip records local times without a zone: only the recorded "no report yet" is left.
        None => q.right(format!("made {when}, when no report existed (this submission does not record when {file} was written){beside}")),
    };
    ctx.push(q);
}
