//! The one writer of answers.toml: values are set in place and the template's comments are
//! kept. The reference solutions (2, 3, 4, 5, 7) fill in their answers from their own results,
//! the way a learner copies them from the printed tables; `course run` records a prediction;
//! the terminal quiz (exercises 1 and 6) records the answers it asked for.

use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;
use toml_edit::{DocumentMut, Item, TableLike, Value};

/// An answer: a number or a piece of text.
pub enum Answer {
    Number(f64),
    Text(String),
    Flag(bool),
}

impl From<bool> for Answer {
    fn from(v: bool) -> Self {
        Answer::Flag(v)
    }
}

impl From<f64> for Answer {
    fn from(v: f64) -> Self {
        Answer::Number(v)
    }
}

impl From<&str> for Answer {
    fn from(v: &str) -> Self {
        Answer::Text(v.to_string())
    }
}

impl From<String> for Answer {
    fn from(v: String) -> Self {
        Answer::Text(v)
    }
}

fn to_value(answer: &Answer) -> Value {
    match answer {
        // Seven significant digits, the way a person copies a figure, with digits to spare for
        // the tolerances (a relative one for tiny errors, an absolute one for shares).
        Answer::Number(v) => Value::from(format!("{v:.6e}").parse::<f64>().unwrap_or(*v)),
        Answer::Text(t) => Value::from(t.as_str()),
        Answer::Flag(b) => Value::from(*b),
    }
}

/// Sets each `path = answer` in answers.toml. A path is dotted (`comparison.ratio`); a number
/// after an array of tables picks its entry (`top_ops.0.name`).
pub fn fill(answers_path: &Path, answers: &[(String, Answer)]) -> Result<()> {
    set(answers_path, answers)?;
    println!("(solution) filled in {}", answers_path.display());
    Ok(())
}

/// [`fill`] without the solution's notice (for `course run`, which records a prediction). The
/// tables of every path must be in the file already: a missing one is a template out of step.
pub fn set(answers_path: &Path, answers: &[(String, Answer)]) -> Result<()> {
    let entries = answers
        .iter()
        .map(|(path, answer)| (path.split('.').collect::<Vec<_>>(), answer));
    edit(answers_path, entries, Missing::Refuse)
}

/// Sets `[table] key = answer` for each answer, creating the file, the table and the keys that
/// are not there yet (a learner may have deleted them). Keys are taken whole, dots included.
pub fn set_in_table(answers_path: &Path, table: &str, answers: &[(String, Answer)]) -> Result<()> {
    let entries = answers
        .iter()
        .map(|(key, answer)| (vec![table, key.as_str()], answer));
    edit(answers_path, entries, Missing::Create)
}

/// What to do about a file or table that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    Refuse,
    Create,
}

fn edit<'a>(
    answers_path: &Path,
    entries: impl Iterator<Item = (Vec<&'a str>, &'a Answer)>,
    missing: Missing,
) -> Result<()> {
    let text = match std::fs::read_to_string(answers_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && missing == Missing::Create => {
            String::new()
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", answers_path.display())),
    };
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        anyhow!(
            "{} is not valid TOML ({}): fix it by hand, or restore it with `course reset`",
            answers_path.display(),
            e.to_string().trim()
        )
    })?;
    for (parts, answer) in entries {
        set_in(doc.as_table_mut(), &parts, answer, missing).with_context(|| {
            format!(
                "{}: cannot set `{}`",
                answers_path.display(),
                parts.join(".")
            )
        })?;
    }
    std::fs::write(answers_path, doc.to_string())
        .with_context(|| format!("cannot write {}", answers_path.display()))
}

fn set_in(
    table: &mut dyn TableLike,
    parts: &[&str],
    answer: &Answer,
    missing: Missing,
) -> Result<()> {
    match parts {
        [] => Ok(()),
        [last] => {
            // Keep the comment after the value, if there is one.
            let decor = table
                .get(last)
                .and_then(Item::as_value)
                .map(|v| v.decor().clone());
            let mut value = to_value(answer);
            if let Some(decor) = decor {
                *value.decor_mut() = decor;
            }
            // Replace the value in place: the key keeps the comment lines above it.
            match table.get_mut(last) {
                Some(item) => *item = Item::Value(value),
                None => {
                    table.insert(last, Item::Value(value));
                }
            }
            Ok(())
        }
        [head, rest @ ..] => {
            if table.get(head).is_none() {
                match missing {
                    Missing::Create => {
                        table.insert(head, toml_edit::table());
                    }
                    Missing::Refuse => bail!("no `{head}` in the template"),
                }
            }
            let Some(item) = table.get_mut(head) else {
                bail!("no `{head}` in the file")
            };
            if let Some(list) = item.as_array_of_tables_mut() {
                let index: usize = rest[0]
                    .parse()
                    .with_context(|| format!("`{head}` is a list: give an index"))?;
                let Some(entry) = list.get_mut(index) else {
                    bail!("`{head}` has no entry {index}")
                };
                set_in(entry, &rest[1..], answer, missing)
            } else if let Some(inner) = item.as_table_like_mut() {
                set_in(inner, rest, answer, missing)
            } else {
                bail!("`{head}` is not a table: restore the file with `course reset`")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "# Exercise N\n[quiz]\n# the first question\nq1 = \"\" # your answer\n\n[[top_ops]]\nname = \"\"\n\n[[top_ops]]\nname = \"\"\n";

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn set_keeps_the_comments_and_fills_lists_by_index() {
        let (_dir, path) = file(TEMPLATE);
        set(
            &path,
            &[
                ("quiz.q1".into(), "Profile".into()),
                ("top_ops.1.name".into(), "gelu".into()),
            ],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("# the first question\nq1 = \"Profile\" # your answer"),
            "{text}"
        );
        assert!(text.starts_with("# Exercise N\n"), "{text}");
        let doc: toml::Table = text.parse().unwrap();
        assert_eq!(doc["top_ops"][1]["name"].as_str(), Some("gelu"));
        assert_eq!(doc["top_ops"][0]["name"].as_str(), Some(""));
    }

    #[test]
    fn set_refuses_a_path_the_template_lacks_and_names_it() {
        let (_dir, path) = file(TEMPLATE);
        let err = format!(
            "{:#}",
            set(&path, &[("plan.attack".into(), "matmul".into())]).unwrap_err()
        );
        assert!(
            err.contains("answers.toml")
                && err.contains("plan.attack")
                && err.contains("no `plan` in the template"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            set(&path, &[("top_ops.5.name".into(), "x".into())]).unwrap_err()
        );
        assert!(err.contains("no entry 5"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            TEMPLATE,
            "nothing written on a refusal"
        );
    }

    #[test]
    fn set_in_table_creates_what_is_missing_and_keeps_the_rest() {
        let (dir, path) = file(TEMPLATE);
        set_in_table(
            &path,
            "quiz",
            &[
                ("q1".into(), "Benchmark".into()),
                ("q2".into(), "Profile".into()),
            ],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("q1 = \"Benchmark\" # your answer") && text.contains("q2 = \"Profile\""),
            "{text}"
        );
        // No file at all, or no [quiz] table: both are created.
        let fresh = dir.path().join("fresh.toml");
        set_in_table(&fresh, "quiz", &[("q.1".into(), "Profile".into())]).unwrap();
        let doc: toml::Table = std::fs::read_to_string(&fresh).unwrap().parse().unwrap();
        assert_eq!(
            doc["quiz"]["q.1"].as_str(),
            Some("Profile"),
            "a key with a dot is one key"
        );
        let (_dir2, other) = file("[plan]\nattack = \"\"\n");
        set_in_table(&other, "quiz", &[("q1".into(), "Benchmark".into())]).unwrap();
        let doc: toml::Table = std::fs::read_to_string(&other).unwrap().parse().unwrap();
        assert_eq!(
            (doc["quiz"]["q1"].as_str(), doc["plan"]["attack"].as_str()),
            (Some("Benchmark"), Some(""))
        );
        // An inline table is a table too.
        let (_dir3, inline) = file("quiz = { q1 = \"\" }\n");
        set_in_table(&inline, "quiz", &[("q1".into(), "Profile".into())]).unwrap();
        let doc: toml::Table = std::fs::read_to_string(&inline).unwrap().parse().unwrap();
        assert_eq!(doc["quiz"]["q1"].as_str(), Some("Profile"));
    }

    #[test]
    fn broken_files_are_refused_with_the_way_out() {
        let (_dir, path) = file("quiz = 3\n");
        let err = format!(
            "{:#}",
            set_in_table(&path, "quiz", &[("q1".into(), "x".into())]).unwrap_err()
        );
        assert!(
            err.contains("`quiz` is not a table") && err.contains("course reset"),
            "{err}"
        );
        let (_dir, path) = file("[quiz\n");
        let err = format!(
            "{:#}",
            set_in_table(&path, "quiz", &[("q1".into(), "x".into())]).unwrap_err()
        );
        assert!(
            err.contains("answers.toml is not valid TOML") && err.contains("course reset"),
            "{err}"
        );
        let missing = path.with_file_name("missing.toml");
        let err = format!(
            "{:#}",
            set(&missing, &[("quiz.q1".into(), "x".into())]).unwrap_err()
        );
        assert!(
            err.contains("cannot read") && err.contains("missing.toml"),
            "{err}"
        );
    }
}
