//! A learner's `answers.toml`, parsed into a tree that remembers where each value was written,
//! so that a wrong type is reported at its line and column and never stops the other answers
//! from being graded.

use crate::problem::{Location, Problem, ProblemKind};
use course_model::text::line_column;
use std::collections::BTreeMap;
use toml::de::{DeTable, DeValue};

/// One value of the answer file with its byte span.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub span: std::ops::Range<usize>,
    pub value: NodeValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    Text(String),
    Number(f64),
    Bool(bool),
    List(Vec<Node>),
    Table(BTreeMap<String, Node>),
    /// A TOML value the answers never use (a date); kept to report it as a wrong type.
    Other(&'static str),
}

impl NodeValue {
    fn type_name(&self) -> &'static str {
        match self {
            NodeValue::Text(_) => "text",
            NodeValue::Number(_) => "a number",
            NodeValue::Bool(_) => "true/false",
            NodeValue::List(_) => "a list",
            NodeValue::Table(_) => "a table",
            NodeValue::Other(name) => name,
        }
    }
}

/// A parsed answer file.
#[derive(Debug, Clone)]
pub struct Answers {
    /// Path shown to people (e.g. `exercises/exercise-3/answers.toml`).
    pub file: String,
    text: String,
    root: BTreeMap<String, Node>,
}

/// The outcome of reading one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Field<T> {
    /// Absent, or written as "" (the template's "not answered yet").
    Unanswered,
    Answered(T),
    /// Present but unusable; the problem says where and why.
    Invalid(Problem),
}

impl<T> Field<T> {
    pub fn answered(self) -> Option<T> {
        match self {
            Field::Answered(v) => Some(v),
            _ => None,
        }
    }
}

impl Answers {
    /// Parse `text`; a syntax error becomes one problem naming the line and column.
    pub fn parse(text: &str, file: &str) -> Result<Answers, Problem> {
        let table = DeTable::parse(text).map_err(|e| {
            let location = match e.span() {
                Some(span) => Location::at_offset(file, text, span.start),
                None => Location::file(file),
            };
            Problem::new(
                ProblemKind::Malformed,
                Some(location),
                format!("this is not valid TOML: {}", e.message().trim()),
                "fix the line shown (a text answer goes in double quotes), or start again from the template with `course reset N`",
            )
        })?;
        let root = convert_table(table.into_inner());
        Ok(Answers {
            file: file.to_string(),
            text: text.to_string(),
            root,
        })
    }

    /// True when nothing in the file is answered (every value is "" or the file is empty).
    pub fn is_empty(&self) -> bool {
        fn node_empty(node: &Node) -> bool {
            match &node.value {
                NodeValue::Text(t) => t.trim().is_empty(),
                NodeValue::List(items) => items.iter().all(node_empty),
                NodeValue::Table(t) => t.values().all(node_empty),
                _ => false,
            }
        }
        self.root.values().all(node_empty)
    }

    pub fn location(&self, node: &Node) -> Location {
        Location::at_offset(self.file.clone(), &self.text, node.span.start)
    }

    /// Look up a dotted path such as `own.op` or `top_ops.1.name` (list indices from 0).
    pub fn node(&self, path: &str) -> Option<&Node> {
        let mut parts = path.split('.');
        let mut node = self.root.get(parts.next()?)?;
        for part in parts {
            node = match &node.value {
                NodeValue::Table(t) => t.get(part)?,
                NodeValue::List(items) => items.get(part.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// Number of items of a list (e.g. `[[top_ops]]`); 0 when absent, `Invalid` when not a list.
    pub fn list_len(&self, path: &str) -> Field<usize> {
        match self.node(path) {
            None => Field::Unanswered,
            Some(Node {
                value: NodeValue::List(items),
                ..
            }) => Field::Answered(items.len()),
            Some(node) => {
                Field::Invalid(self.wrong_type(path, node, "a list (write it as [[name]] tables)"))
            }
        }
    }

    /// A text answer, trimmed.
    pub fn text(&self, path: &str) -> Field<String> {
        match self.node(path) {
            None => Field::Unanswered,
            Some(Node {
                value: NodeValue::Text(t),
                ..
            }) if t.trim().is_empty() => Field::Unanswered,
            Some(Node {
                value: NodeValue::Text(t),
                ..
            }) => Field::Answered(t.trim().to_string()),
            Some(node) => Field::Invalid(self.wrong_type(path, node, "text in double quotes")),
        }
    }

    /// A number; text holding a number is accepted too ("4.0"), since learners quote values.
    pub fn number(&self, path: &str) -> Field<f64> {
        match self.node(path) {
            None => Field::Unanswered,
            Some(Node {
                value: NodeValue::Number(n),
                ..
            }) => Field::Answered(*n),
            Some(Node {
                value: NodeValue::Text(t),
                ..
            }) if t.trim().is_empty() => Field::Unanswered,
            Some(
                node @ Node {
                    value: NodeValue::Text(t),
                    ..
                },
            ) => {
                let cleaned = t.trim().trim_end_matches('%').trim().replace('_', "");
                match cleaned.parse::<f64>() {
                    Ok(n) if n.is_finite() => Field::Answered(n),
                    _ => Field::Invalid(self.wrong_type(path, node, "a number such as 4.0")),
                }
            }
            Some(node) => Field::Invalid(self.wrong_type(path, node, "a number such as 4.0")),
        }
    }

    /// A yes/no answer: `true`/`false`, or the text "yes"/"no" ("true"/"false").
    pub fn flag(&self, path: &str) -> Field<bool> {
        match self.node(path) {
            None => Field::Unanswered,
            Some(Node {
                value: NodeValue::Bool(b),
                ..
            }) => Field::Answered(*b),
            Some(Node {
                value: NodeValue::Text(t),
                ..
            }) if t.trim().is_empty() => Field::Unanswered,
            Some(
                node @ Node {
                    value: NodeValue::Text(t),
                    ..
                },
            ) => match t.trim().to_lowercase().as_str() {
                "yes" | "true" => Field::Answered(true),
                "no" | "false" => Field::Answered(false),
                _ => Field::Invalid(self.wrong_type(path, node, "yes or no (or true/false)")),
            },
            Some(node) => Field::Invalid(self.wrong_type(path, node, "yes or no (or true/false)")),
        }
    }

    /// A choice answer: one text, or a list of texts for a multi-select question.
    pub fn choices(&self, path: &str) -> Field<Vec<String>> {
        match self.node(path) {
            None => Field::Unanswered,
            Some(Node {
                value: NodeValue::Text(t),
                ..
            }) if t.trim().is_empty() => Field::Unanswered,
            Some(Node {
                value: NodeValue::Text(t),
                ..
            }) => Field::Answered(vec![t.trim().to_string()]),
            Some(
                node @ Node {
                    value: NodeValue::List(items),
                    ..
                },
            ) => {
                let mut out = Vec::new();
                for item in items {
                    match &item.value {
                        NodeValue::Text(t) if t.trim().is_empty() => {}
                        NodeValue::Text(t) => out.push(t.trim().to_string()),
                        _ => {
                            return Field::Invalid(self.wrong_type(
                                path,
                                node,
                                "text, or a list of texts",
                            ))
                        }
                    }
                }
                if out.is_empty() {
                    Field::Unanswered
                } else {
                    Field::Answered(out)
                }
            }
            Some(node) => Field::Invalid(self.wrong_type(path, node, "text, or a list of texts")),
        }
    }

    fn wrong_type(&self, path: &str, node: &Node, expected: &str) -> Problem {
        Problem::new(
            ProblemKind::WrongType,
            Some(self.location(node)),
            format!(
                "`{path}` should be {expected}, but it is {}",
                node.value.type_name()
            ),
            "change the value (the comments in the template show the expected form)",
        )
    }

    /// Line and column of a byte offset, for callers that report on a node.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        line_column(&self.text, offset)
    }
}

fn convert_table(table: DeTable<'_>) -> BTreeMap<String, Node> {
    table
        .into_iter()
        .map(|(key, value)| (key.into_inner().into_owned(), convert(value)))
        .collect()
}

fn convert(value: toml::Spanned<DeValue<'_>>) -> Node {
    let span = value.span();
    let value = match value.into_inner() {
        DeValue::String(s) => NodeValue::Text(s.into_owned()),
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            let digits = digits
                .trim_start_matches("0x")
                .trim_start_matches("0o")
                .trim_start_matches("0b");
            match i64::from_str_radix(digits, i.radix()) {
                Ok(n) => NodeValue::Number(n as f64),
                Err(_) => NodeValue::Other("an integer too large to use"),
            }
        }
        DeValue::Float(f) => match f.as_str().replace('_', "").parse::<f64>() {
            Ok(n) if n.is_finite() => NodeValue::Number(n),
            _ => NodeValue::Other("a number that is not finite"),
        },
        DeValue::Boolean(b) => NodeValue::Bool(b),
        DeValue::Datetime(_) => NodeValue::Other("a date"),
        DeValue::Array(items) => NodeValue::List(items.into_iter().map(convert).collect()),
        DeValue::Table(t) => NodeValue::Table(convert_table(t)),
    };
    Node { span, value }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "exercises/exercise-3/answers.toml";

    #[test]
    fn reads_text_numbers_lists_and_tables() {
        let text = "[[top_ops]]\nname = \"matmul\"\nshare_pct = 41.5\n[[top_ops]]\nname = \"gelu\"\nshare_pct = \"20\"\n[plan]\nattack_first = \"  fuse it \"\n[quiz]\nq = [\"A\", \"B\"]\nn = 0x10\n";
        let a = Answers::parse(text, FILE).unwrap();
        assert_eq!(a.list_len("top_ops"), Field::Answered(2));
        assert_eq!(a.text("top_ops.0.name"), Field::Answered("matmul".into()));
        assert_eq!(a.number("top_ops.0.share_pct"), Field::Answered(41.5));
        assert_eq!(a.number("top_ops.1.share_pct"), Field::Answered(20.0));
        assert_eq!(
            a.text("plan.attack_first"),
            Field::Answered("fuse it".into())
        );
        assert_eq!(
            a.choices("quiz.q"),
            Field::Answered(vec!["A".into(), "B".into()])
        );
        assert_eq!(a.number("quiz.n"), Field::Answered(16.0));
        assert_eq!(a.text("top_ops.5.name"), Field::Unanswered);
        assert!(!a.is_empty());
    }

    #[test]
    fn empty_strings_are_unanswered() {
        let a = Answers::parse("[quiz]\nq = \"\"\n[own]\nx = \"  \"\n", FILE).unwrap();
        assert_eq!(a.choices("quiz.q"), Field::Unanswered);
        assert_eq!(a.number("own.x"), Field::Unanswered);
        assert!(a.is_empty());
    }

    #[test]
    fn wrong_types_name_the_line_and_column() {
        let a = Answers::parse("[own]\nop = 3\nsaving_pct = \"ten\"\n", FILE).unwrap();
        let Field::Invalid(p) = a.text("own.op") else {
            panic!()
        };
        assert_eq!(p.kind, ProblemKind::WrongType);
        assert_eq!(p.location, Some(Location::at(FILE, 2, 6)));
        let Field::Invalid(p) = a.number("own.saving_pct") else {
            panic!()
        };
        assert_eq!(p.location.unwrap().line, Some(3));
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let p = Answers::parse("[quiz]\nntq-1 = Benchmark\n", FILE).unwrap_err();
        assert_eq!(p.kind, ProblemKind::Malformed);
        assert_eq!(p.location.unwrap().line, Some(2));
    }
}
