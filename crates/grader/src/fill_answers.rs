//! Filling an answers.toml in place, for the reference solutions (2, 3, 4, 5, 7), which write
//! their answers from their own results, the way a learner copies
//! them from the printed tables: values are set in place, the template's comments are kept.

use anyhow::{bail, Context, Result};
use std::path::Path;
use toml_edit::{DocumentMut, Item, Table, Value};

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

/// [`fill`] without the solution's notice (for `course run`, which records a prediction).
pub fn set(answers_path: &Path, answers: &[(String, Answer)]) -> Result<()> {
    let text = std::fs::read_to_string(answers_path).with_context(|| format!("cannot read {}", answers_path.display()))?;
    let mut doc: DocumentMut = text.parse().with_context(|| format!("{} is not valid TOML", answers_path.display()))?;
    for (path, answer) in answers {
        let parts: Vec<&str> = path.split('.').collect();
        set_in(doc.as_table_mut(), &parts, answer).with_context(|| format!("{}: cannot set `{path}`", answers_path.display()))?;
    }
    std::fs::write(answers_path, doc.to_string()).with_context(|| format!("cannot write {}", answers_path.display()))?;
    Ok(())
}

fn set_in(table: &mut Table, parts: &[&str], answer: &Answer) -> Result<()> {
    match parts {
        [] => Ok(()),
        [last] => {
            // Keep the comment after the value, if there is one.
            let decor = table.get(last).and_then(Item::as_value).map(|v| v.decor().clone());
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
            let Some(item) = table.get_mut(head) else { bail!("no `{head}` in the template") };
            if let Some(list) = item.as_array_of_tables_mut() {
                let index: usize = rest[0].parse().with_context(|| format!("`{head}` is a list: give an index"))?;
                let Some(entry) = list.get_mut(index) else { bail!("`{head}` has no entry {index}") };
                set_in(entry, &rest[1..], answer)
            } else if let Some(inner) = item.as_table_mut() {
                set_in(inner, rest, answer)
            } else {
                bail!("`{head}` is not a table")
            }
        }
    }
}
