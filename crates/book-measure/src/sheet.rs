//! What an experiment collects: its figures under their keys and where they were measured. The
//! file itself, its writer and its rendering are the `measured` crate's (one definition); this is
//! only the collecting side.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::machine::Machine;

/// A figure before it is written: a number with its unit and decimals, or a text.
#[derive(Debug, Clone, PartialEq)]
pub enum Fig {
    Num {
        value: f64,
        unit: &'static str,
        digits: u8,
    },
    Text(String),
}

/// One experiment's figures and the record of where they come from.
#[derive(Debug, Clone)]
pub struct Sheet {
    pub name: &'static str,
    pub machine: Machine,
    /// The engine's CPU kernel path (`avx512`), where the experiment ran the engine.
    pub kernel_path: Option<String>,
    /// (memory GB/s, compute GFLOP/s): the ceilings the roofline figures used.
    pub ceilings: Option<(f64, f64)>,
    pub command: String,
    pub note: Option<String>,
    pub figures: BTreeMap<String, Fig>,
}

impl Sheet {
    pub fn new(name: &'static str, command: impl Into<String>) -> Sheet {
        Sheet {
            name,
            machine: Machine::this(),
            kernel_path: None,
            ceilings: None,
            command: command.into(),
            note: None,
            figures: BTreeMap::new(),
        }
    }

    /// A number with its unit (one the book's prose check knows, or "" for a plain number) and
    /// the decimals the book shows. A value that is not finite is left out: the book would
    /// rather miss a key (and say so) than print NaN.
    pub fn num(&mut self, key: impl Into<String>, value: f64, unit: &'static str, digits: u8) {
        let key = key.into();
        debug_assert!(valid_key(&key), "{key}");
        if value.is_finite() {
            self.figures.insert(
                key,
                Fig::Num {
                    value,
                    unit,
                    digits,
                },
            );
        }
    }

    pub fn text(&mut self, key: impl Into<String>, text: impl Into<String>) {
        let key = key.into();
        debug_assert!(valid_key(&key), "{key}");
        self.figures.insert(key, Fig::Text(text.into()));
    }

    #[cfg(test)]
    pub fn get(&self, key: &str) -> Option<&Fig> {
        self.figures.get(key)
    }

    /// The number under `key`, for tests and for figures computed from other figures.
    pub fn value(&self, key: &str) -> Option<f64> {
        match self.figures.get(key)? {
            Fig::Num { value, .. } => Some(*value),
            Fig::Text(_) => None,
        }
    }

    #[cfg(test)]
    pub fn text_of(&self, key: &str) -> Option<&str> {
        match self.figures.get(key)? {
            Fig::Text(t) => Some(t),
            Fig::Num { .. } => None,
        }
    }

    /// The measured file, as the `measured` crate defines it.
    pub fn to_file(&self, date: &str) -> measured::MeasuredFile {
        let figures = self
            .figures
            .iter()
            .map(|(k, f)| {
                let figure = match f {
                    Fig::Num {
                        value,
                        unit,
                        digits,
                    } => measured::Figure::number(*value, unit, *digits),
                    Fig::Text(t) => measured::Figure::text(t),
                };
                (k.clone(), figure)
            })
            .collect();
        measured::MeasuredFile {
            format: measured::FORMAT,
            name: self.name.to_string(),
            measured_on: measured::MeasuredOn {
                source: measured::Source::BookMeasure,
                date: date.to_string(),
                machine: self.machine.line(),
                device: "cpu".to_string(),
                kernel_path: self.kernel_path.clone(),
                threads: Some(self.machine.threads as u32),
                ceilings: self.ceilings.map(|(m, c)| measured::Ceilings {
                    memory_gb_s: m,
                    compute_gflop_s: c,
                }),
                command: self.command.clone(),
                note: self.note.clone(),
            },
            figures,
        }
    }

    /// Writes `DIR/NAME.json` with the measured crate's writer.
    pub fn write(&self, dir: &Path, date: &str) -> Result<PathBuf> {
        if self.figures.is_empty() {
            bail!(
                "experiment `{}` measured no figure: its program's results were empty",
                self.name
            );
        }
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
        let path = dir.join(format!("{}.json", self.name));
        measured::write(dir, &self.to_file(date))
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

/// A key part from a name the programs print (a row name such as `ProfilerStep*` or
/// `attn-rot`, a rate such as 0.83): lower case, `_` for anything but letters and digits.
pub fn key_part(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// A key: dotted parts of lower-case letters, digits and `_`.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// Today's date in UTC, `YYYY-MM-DD` (civil from days, no time-zone crate needed).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    date_of_unix_days((secs / 86_400) as i64)
}

/// The civil date of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
pub fn date_of_unix_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_parts_are_snake_case() {
        assert_eq!(key_part("ProfilerStep*"), "profilerstep");
        assert_eq!(key_part("attn-rot"), "attn_rot");
        assert_eq!(key_part("lm_head"), "lm_head");
        assert_eq!(key_part("0.83"), "0_83");
        assert!(valid_key("exercise.gelu.share"));
        assert!(!valid_key("Gelu.share"));
        assert!(!valid_key("gelu..share"));
    }

    #[test]
    fn dates_come_from_days_since_the_epoch() {
        assert_eq!(date_of_unix_days(0), "1970-01-01");
        assert_eq!(date_of_unix_days(11_016), "2000-02-29");
        // 2026-12-05
        assert_eq!(date_of_unix_days(20_792), "2026-12-05");
    }

    #[test]
    fn a_figure_that_is_not_finite_is_left_out() {
        let mut s = Sheet::new("t", "test");
        s.num("a", f64::NAN, "ms", 1);
        s.num("b", 2.5, "ms", 1);
        assert_eq!(s.value("a"), None);
        assert_eq!(s.value("b"), Some(2.5));
    }
}
