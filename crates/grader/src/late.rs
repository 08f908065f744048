//! The deadline: when each submission was made, where that time comes from, and the late
//! policy that turns a raw score into the final one.
//!
//! `course grade --due 2027-01-15T23:59:00Z --late-penalty 10%/day --late-cutoff 3d`: a
//! submission made after the due time loses 10% of the maximum points for every day it is late,
//! a started day counting whole, down to 0; one made more than 3 days late scores 0.
//!
//! A submission's time comes from the first of, in this order:
//! 1. **lms**: the learning platform's or Gradescope's record (`--times FILE`, a CSV with the
//!    columns `student,submitted_at`, from the platform's export);
//! 2. **sidecar**: `COHORT/STUDENT.submitted_at`, one RFC 3339 time, written by whoever
//!    collected the files (a script that downloads them, say);
//! 3. **files**: the newest modification time the submission's own files record (a folder's,
//!    or a tar's entries'). The learner controls those, so the gradebook flags this source.

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A point in time, in UTC (re-exported for the `course` command's arguments).
pub type Time = DateTime<Utc>;
/// A length of time (`--late-cutoff`).
pub type Span = TimeDelta;

/// Where a submission's time was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeSource {
    /// The learning platform's (or Gradescope's) own record.
    Lms,
    /// A `STUDENT.submitted_at` file written beside the submission by whoever collected it.
    Sidecar,
    /// The newest time the submission's files carry: set by the learner, so flagged.
    Files,
}

impl TimeSource {
    pub fn label(self) -> &'static str {
        match self {
            TimeSource::Lms => "lms",
            TimeSource::Sidecar => "sidecar",
            TimeSource::Files => "files",
        }
    }
}

/// When a submission was made, and how the grader knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submitted {
    pub at: DateTime<Utc>,
    pub source: TimeSource,
}

/// The late policy of one assignment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatePolicy {
    pub due: DateTime<Utc>,
    /// Percent of the maximum points taken per started day late.
    pub percent_per_day: f64,
    /// Later than this after the due time, the score is 0.
    pub cutoff: Option<TimeDelta>,
}

/// What the policy did to one submission.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Late {
    /// Started days after the due time (0: on time).
    pub days_late: u32,
    /// Past the cutoff: scored 0.
    pub past_cutoff: bool,
    /// The score before the penalty, in percent.
    pub raw: f64,
    /// The score the gradebook records, in percent.
    #[serde(rename = "final")]
    pub final_score: f64,
    /// No time was found for the submission: graded as on time, and flagged.
    pub no_time: bool,
}

impl LatePolicy {
    /// The final score of a submission made at `submitted` (None: no time known, graded as on
    /// time and flagged) that earned `raw` percent.
    pub fn apply(&self, raw: f64, submitted: Option<&Submitted>) -> Late {
        let Some(submitted) = submitted else {
            return Late {
                days_late: 0,
                past_cutoff: false,
                raw,
                final_score: raw,
                no_time: true,
            };
        };
        let late_by = submitted.at - self.due;
        if late_by <= TimeDelta::zero() {
            return Late {
                days_late: 0,
                past_cutoff: false,
                raw,
                final_score: raw,
                no_time: false,
            };
        }
        let day = TimeDelta::days(1).num_milliseconds();
        let started_days = (late_by.num_milliseconds() + day - 1) / day;
        let days_late = u32::try_from(started_days).unwrap_or(u32::MAX);
        let past_cutoff = self.cutoff.is_some_and(|cutoff| late_by > cutoff);
        let final_score = if past_cutoff {
            0.0
        } else {
            let penalty = self.percent_per_day * f64::from(days_late);
            round2((raw - penalty).max(0.0))
        };
        Late {
            days_late,
            past_cutoff,
            raw,
            final_score,
            no_time: false,
        }
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A time as the gradebook writes it: RFC 3339 in UTC, to the second.
pub fn show_time(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `2027-01-15T23:59:00Z` or with an offset (`2027-01-16T00:59:00+01:00`).
pub fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            format!(
                "{:?} is not an RFC 3339 time ({e}); write it as 2027-01-15T23:59:00Z",
                text.trim()
            )
        })
}

/// `10%/day` (or `10%`, `10`): percent of the maximum points per started day late.
pub fn parse_penalty(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let number = t
        .strip_suffix("/day")
        .unwrap_or(t)
        .trim()
        .trim_end_matches('%')
        .trim();
    match number.parse::<f64>() {
        Ok(p) if p.is_finite() && (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "{t:?} is not a penalty: write a percent of the maximum points per day, such as 10%/day"
        )),
    }
}

/// `3d`, `72h`, `90m`: how long after the due time a submission still counts.
pub fn parse_cutoff(text: &str) -> Result<TimeDelta, String> {
    let t = text.trim();
    let err = || format!("{t:?} is not a duration: write it as 3d, 72h or 90m");
    let (number, unit) = t.split_at(t.find(|c: char| c.is_alphabetic()).ok_or_else(err)?);
    let n: i64 = number.trim().parse().map_err(|_| err())?;
    if n < 0 {
        return Err(err());
    }
    match unit {
        "d" | "day" | "days" => TimeDelta::try_days(n),
        "h" | "hour" | "hours" => TimeDelta::try_hours(n),
        "m" | "min" | "minutes" => TimeDelta::try_minutes(n),
        _ => None,
    }
    .ok_or_else(err)
}

/// The platform's times, `--times FILE`: a CSV with a header and the columns `student` and
/// `submitted_at` (other columns are ignored).
pub fn load_times(path: &Path) -> Result<BTreeMap<String, DateTime<Utc>>, String> {
    let shown = path.display();
    let mut reader = csv::Reader::from_path(path)
        .map_err(|e| format!("{shown}: cannot read the submission times: {e}"))?;
    let headers = reader
        .headers()
        .map_err(|e| format!("{shown}: cannot read the submission times: {e}"))?
        .clone();
    let column = |name: &str| {
        headers.iter().position(|h| h.trim() == name).ok_or_else(|| {
            format!("{shown}: no `{name}` column; the header must name `student` and `submitted_at`")
        })
    };
    let (student, time) = (column("student")?, column("submitted_at")?);
    let mut times = BTreeMap::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let record = record.map_err(|e| format!("{shown}:{line}: {e}"))?;
        let (Some(id), Some(at)) = (record.get(student), record.get(time)) else {
            return Err(format!("{shown}:{line}: the row has too few columns"));
        };
        if at.trim().is_empty() {
            continue;
        }
        let at = parse_time(at).map_err(|e| format!("{shown}:{line}: {e}"))?;
        times.insert(id.trim().to_string(), at);
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(cutoff: Option<&str>) -> LatePolicy {
        LatePolicy {
            due: parse_time("2027-01-15T23:59:00Z").unwrap(),
            percent_per_day: parse_penalty("10%/day").unwrap(),
            cutoff: cutoff.map(|c| parse_cutoff(c).unwrap()),
        }
    }

    fn at(text: &str, source: TimeSource) -> Submitted {
        Submitted {
            at: parse_time(text).unwrap(),
            source,
        }
    }

    #[test]
    fn a_started_day_counts_whole_and_the_score_stops_at_zero() {
        let p = policy(Some("3d"));
        let on_time = p.apply(80.0, Some(&at("2027-01-15T23:59:00Z", TimeSource::Lms)));
        assert_eq!((on_time.days_late, on_time.final_score), (0, 80.0));
        // One second late is one started day.
        let second = p.apply(80.0, Some(&at("2027-01-15T23:59:01Z", TimeSource::Lms)));
        assert_eq!((second.days_late, second.final_score), (1, 70.0));
        // An offset is read: 01:30 in +01:00 is 00:30 UTC, one day late.
        let offset = p.apply(
            80.0,
            Some(&at("2027-01-16T01:30:00+01:00", TimeSource::Sidecar)),
        );
        assert_eq!((offset.days_late, offset.final_score), (1, 70.0));
        // Exactly three days late is within the cutoff: 3 days, 30 points.
        let three = p.apply(25.0, Some(&at("2027-01-18T23:59:00Z", TimeSource::Lms)));
        assert_eq!(
            (three.days_late, three.final_score, three.past_cutoff),
            (3, 0.0, false)
        );
        // A second past the cutoff: 0 whatever the raw score.
        let past = p.apply(100.0, Some(&at("2027-01-18T23:59:01Z", TimeSource::Lms)));
        assert_eq!(
            (past.days_late, past.final_score, past.past_cutoff),
            (4, 0.0, true)
        );
        // Without a cutoff, the penalty alone, floored at 0.
        let late = policy(None).apply(100.0, Some(&at("2027-01-30T00:00:00Z", TimeSource::Files)));
        assert_eq!((late.days_late, late.final_score), (15, 0.0));
        let none = p.apply(64.5, None);
        assert!(none.no_time);
        assert_eq!(none.final_score, 64.5);
    }

    #[test]
    fn bad_policies_say_how_to_write_them() {
        assert!(parse_penalty("ten").unwrap_err().contains("10%/day"));
        assert!(parse_penalty("150%/day").is_err());
        assert_eq!(parse_penalty("12.5%").unwrap(), 12.5);
        assert!(parse_cutoff("3").unwrap_err().contains("3d"));
        assert!(parse_cutoff("3w").is_err());
        assert_eq!(parse_cutoff("72h").unwrap(), TimeDelta::days(3));
        assert!(parse_time("15/01/2027")
            .unwrap_err()
            .contains("2027-01-15T23:59:00Z"));
    }
}
