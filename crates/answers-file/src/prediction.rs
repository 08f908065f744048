//! Exercise 3's prediction: which op will top the table, and its share, written down before
//! the profile runs. Asked in the terminal by exercise 3's own binary (`cargo run -p
//! exercise-3`) and by `course run 3`, with [`before_the_profile`], and recorded in
//! answers.toml's `[prediction]` with the time it was made and whether results/report.json
//! existed then; `course check 3` grades it for having been made first (before the report was
//! written) and shows it next to what was measured. Being right is not graded: the point is to
//! notice how far a guess is from a measurement.

use crate::fill_answers::{self, Answer};
use anyhow::{Context, Result};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
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

/// The answers written for a prediction made `at`.
pub fn record(op: &str, share_pct: Option<f64>, at: SystemTime, report_existed: bool) -> Vec<(String, Answer)> {
    let mut answers = vec![(format!("{TABLE}.op"), Answer::from(op.trim()))];
    if let Some(share) = share_pct {
        answers.push((format!("{TABLE}.share_pct"), share.into()));
    }
    answers.push((format!("{TABLE}.made_at"), format_time(at).into()));
    answers.push((format!("{TABLE}.report_existed"), report_existed.into()));
    answers
}

/// Set by `course run` for the exercise it starts, once it has asked (or found no terminal to
/// ask in): the exercise's binary then does not ask a second time.
pub const ASKED_ENV: &str = "COURSE_PREDICTION_ASKED";

/// A prediction: the op expected to top the table, and its share in % when one was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub op: String,
    pub share_pct: Option<f64>,
}

impl Prediction {
    /// As the learner reads it back: "`matmul` at 60%".
    pub fn describe(&self) -> String {
        match self.share_pct {
            Some(share) => format!("`{}` at {share}%", self.op),
            None => format!("`{}`", self.op),
        }
    }
}

/// The prediction recorded in `answers_path`, if it holds one (an op that is not ""). A share
/// may be a number or a number in quotes ("60", "60%"), as every answer may.
pub fn recorded(answers_path: &Path) -> Option<Prediction> {
    let text = std::fs::read_to_string(answers_path).ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    let table = doc.get(TABLE)?.as_table_like()?;
    let op = table.get("op")?.as_str()?.trim();
    if op.is_empty() {
        return None;
    }
    let share_pct = table.get("share_pct").and_then(|item| match item.as_value()? {
        toml_edit::Value::Float(f) => Some(*f.value()),
        toml_edit::Value::Integer(i) => Some(*i.value() as f64),
        toml_edit::Value::String(s) => s.value().trim().trim_end_matches('%').trim().parse::<f64>().ok(),
        _ => None,
    });
    Some(Prediction { op: op.to_string(), share_pct: share_pct.filter(|s| s.is_finite()) })
}

/// What [`before_the_profile`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// answers.toml already holds a prediction: kept as it is, nothing asked.
    AlreadyRecorded(Prediction),
    /// Asked now and written to answers.toml.
    Made { prediction: Prediction, made_at: SystemTime, report_existed: bool },
    /// Asked, but no op was given: nothing written.
    Declined,
    /// Standard input is not a terminal (CI, a pipe, an editor's run button): nothing asked,
    /// nothing written. The caller says how to make the prediction.
    NoTerminal,
    /// `course run` asked just before starting this program ([`ASKED_ENV`]): nothing to do.
    AskedByCourse,
}

/// Before the profile runs: the prediction already in `answers_path`, or, when there is none
/// and standard input is a terminal, the learner's answer to the two questions, recorded there.
/// `report_path` is the results file the profile is about to write: whether it exists now is
/// recorded too (a prediction made after a measurement can be read off it). Never waits on
/// input that is not a terminal, and does not ask again what `course run` has just asked.
pub fn before_the_profile(answers_path: &Path, report_path: &Path) -> Result<Outcome> {
    if std::env::var_os(ASKED_ENV).is_some() {
        return Ok(Outcome::AskedByCourse);
    }
    if let Some(prediction) = recorded(answers_path) {
        return Ok(Outcome::AlreadyRecorded(prediction));
    }
    if !std::io::stdin().is_terminal() {
        return Ok(Outcome::NoTerminal);
    }
    let stdin = std::io::stdin();
    ask(answers_path, report_path, &mut stdin.lock(), &mut std::io::stderr())
}

/// The questions themselves, read from `input` and shown on `out`; the answer is recorded in
/// `answers_path` (which must hold the template's `[prediction]` table). The end of the input
/// counts as no answer.
pub fn ask(answers_path: &Path, report_path: &Path, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<Outcome> {
    let report_existed = report_path.exists();
    writeln!(out, "Before the profile runs: what do you expect it to show?")?;
    if report_existed {
        writeln!(out, "    ({} already exists, so this prediction will not count as made first; delete it to predict blind.)", shown(report_path))?;
    }
    let op = line(input, out, "    Which op will top the table (its name, e.g. matmul, gelu, softmax)? ")?;
    let Some(op) = op.filter(|op| !op.is_empty()) else {
        return Ok(Outcome::Declined);
    };
    let share_pct = loop {
        let Some(text) = line(input, out, "    Its share of the step, in % (e.g. 40)? ")? else { break None };
        if text.is_empty() {
            break None;
        }
        match text.trim_end_matches('%').trim().parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..=100.0).contains(&v) => break Some(v),
            _ => writeln!(out, "    A percentage between 0 and 100, please (or Enter to skip).")?,
        }
    };
    let made_at = SystemTime::now();
    fill_answers::set(answers_path, &record(&op, share_pct, made_at, report_existed))
        .with_context(|| format!("cannot record your prediction in {}", answers_path.display()))?;
    Ok(Outcome::Made { prediction: Prediction { op, share_pct }, made_at, report_existed })
}

/// The results file as the exercise names it (`results/report.json`), not its whole path.
fn shown(report_path: &Path) -> String {
    let mut parts: Vec<String> = report_path.iter().rev().take(2).map(|p| p.to_string_lossy().into_owned()).collect();
    parts.reverse();
    parts.join("/")
}

/// One trimmed line after `question`; None at the end of the input.
fn line(input: &mut dyn BufRead, out: &mut dyn Write, question: &str) -> Result<Option<String>> {
    write!(out, "{question}")?;
    out.flush()?;
    let mut text = String::new();
    if input.read_line(&mut text).context("cannot read your answer from the terminal")? == 0 {
        writeln!(out)?;
        return Ok(None);
    }
    Ok(Some(text.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const TEMPLATE: &str = "# Exercise 3\n[prediction]\n# asked before the profile runs\nop = \"\"\nshare_pct = \"\"\nmade_at = \"\"  # written for you\nreport_existed = \"\"\n\n[plan]\nattack = \"\"\n";

    fn folder(answers: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let answers_path = dir.path().join("answers.toml");
        std::fs::write(&answers_path, answers).unwrap();
        let report = dir.path().join("results/report.json");
        (dir, answers_path, report)
    }

    fn asked(answers_path: &Path, report: &Path, typed: &str) -> (Outcome, String) {
        let mut shown = Vec::new();
        let outcome = ask(answers_path, report, &mut typed.as_bytes(), &mut shown).unwrap();
        (outcome, String::from_utf8(shown).unwrap())
    }

    #[test]
    fn times_round_trip_to_the_second() {
        let at = UNIX_EPOCH + Duration::from_secs(1_796_115_792);
        let text = format_time(at);
        assert_eq!(text, "Tue, 01 Dec 2026 09:03:12 GMT");
        assert_eq!(parse_time(&text), Some(at));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn an_answer_is_recorded_with_its_time_and_whether_the_report_existed() {
        let (_dir, answers, report) = folder(TEMPLATE);
        let (outcome, shown) = asked(&answers, &report, "matmul\nabout half\n60%\n");
        let Outcome::Made { prediction, made_at, report_existed } = outcome else { panic!("{outcome:?}") };
        assert_eq!(prediction, Prediction { op: "matmul".into(), share_pct: Some(60.0) });
        assert!(!report_existed);
        assert!(shown.contains("A percentage between 0 and 100"), "a share that is no number is asked again: {shown}");
        let text = std::fs::read_to_string(&answers).unwrap();
        let doc: toml::Table = text.parse().unwrap();
        let table = doc["prediction"].as_table().unwrap();
        assert_eq!(table["op"].as_str(), Some("matmul"));
        assert_eq!(table["share_pct"].as_float(), Some(60.0));
        assert_eq!(table["report_existed"].as_bool(), Some(false));
        assert_eq!(table["made_at"].as_str().and_then(parse_time), Some(parse_time(&format_time(made_at)).unwrap()));
        assert!(text.contains("# asked before the profile runs") && text.contains("# written for you"), "comments kept: {text}");
        // Read back as the next run sees it: nothing is asked twice.
        assert_eq!(recorded(&answers), Some(prediction));
    }

    #[test]
    fn a_report_already_there_is_said_and_recorded() {
        let (_dir, answers, report) = folder(TEMPLATE);
        std::fs::create_dir_all(report.parent().unwrap()).unwrap();
        std::fs::write(&report, "{}").unwrap();
        let (outcome, shown) = asked(&answers, &report, "gelu\n\n");
        assert!(matches!(&outcome, Outcome::Made { report_existed: true, prediction, .. } if prediction.share_pct.is_none()), "{outcome:?}");
        assert!(shown.contains("(results/report.json already exists, so this prediction will not count as made first"), "{shown}");
        let doc: toml::Table = std::fs::read_to_string(&answers).unwrap().parse().unwrap();
        assert_eq!(doc["prediction"]["report_existed"].as_bool(), Some(true));
        assert_eq!(doc["prediction"]["share_pct"].as_str(), Some(""), "a skipped share stays unanswered");
    }

    #[test]
    fn no_op_or_the_end_of_the_input_writes_nothing() {
        let (_dir, answers, report) = folder(TEMPLATE);
        for typed in ["\n", ""] {
            assert_eq!(asked(&answers, &report, typed).0, Outcome::Declined, "{typed:?}");
        }
        assert_eq!(std::fs::read_to_string(&answers).unwrap(), TEMPLATE);
        assert_eq!(recorded(&answers), None);
    }

    #[test]
    fn a_recorded_prediction_is_read_whatever_way_its_share_is_written() {
        for (share, read) in [("60", Some(60.0)), ("60.5", Some(60.5)), ("\"40%\"", Some(40.0)), ("\"\"", None), ("\"lots\"", None)] {
            let (_dir, answers, _report) = folder(&TEMPLATE.replacen("op = \"\"", "op = \" softmax \"", 1).replacen("share_pct = \"\"", &format!("share_pct = {share}"), 1));
            assert_eq!(recorded(&answers), Some(Prediction { op: "softmax".into(), share_pct: read }), "{share}");
        }
        let (_dir, broken, _) = folder("[prediction\nop = \"x\"\n");
        assert_eq!(recorded(&broken), None, "a file that is not TOML holds no prediction");
        assert_eq!(recorded(Path::new("/nonexistent/answers.toml")), None);
    }

    #[test]
    fn a_template_without_the_table_is_an_error_that_names_the_file() {
        let (_dir, answers, report) = folder("[plan]\nattack = \"\"\n");
        let mut shown = Vec::new();
        let err = format!("{:#}", ask(&answers, &report, &mut "matmul\n50\n".as_bytes(), &mut shown).unwrap_err());
        assert!(err.contains("cannot record your prediction") && err.contains("answers.toml") && err.contains("no `prediction`"), "{err}");
    }
}
