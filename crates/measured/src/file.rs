//! The measured-figures file, `book/measured/NAME.json`: one experiment (or one recorded source),
//! one machine and one date, and its figures under stable keys.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// The format number this crate reads and writes.
pub const FORMAT: u32 = 1;

/// The units a numeric figure may carry: those the book's prose check knows, or "" for a plain
/// number (a count, a ratio written without ×).
pub const UNITS: &[&str] = &[
    "", "ms", "µs", "ns", "s", "GB/s", "TB/s", "GFLOP/s", "TFLOP/s", "FLOP/B", "tok/s", "tokens/s",
    "req/s", "B", "KB", "MB", "GB", "GiB", "%", "×",
];

/// The most decimals a figure may show.
pub const MAX_DIGITS: u8 = 6;

/// One `book/measured/NAME.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredFile {
    /// Always [`FORMAT`].
    pub format: u32,
    /// The file's name without `.json`: an experiment (`exercise-3`) or a recorded source (`h200`).
    pub name: String,
    pub measured_on: MeasuredOn,
    /// Figures by key (a short dotted snake_case path such as `gelu.share`).
    pub figures: BTreeMap<String, Figure>,
}

/// Where, when and how the figures of one file were measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredOn {
    pub source: Source,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// One line, as a reader would say it: "Intel(R) Xeon(R) Processor, 2 threads, Linux x86-64".
    pub machine: String,
    /// `cpu` or `cuda`.
    pub device: String,
    /// The engine's CPU kernel path, or the GPU's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The measured ceilings the roofline figures used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings: Option<Ceilings>,
    /// What produced the file (`book-measure exercise-3`, `scripts/gpu-check.sh`).
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Who wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `book-measure` ran the experiment on this machine.
    BookMeasure,
    /// Copied by hand from a recorded run (the note says which).
    Transcribed,
    /// Written by another tool (e.g. `scripts/gpu-check.sh`).
    Recorded,
}

/// The measured memory rate and compute peak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ceilings {
    pub memory_gb_s: f64,
    pub compute_gflop_s: f64,
}

/// One figure: a number with its unit and the decimals to show, or a text (a kernel path, a name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawFigure", into = "RawFigure")]
pub enum Figure {
    Number {
        value: f64,
        unit: String,
        digits: u8,
    },
    Text(String),
}

/// The figure as JSON spells it; [`Figure`] is what it may hold.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digits: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

impl TryFrom<RawFigure> for Figure {
    type Error = String;

    fn try_from(raw: RawFigure) -> Result<Self, String> {
        match raw {
            RawFigure {
                value: Some(value),
                unit: Some(unit),
                digits: Some(digits),
                text: None,
            } => Ok(Figure::Number {
                value,
                unit,
                digits,
            }),
            RawFigure {
                value: None,
                unit: None,
                digits: None,
                text: Some(text),
            } => Ok(Figure::Text(text)),
            _ => Err(
                "a figure is either {\"value\", \"unit\", \"digits\"} (a number) or \
                      {\"text\"} (a text), nothing else"
                    .to_string(),
            ),
        }
    }
}

impl From<Figure> for RawFigure {
    fn from(figure: Figure) -> Self {
        match figure {
            Figure::Number {
                value,
                unit,
                digits,
            } => RawFigure {
                value: Some(value),
                unit: Some(unit),
                digits: Some(digits),
                text: None,
            },
            Figure::Text(text) => RawFigure {
                value: None,
                unit: None,
                digits: None,
                text: Some(text),
            },
        }
    }
}

impl Figure {
    /// A number shown with `digits` decimals and `unit` (one of [`UNITS`]).
    pub fn number(value: f64, unit: &str, digits: u8) -> Self {
        Figure::Number {
            value,
            unit: unit.to_string(),
            digits,
        }
    }

    pub fn text(text: impl Into<String>) -> Self {
        Figure::Text(text.into())
    }

    /// The figure as the book prints it: `14.2%`, `1.49×`, `22.7 ms`, `3`, `packed-avx512`.
    pub fn render(&self) -> String {
        match self {
            Figure::Number {
                value,
                unit,
                digits,
            } => render_number(*value, unit, *digits),
            Figure::Text(text) => text.clone(),
        }
    }

    /// The value of a numeric figure.
    pub fn value(&self) -> Option<f64> {
        match self {
            Figure::Number { value, .. } => Some(*value),
            Figure::Text(_) => None,
        }
    }

    /// What is wrong with this figure, if anything.
    fn problem(&self) -> Option<String> {
        match self {
            Figure::Number {
                value,
                unit,
                digits,
            } => {
                if !value.is_finite() {
                    Some(format!("its value {value} is not a finite number"))
                } else if !UNITS.contains(&unit.as_str()) {
                    Some(format!(
                        "its unit \"{unit}\" is not one the book knows ({})",
                        UNITS
                            .iter()
                            .map(|u| format!("\"{u}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                } else if *digits > MAX_DIGITS {
                    Some(format!(
                        "it asks for {digits} decimals (at most {MAX_DIGITS})"
                    ))
                } else {
                    None
                }
            }
            Figure::Text(text) => {
                if text.trim().is_empty() {
                    Some("its text is empty".to_string())
                } else if text.contains('\n') {
                    Some("its text has a line break".to_string())
                } else {
                    None
                }
            }
        }
    }
}

/// `value` with `digits` decimals, then the unit: no space before `%` and `×`, one space before
/// every other unit, none for a plain number. A value that rounds to zero never shows a minus.
pub fn render_number(value: f64, unit: &str, digits: u8) -> String {
    let mut number = format!("{:.*}", digits as usize, value);
    if number.starts_with('-') && number[1..].chars().all(|c| c == '0' || c == '.') {
        number.remove(0);
    }
    match unit {
        "" => number,
        "%" | "×" => number + unit,
        _ => format!("{number} {unit}"),
    }
}

/// Whether `key` is a dotted snake_case path: `gelu.share`, `b16.p50_ms`.
pub fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|segment| {
            !segment.is_empty()
                && segment
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// Whether `name` is a file name the book can refer to: lowercase kebab-case (`exercise-3`, `h200`).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

impl MeasuredFile {
    /// An empty file for experiment `name`, to fill with [`MeasuredFile::insert`].
    pub fn new(name: impl Into<String>, measured_on: MeasuredOn) -> Self {
        MeasuredFile {
            format: FORMAT,
            name: name.into(),
            measured_on,
            figures: BTreeMap::new(),
        }
    }

    /// Adds or replaces the figure under `key`.
    pub fn insert(&mut self, key: impl Into<String>, figure: Figure) -> &mut Self {
        self.figures.insert(key.into(), figure);
        self
    }

    /// Every problem with this file, one sentence each; empty when it is valid.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.format != FORMAT {
            problems.push(format!(
                "\"format\" is {}, but this build of the book reads format {FORMAT}",
                self.format
            ));
        }
        if !is_valid_name(&self.name) {
            problems.push(format!(
                "\"name\" \"{}\" is not lowercase kebab-case",
                self.name
            ));
        }
        let on = &self.measured_on;
        if !is_date(&on.date) {
            problems.push(format!(
                "\"measured_on.date\" \"{}\" is not YYYY-MM-DD",
                on.date
            ));
        }
        for (field, value) in [
            ("machine", &on.machine),
            ("device", &on.device),
            ("command", &on.command),
        ] {
            if value.trim().is_empty() {
                problems.push(format!("\"measured_on.{field}\" is empty"));
            } else if value.contains('\n') {
                problems.push(format!(
                    "\"measured_on.{field}\" has a line break (one line)"
                ));
            }
        }
        if let Some(c) = &on.ceilings {
            let positive = |x: f64| x.is_finite() && x > 0.0;
            if !positive(c.memory_gb_s) || !positive(c.compute_gflop_s) {
                problems.push("\"measured_on.ceilings\" are not positive numbers".to_string());
            }
        }
        for (key, figure) in &self.figures {
            if !is_valid_key(key) {
                let mut p = format!("figure key \"{key}\" is not a dotted snake_case path");
                let _ = write!(
                    p,
                    " (lowercase letters, digits, `_`, segments joined by `.`)"
                );
                problems.push(p);
            }
            if let Some(problem) = figure.problem() {
                problems.push(format!("figure \"{key}\": {problem}"));
            }
        }
        problems
    }

    /// The line the book prints under a page that uses this file's figures.
    pub fn measured_on_line(&self) -> String {
        let on = &self.measured_on;
        let mut line = format!("Measured on {}", on.machine);
        let mut how = vec![on.device.clone()];
        if let Some(path) = &on.kernel_path {
            if path != &on.device && !on.machine.contains(path.as_str()) {
                how.push(path.clone());
            }
        }
        let _ = write!(line, " ({}), {}", how.join(", "), on.date);
        let note = on.note.as_deref().map(first_clause);
        match on.source {
            Source::Transcribed => match note {
                Some(note) if note.to_lowercase().starts_with("transcribed") => {
                    let _ = write!(line, "; {note}");
                }
                Some(note) => {
                    let _ = write!(line, "; transcribed from {note}");
                }
                None => {
                    let _ = write!(line, "; transcribed from `{}`", on.command);
                }
            },
            Source::BookMeasure | Source::Recorded => {
                let _ = write!(line, ", by `{}`", on.command);
                if let Some(note) = note {
                    let _ = write!(line, " ({note})");
                }
            }
        }
        let _ = write!(line, " [{}.json]", self.name);
        line
    }
}

/// A note's first clause, for the one-line footer (the whole note is in the file): up to the first
/// " (", "; " or ". ".
pub fn first_clause(note: &str) -> &str {
    let end = [" (", "; ", ". "]
        .iter()
        .filter_map(|sep| note.find(sep))
        .min()
        .unwrap_or(note.len());
    note[..end].trim_end_matches('.')
}

fn is_date(date: &str) -> bool {
    let b = date.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn on() -> MeasuredOn {
        MeasuredOn {
            source: Source::BookMeasure,
            date: "2026-12-05".into(),
            machine: "Intel(R) Xeon(R) Processor, 2 threads, Linux x86-64".into(),
            device: "cpu".into(),
            kernel_path: Some("packed-avx512".into()),
            threads: Some(2),
            ceilings: Some(Ceilings {
                memory_gb_s: 22.9,
                compute_gflop_s: 108.0,
            }),
            command: "book-measure exercise-3".into(),
            note: None,
        }
    }

    #[test]
    fn numbers_render_with_their_decimals_and_unit_spacing() {
        assert_eq!(render_number(14.23, "%", 1), "14.2%");
        assert_eq!(render_number(1.489, "×", 2), "1.49×");
        assert_eq!(render_number(22.71, "ms", 1), "22.7 ms");
        assert_eq!(render_number(22.9, "GB/s", 0), "23 GB/s");
        assert_eq!(render_number(3.0, "", 0), "3");
        assert_eq!(render_number(0.625, "", 3), "0.625");
        assert_eq!(
            render_number(-0.04, "%", 1),
            "0.0%",
            "no minus on a rounded zero"
        );
        assert_eq!(render_number(-1.25, "%", 1), "-1.2%");
        assert_eq!(Figure::text("packed-avx512").render(), "packed-avx512");
    }

    #[test]
    fn the_format_example_round_trips() {
        let json = r#"{
          "format": 1,
          "name": "exercise-3",
          "measured_on": {
            "source": "book-measure",
            "date": "2026-12-05",
            "machine": "Intel(R) Xeon(R) Processor, 2 threads, Linux x86-64",
            "device": "cpu",
            "kernel_path": "packed-avx512",
            "threads": 2,
            "ceilings": { "memory_gb_s": 22.9, "compute_gflop_s": 108.0 },
            "command": "book-measure exercise-3",
            "note": "optional free text"
          },
          "figures": {
            "gelu.share":  { "value": 14.2,  "unit": "%",  "digits": 1 },
            "step_ms":     { "value": 22.71, "unit": "ms", "digits": 1 },
            "kernel_path": { "text": "packed-avx512" }
          }
        }"#;
        let file: MeasuredFile = serde_json::from_str(json).unwrap();
        assert_eq!(file.problems(), Vec::<String>::new());
        assert_eq!(file.figures["gelu.share"].render(), "14.2%");
        assert_eq!(file.figures["step_ms"].render(), "22.7 ms");
        assert_eq!(file.figures["kernel_path"], Figure::text("packed-avx512"));
        let again: MeasuredFile =
            serde_json::from_str(&serde_json::to_string(&file).unwrap()).unwrap();
        assert_eq!(again, file);
    }

    #[test]
    fn a_figure_is_a_number_or_a_text_never_both() {
        let both = r#"{"value": 1.0, "unit": "ms", "digits": 1, "text": "x"}"#;
        let err = serde_json::from_str::<Figure>(both)
            .unwrap_err()
            .to_string();
        assert!(err.contains("either"), "{err}");
        let half = r#"{"value": 1.0, "unit": "ms"}"#;
        assert!(serde_json::from_str::<Figure>(half).is_err());
        let extra = r#"{"text": "x", "colour": "red"}"#;
        assert!(serde_json::from_str::<Figure>(extra).is_err());
    }

    #[test]
    fn problems_name_each_bad_field() {
        let mut file = MeasuredFile::new("Exercise 3", on());
        file.format = 2;
        file.measured_on.date = "5 Dec".into();
        file.measured_on.machine = " ".into();
        file.insert("Gelu-Share", Figure::number(1.0, "%", 1));
        file.insert("t", Figure::number(f64::NAN, "%", 1));
        file.insert("u", Figure::number(1.0, "msec", 1));
        file.insert("d", Figure::number(1.0, "ms", 9));
        file.insert("e", Figure::text(""));
        let problems = file.problems().join("\n");
        for expected in [
            "\"format\" is 2",
            "\"name\" \"Exercise 3\"",
            "\"measured_on.date\" \"5 Dec\"",
            "\"measured_on.machine\" is empty",
            "figure key \"Gelu-Share\"",
            "figure \"t\": its value NaN",
            "figure \"u\": its unit \"msec\"",
            "figure \"d\": it asks for 9 decimals",
            "figure \"e\": its text is empty",
        ] {
            assert!(
                problems.contains(expected),
                "missing {expected:?} in:\n{problems}"
            );
        }
    }

    #[test]
    fn keys_and_names() {
        assert!(is_valid_key("gelu.share"));
        assert!(is_valid_key("b16.p50_ms"));
        assert!(!is_valid_key("gelu..share"));
        assert!(!is_valid_key("Gelu"));
        assert!(is_valid_name("exercise-3"));
        assert!(is_valid_name("h200"));
        assert!(!is_valid_name("exercise_3"));
        assert!(!is_valid_name("-x"));
    }

    #[test]
    fn measured_on_lines() {
        let mut file = MeasuredFile::new("exercise-3", on());
        assert_eq!(
            file.measured_on_line(),
            "Measured on Intel(R) Xeon(R) Processor, 2 threads, Linux x86-64 (cpu, \
             packed-avx512), 2026-12-05, by `book-measure exercise-3` [exercise-3.json]"
        );
        file.name = "h200".into();
        file.measured_on = MeasuredOn {
            source: Source::Transcribed,
            machine: "one NVIDIA H200".into(),
            device: "cuda".into(),
            kernel_path: Some("NVIDIA H200".into()),
            date: "2026-12-04".into(),
            command: "scripts/gpu-check.sh".into(),
            note: Some(
                "transcribed from scripts/gpu-check.sh's run of 2026-12-04 (B=1 T=8); more".into(),
            ),
            threads: None,
            ceilings: None,
        };
        assert_eq!(
            file.measured_on_line(),
            "Measured on one NVIDIA H200 (cuda), 2026-12-04; transcribed from \
             scripts/gpu-check.sh's run of 2026-12-04 [h200.json]"
        );
    }
}
