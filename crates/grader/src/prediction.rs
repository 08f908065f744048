//! Exercise 3's prediction: which op will top the table, and its share, written down before
//! the profile runs. `course run 3` asks for it in the terminal and records it in
//! answers.toml's `[prediction]` with the time it was made and whether results/report.json
//! existed then; `course check 3` grades it for having been made first (before the report was
//! written) and shows it next to what was measured. Being right is not graded: the point is to
//! notice how far a guess is from a measurement.

use crate::fill_answers::Answer;
use crate::results::profile_report::ProfileReport;
use std::time::SystemTime;

/// The answers.toml table that holds the prediction.
pub const TABLE: &str = "prediction";

/// When a prediction was made, as answers.toml stores it (an HTTP date: UTC, to the second).
pub fn format_time(at: SystemTime) -> String {
    httpdate::fmt_http_date(at)
}

/// The time [`format_time`] wrote, or None.
pub fn parse_time(text: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(text.trim()).ok()
}

/// The answers `course run` writes for a prediction made `at`.
pub fn record(op: &str, share_pct: Option<f64>, at: SystemTime, report_existed: bool) -> Vec<(String, Answer)> {
    let mut answers = vec![(format!("{TABLE}.op"), Answer::from(op.trim()))];
    if let Some(share) = share_pct {
        answers.push((format!("{TABLE}.share_pct"), share.into()));
    }
    answers.push((format!("{TABLE}.made_at"), format_time(at).into()));
    answers.push((format!("{TABLE}.report_existed"), report_existed.into()));
    answers
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn times_round_trip_to_the_second() {
        let at = UNIX_EPOCH + Duration::from_secs(1_796_115_792);
        let text = format_time(at);
        assert_eq!(text, "Tue, 01 Dec 2026 09:03:12 GMT");
        assert_eq!(parse_time(&text), Some(at));
        assert_eq!(parse_time("yesterday"), None);
    }
}
