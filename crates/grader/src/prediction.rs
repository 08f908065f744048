//! Exercise 3's prediction: which op will top the table, and its share, written down before
//! the profile runs. Exercise 3's own binary and `course run 3` ask for it in the terminal and
//! record it in answers.toml's `[prediction]` with the time it was made and whether
//! results/report.json existed then (the `answers-file` crate, re-exported here, so that exercise
//! 3's build does not need the grader); `course check 3` grades it for having been made first
//! (before the report was written) and shows it next to what was measured. Being right is not
//! graded: the point is to notice how far a guess is from a measurement.

pub use answers_file::prediction::{ask, before_the_profile, format_time, parse_time, record, recorded, Outcome, Prediction, ASKED_ENV, TABLE};

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
    let measured = format!("the table's top op by {column} is `{}` at {:.1}%", top.name, top.share_pct);
    match profile.find(op) {
        Some((0, _)) => format!("You predicted {guess}; {measured}"),
        Some((rank, row)) => format!("You predicted {guess}; {measured}, and `{}` is #{} at {:.1}%", row.name, rank + 1, row.share_pct),
        None => format!("You predicted {guess}; {measured} (`{}` is not a row)", op.trim()),
    }
}
