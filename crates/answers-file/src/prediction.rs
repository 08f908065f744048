//! A prediction, written down before the first profile runs: exercise 3's (which op will top the
//! table, and its share: [`TOP_OP`]) and exercise 5's (what fusing alone will do to the
//! activation row: [`FUSION`]). Each is a [`Form`] of a few questions, asked in the terminal by
//! the exercise's own binary (`cargo run -p exercise-N`) and by `course run N`, with
//! [`Form::before_the_profile`], and recorded in answers.toml's `[prediction]` with the time it
//! was made and whether the first results file existed then. Which form an exercise uses follows
//! from its answers template (the keys of its `[prediction]` table: [`Form::for_template`]).
//! `course check N` grades a prediction for having been made first (before the report was
//! written) and shows it next to what was measured. Being right is not graded: the point is to
//! notice how far a guess is from a measurement.

use crate::fill_answers::{self, Answer};
use anyhow::{Context, Result};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::time::SystemTime;

/// The answers.toml table that holds the prediction.
pub const TABLE: &str = "prediction";

/// What a question takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Any text (an op's name).
    Text,
    /// A percentage from 0 to 100; a trailing `%` is fine.
    Percent,
    /// One of these words (case and surrounding spaces do not matter).
    Choice(&'static [&'static str]),
}

/// One question of a form: its key in `[prediction]`, and what the terminal asks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Question {
    pub key: &'static str,
    pub prompt: &'static str,
    pub kind: Kind,
    /// Whether the prediction is made without it. An empty answer to the first required
    /// question declines the whole prediction.
    pub required: bool,
}

/// The questions of one exercise's prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Form {
    /// The line before the questions.
    pub intro: &'static str,
    pub questions: &'static [Question],
}

/// Exercise 3: which op will top the table, and with what share.
pub const TOP_OP: Form = Form {
    intro: "Before the profile runs: what do you expect it to show?",
    questions: &[
        Question {
            key: "op",
            prompt: "Which op will top the table (its name, e.g. matmul, gelu, softmax)? ",
            kind: Kind::Text,
            required: true,
        },
        Question {
            key: "share_pct",
            prompt: "Its share of the step, in % (e.g. 40)? ",
            kind: Kind::Percent,
            required: false,
        },
    ],
};

/// Exercise 5: what fusing bias add and GELU into one pass (stage 1) will do to the activation row.
pub const FUSION: Form = Form {
    intro: "Before anything is profiled: what will fusing bias add and GELU into one pass (stage 1) do to the activation row?",
    questions: &[
        Question {
            key: "row_time",
            prompt: "Its time: shorter, about the same, or longer? ",
            kind: Kind::Choice(&["shorter", "about the same", "longer"]),
            required: true,
        },
        Question {
            key: "pct_of_roofline",
            prompt: "Its % of roofline: higher, about the same, or lower? ",
            kind: Kind::Choice(&["higher", "about the same", "lower"]),
            required: true,
        },
    ],
};

/// Every form, for [`Form::for_template`].
pub const FORMS: [&Form; 2] = [&TOP_OP, &FUSION];

/// An answer as recorded.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Number(f64),
}

/// A recorded prediction: the answers given, by key, in the form's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub answers: Vec<(&'static str, Value)>,
}

impl Prediction {
    /// The text answer to `key`, if one was given.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.answers.iter().find_map(|(k, v)| match v {
            Value::Text(t) if *k == key => Some(t.as_str()),
            _ => None,
        })
    }

    /// The number given for `key`, if any.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.answers.iter().find_map(|(k, v)| match v {
            Value::Number(n) if *k == key => Some(*n),
            _ => None,
        })
    }

    /// As the learner reads it back: "op `matmul`, share_pct 60%".
    pub fn describe(&self) -> String {
        let part = |(key, value): &(&str, Value)| match value {
            Value::Text(t) => format!("{key} `{t}`"),
            Value::Number(n) => format!("{key} {n}%"),
        };
        self.answers.iter().map(part).collect::<Vec<_>>().join(", ")
    }
}

/// The top-ops exercises' first step (3 and 8): the learner's prediction of the table's top op,
/// asked once in a terminal before the profile of `dir`'s exercise runs, and what happened said
/// in one line. Without a terminal it names the exercise's commands (`cargo run -p PACKAGE`,
/// `course run NUMBER`). A file it cannot record in is said, and the profile runs anyway.
pub fn top_op_first(dir: &Path, package: &str, number: u32) {
    let answers = dir.join("answers.toml");
    match TOP_OP.before_the_profile(&answers, &dir.join("results/report.json")) {
        Ok(Outcome::AlreadyRecorded(p)) => println!("Your prediction (in {}): {}.", answers.display(), p.describe()),
        Ok(Outcome::Made { .. }) => println!("Recorded in {}; now the measurement.", answers.display()),
        Ok(Outcome::Declined) => println!("No prediction made; the next run in a terminal asks again."),
        Ok(Outcome::NoTerminal) => eprintln!(
            "note: not asking for your prediction, as standard input is not a terminal. To make one before the profile \
             runs, run `cargo run -p {package}` (or `course run {number}`) in a terminal, after deleting results/report.json \
             if it exists; until then the \
             prediction question stays unanswered."
        ),
        Ok(Outcome::AskedByCourse) => {}
        Err(e) => eprintln!("warning: {e:#}; profiling without a prediction."),
    }
}

/// When a prediction was made, as answers.toml stores it (an HTTP date: UTC, to the second).
pub fn format_time(at: SystemTime) -> String {
    httpdate::fmt_http_date(at)
}

/// The time [`format_time`] wrote, or None.
pub fn parse_time(text: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(text.trim()).ok()
}

/// Set by `course run` for the exercise it starts, once it has asked (or found no terminal to
/// ask in): the exercise's binary then does not ask a second time.
pub const ASKED_ENV: &str = "COURSE_PREDICTION_ASKED";

/// What [`Form::before_the_profile`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// answers.toml already holds a prediction: kept as it is, nothing asked.
    AlreadyRecorded(Prediction),
    /// Asked now and written to answers.toml.
    Made {
        prediction: Prediction,
        made_at: SystemTime,
        report_existed: bool,
    },
    /// Asked, but no answer was given: nothing written.
    Declined,
    /// Standard input is not a terminal (CI, a pipe, an editor's run button): nothing asked,
    /// nothing written. The caller says how to make the prediction.
    NoTerminal,
    /// `course run` asked just before starting this program ([`ASKED_ENV`]): nothing to do.
    AskedByCourse,
}

impl Form {
    /// The form an answers template asks for: the one whose every question is a key of the
    /// template's `[prediction]` table. None when it has no such table (or it fits no form).
    pub fn for_template(template: &str) -> Option<&'static Form> {
        let doc: toml_edit::DocumentMut = template.parse().ok()?;
        let table = doc.get(TABLE)?.as_table_like()?;
        FORMS
            .into_iter()
            .find(|form| form.questions.iter().all(|q| table.contains_key(q.key)))
    }

    /// The answers written for a prediction made `at`.
    pub fn record(
        &self,
        answers: &[(&'static str, Value)],
        at: SystemTime,
        report_existed: bool,
    ) -> Vec<(String, Answer)> {
        let mut out: Vec<(String, Answer)> = answers
            .iter()
            .map(|(key, value)| {
                let answer = match value {
                    Value::Text(t) => Answer::from(t.trim()),
                    Value::Number(n) => Answer::from(*n),
                };
                (format!("{TABLE}.{key}"), answer)
            })
            .collect();
        out.push((format!("{TABLE}.made_at"), format_time(at).into()));
        out.push((format!("{TABLE}.report_existed"), report_existed.into()));
        out
    }

    /// The prediction recorded in `answers_path`, if it holds one (the first required question
    /// answered). A percentage may be a number or a number in quotes ("60", "60%"), as every
    /// answer may.
    pub fn recorded(&self, answers_path: &Path) -> Option<Prediction> {
        let text = std::fs::read_to_string(answers_path).ok()?;
        let doc: toml_edit::DocumentMut = text.parse().ok()?;
        let table = doc.get(TABLE)?.as_table_like()?;
        let mut answers = Vec::new();
        for q in self.questions {
            let value = table
                .get(q.key)
                .and_then(|item| item.as_value())
                .and_then(|v| read_value(q.kind, v));
            match value {
                Some(value) => answers.push((q.key, value)),
                None if q.required => return None,
                None => {}
            }
        }
        Some(Prediction { answers })
    }

    /// Before the profile runs: the prediction already in `answers_path`, or, when there is none
    /// and standard input is a terminal, the learner's answers to the form's questions,
    /// recorded there. `report_path` is the results file the first profile is about to write:
    /// whether it exists now is recorded too (a prediction made after a measurement can be read
    /// off it). Never waits on input that is not a terminal, and does not ask again what
    /// `course run` has just asked.
    pub fn before_the_profile(&self, answers_path: &Path, report_path: &Path) -> Result<Outcome> {
        if std::env::var_os(ASKED_ENV).is_some() {
            return Ok(Outcome::AskedByCourse);
        }
        if let Some(prediction) = self.recorded(answers_path) {
            return Ok(Outcome::AlreadyRecorded(prediction));
        }
        if !std::io::stdin().is_terminal() {
            return Ok(Outcome::NoTerminal);
        }
        let stdin = std::io::stdin();
        self.ask(
            answers_path,
            report_path,
            &mut stdin.lock(),
            &mut std::io::stderr(),
        )
    }

    /// The questions themselves, read from `input` and shown on `out`; the answers are recorded
    /// in `answers_path` (which must hold the template's `[prediction]` table). An empty answer
    /// to a required question, or the end of the input, counts as no prediction; an answer that
    /// does not fit is asked again.
    pub fn ask(
        &self,
        answers_path: &Path,
        report_path: &Path,
        input: &mut dyn BufRead,
        out: &mut dyn Write,
    ) -> Result<Outcome> {
        let report_existed = report_path.exists();
        writeln!(out, "{}", self.intro)?;
        if report_existed {
            writeln!(out, "    ({} already exists, so this prediction will not count as made first; delete it to predict blind.)", shown(report_path))?;
        }
        let mut answers = Vec::new();
        for q in self.questions {
            let value = loop {
                let Some(text) = line(input, out, &format!("    {}", q.prompt))? else {
                    break None;
                };
                if text.is_empty() {
                    break None;
                }
                match parse(q.kind, &text) {
                    Some(value) => break Some(value),
                    None => writeln!(out, "    {}", hint(q.kind, q.required))?,
                }
            };
            match value {
                Some(value) => answers.push((q.key, value)),
                None if q.required => return Ok(Outcome::Declined),
                None => {}
            }
        }
        let made_at = SystemTime::now();
        fill_answers::set(
            answers_path,
            &self.record(&answers, made_at, report_existed),
        )
        .with_context(|| {
            format!(
                "cannot record your prediction in {}",
                answers_path.display()
            )
        })?;
        Ok(Outcome::Made {
            prediction: Prediction { answers },
            made_at,
            report_existed,
        })
    }
}

/// What to type instead of an answer that did not fit.
fn hint(kind: Kind, required: bool) -> String {
    let skip = if required { "" } else { " (or Enter to skip)" };
    match kind {
        Kind::Text => format!("Some text, please{skip}."),
        Kind::Percent => format!("A percentage between 0 and 100, please{skip}."),
        Kind::Choice(words) => format!("One of: {}{skip}.", words.join(", ")),
    }
}

/// A typed answer, or None when it does not fit.
fn parse(kind: Kind, text: &str) -> Option<Value> {
    match kind {
        Kind::Text => Some(Value::Text(text.trim().to_string())),
        Kind::Percent => text
            .trim_end_matches('%')
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..=100.0).contains(v))
            .map(Value::Number),
        Kind::Choice(words) => {
            let said = text.trim().to_lowercase();
            words
                .iter()
                .find(|w| **w == said)
                .map(|w| Value::Text(w.to_string()))
        }
    }
}

/// A recorded answer, or None when it is empty or does not fit.
fn read_value(kind: Kind, value: &toml_edit::Value) -> Option<Value> {
    match (kind, value) {
        (Kind::Percent, toml_edit::Value::Float(f)) => Some(Value::Number(*f.value()))
            .filter(|v| matches!(v, Value::Number(n) if n.is_finite())),
        (Kind::Percent, toml_edit::Value::Integer(i)) => Some(Value::Number(*i.value() as f64)),
        (_, toml_edit::Value::String(s)) if !s.value().trim().is_empty() => parse(kind, s.value()),
        _ => None,
    }
}

/// The results file as the exercise names it (`results/report.json`), not its whole path.
fn shown(report_path: &Path) -> String {
    let mut parts: Vec<String> = report_path
        .iter()
        .rev()
        .take(2)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    parts.reverse();
    parts.join("/")
}

/// One trimmed line after `question`; None at the end of the input.
fn line(input: &mut dyn BufRead, out: &mut dyn Write, question: &str) -> Result<Option<String>> {
    write!(out, "{question}")?;
    out.flush()?;
    let mut text = String::new();
    if input
        .read_line(&mut text)
        .context("cannot read your answer from the terminal")?
        == 0
    {
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
    const FUSION_TEMPLATE: &str = "[prediction]\nrow_time = \"\"\npct_of_roofline = \"\"\nmade_at = \"\"\nreport_existed = \"\"\n";

    fn folder(answers: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let answers_path = dir.path().join("answers.toml");
        std::fs::write(&answers_path, answers).unwrap();
        let report = dir.path().join("results/report.json");
        (dir, answers_path, report)
    }

    fn asked(form: &Form, answers_path: &Path, report: &Path, typed: &str) -> (Outcome, String) {
        let mut shown = Vec::new();
        let outcome = form
            .ask(answers_path, report, &mut typed.as_bytes(), &mut shown)
            .unwrap();
        (outcome, String::from_utf8(shown).unwrap())
    }

    fn top_op(op: &str, share: Option<f64>) -> Prediction {
        let mut answers = vec![("op", Value::Text(op.into()))];
        answers.extend(share.map(|s| ("share_pct", Value::Number(s))));
        Prediction { answers }
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
    fn each_template_gets_its_form() {
        assert_eq!(Form::for_template(TEMPLATE), Some(&TOP_OP));
        assert_eq!(Form::for_template(FUSION_TEMPLATE), Some(&FUSION));
        assert_eq!(Form::for_template("[plan]\nattack = \"\"\n"), None);
        assert_eq!(
            Form::for_template("[prediction]\nguess = \"\"\n"),
            None,
            "a table that fits no form"
        );
    }

    #[test]
    fn an_answer_is_recorded_with_its_time_and_whether_the_report_existed() {
        let (_dir, answers, report) = folder(TEMPLATE);
        let (outcome, shown) = asked(&TOP_OP, &answers, &report, "matmul\nabout half\n60%\n");
        let Outcome::Made {
            prediction,
            made_at,
            report_existed,
        } = outcome
        else {
            panic!("{outcome:?}")
        };
        assert_eq!(prediction, top_op("matmul", Some(60.0)));
        assert!(!report_existed);
        assert!(
            shown.contains("A percentage between 0 and 100"),
            "a share that is no number is asked again: {shown}"
        );
        let text = std::fs::read_to_string(&answers).unwrap();
        let doc: toml::Table = text.parse().unwrap();
        let table = doc["prediction"].as_table().unwrap();
        assert_eq!(table["op"].as_str(), Some("matmul"));
        assert_eq!(table["share_pct"].as_float(), Some(60.0));
        assert_eq!(table["report_existed"].as_bool(), Some(false));
        assert_eq!(
            table["made_at"].as_str().and_then(parse_time),
            Some(parse_time(&format_time(made_at)).unwrap())
        );
        assert!(
            text.contains("# asked before the profile runs") && text.contains("# written for you"),
            "comments kept: {text}"
        );
        // Read back as the next run sees it: nothing is asked twice.
        assert_eq!(TOP_OP.recorded(&answers), Some(prediction));
    }

    #[test]
    fn the_fusion_form_takes_its_words_and_asks_again_for_others() {
        let (_dir, answers, report) = folder(FUSION_TEMPLATE);
        let (outcome, shown) = asked(
            &FUSION,
            &answers,
            &report,
            "faster\nAbout the same\nhigher\n",
        );
        let Outcome::Made { prediction, .. } = outcome else {
            panic!("{outcome:?}")
        };
        assert!(
            shown.contains("One of: shorter, about the same, longer."),
            "{shown}"
        );
        assert_eq!(prediction.text("row_time"), Some("about the same"));
        assert_eq!(prediction.text("pct_of_roofline"), Some("higher"));
        assert_eq!(FUSION.recorded(&answers), Some(prediction));
        assert_eq!(
            FUSION.recorded(
                &folder(
                    FUSION_TEMPLATE
                        .replacen("row_time = \"\"", "row_time = \"quicker\"", 1)
                        .as_str()
                )
                .1
            ),
            None,
            "a word that is not a choice"
        );
    }

    #[test]
    fn a_report_already_there_is_said_and_recorded() {
        let (_dir, answers, report) = folder(TEMPLATE);
        std::fs::create_dir_all(report.parent().unwrap()).unwrap();
        std::fs::write(&report, "{}").unwrap();
        let (outcome, shown) = asked(&TOP_OP, &answers, &report, "gelu\n\n");
        assert!(
            matches!(&outcome, Outcome::Made { report_existed: true, prediction, .. } if prediction.number("share_pct").is_none()),
            "{outcome:?}"
        );
        assert!(shown.contains("(results/report.json already exists, so this prediction will not count as made first"), "{shown}");
        let doc: toml::Table = std::fs::read_to_string(&answers).unwrap().parse().unwrap();
        assert_eq!(doc["prediction"]["report_existed"].as_bool(), Some(true));
        assert_eq!(
            doc["prediction"]["share_pct"].as_str(),
            Some(""),
            "a skipped share stays unanswered"
        );
    }

    #[test]
    fn no_answer_or_the_end_of_the_input_writes_nothing() {
        let (_dir, answers, report) = folder(TEMPLATE);
        for typed in ["\n", ""] {
            assert_eq!(
                asked(&TOP_OP, &answers, &report, typed).0,
                Outcome::Declined,
                "{typed:?}"
            );
        }
        assert_eq!(std::fs::read_to_string(&answers).unwrap(), TEMPLATE);
        assert_eq!(TOP_OP.recorded(&answers), None);
        let (_dir, fusion, report) = folder(FUSION_TEMPLATE);
        assert_eq!(
            asked(&FUSION, &fusion, &report, "shorter\n\n").0,
            Outcome::Declined,
            "a required second answer left out"
        );
        assert_eq!(std::fs::read_to_string(&fusion).unwrap(), FUSION_TEMPLATE);
    }

    #[test]
    fn a_recorded_prediction_is_read_whatever_way_its_share_is_written() {
        for (share, read) in [
            ("60", Some(60.0)),
            ("60.5", Some(60.5)),
            ("\"40%\"", Some(40.0)),
            ("\"\"", None),
            ("\"lots\"", None),
        ] {
            let (_dir, answers, _report) = folder(
                &TEMPLATE
                    .replacen("op = \"\"", "op = \" softmax \"", 1)
                    .replacen("share_pct = \"\"", &format!("share_pct = {share}"), 1),
            );
            assert_eq!(
                TOP_OP.recorded(&answers),
                Some(top_op("softmax", read)),
                "{share}"
            );
        }
        let (_dir, broken, _) = folder("[prediction\nop = \"x\"\n");
        assert_eq!(
            TOP_OP.recorded(&broken),
            None,
            "a file that is not TOML holds no prediction"
        );
        assert_eq!(
            TOP_OP.recorded(Path::new("/nonexistent/answers.toml")),
            None
        );
    }

    #[test]
    fn a_template_without_the_table_is_an_error_that_names_the_file() {
        let (_dir, answers, report) = folder("[plan]\nattack = \"\"\n");
        let mut shown = Vec::new();
        let err = format!(
            "{:#}",
            TOP_OP
                .ask(
                    &answers,
                    &report,
                    &mut "matmul\n50\n".as_bytes(),
                    &mut shown
                )
                .unwrap_err()
        );
        assert!(
            err.contains("cannot record your prediction")
                && err.contains("answers.toml")
                && err.contains("no `prediction`"),
            "{err}"
        );
    }
}
