//! A prediction written down before the first profile runs (exercise 3: which op will top the
//! table, and its share; exercise 5: what fusing will do to the activation row). The exercise's
//! own binary and `course run N` ask for it in the terminal and record it in answers.toml's
//! `[prediction]` with the time it was made and whether the first results file existed then
//! (the `answers-file` crate, re-exported here, so that the exercises' builds do not need the
//! grader); `course check N` grades it for having been made first (before the report was
//! written) and shows it next to what was measured. Being right is not graded: the point is to
//! notice how far a guess is from a measurement.

pub use answers_file::prediction::{
    format_time, parse_time, Form, Kind, Outcome, Prediction, Question, Value, ASKED_ENV, FUSION,
    TABLE, TOP_OP,
};

use crate::results::profile_report::ProfileReport;

/// The prediction next to the measurement, in one sentence.
pub fn beside_measurement(op: &str, share_pct: Option<f64>, profile: &ProfileReport) -> String {
    let guess = match share_pct {
        Some(share) => format!("`{}` at {share:.1}%", op.trim()),
        None => format!("`{}`", op.trim()),
    };
    let column = profile.device.column();
    let Some(top) = profile.ops.first() else {
        return format!("You predicted {guess}; {} has no op rows", profile.file);
    };
    let measured = format!(
        "the table's top op by {column} is `{}` at {:.1}%",
        top.name, top.share_pct
    );
    match profile.find(op) {
        Some((0, _)) => format!("You predicted {guess}; {measured}"),
        Some((rank, row)) => format!(
            "You predicted {guess}; {measured}, and `{}` is #{} at {:.1}%",
            row.name,
            rank + 1,
            row.share_pct
        ),
        None => format!(
            "You predicted {guess}; {measured} (`{}` is not a row)",
            op.trim()
        ),
    }
}
