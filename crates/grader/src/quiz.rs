//! The question bank: mdbook-quiz TOML files (`book/src/quizzes/*.toml`), parsed with
//! `mdbook-quiz-schema`, the same files the book shows as in-page quizzes. The grader refers to
//! a question by file name and id.

use crate::problem::line_column;
use mdbook_quiz_schema::{MultipleChoiceAnswerFormat, Question, Quiz};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A question, reduced to what grading needs.
#[derive(Debug, Clone, PartialEq)]
pub struct BankQuestion {
    pub id: String,
    pub prompt: String,
    pub kind: QuestionKind,
    /// The quiz's explanation, shown after an attempt.
    pub context: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKind {
    MultipleChoice {
        /// The correct option(s).
        answers: Vec<String>,
        distractors: Vec<String>,
        /// True when the learner must select every correct option.
        multi: bool,
    },
    ShortAnswer {
        answer: String,
        alternatives: Vec<String>,
    },
    /// Tracing questions (Rust programs) are not used by this course's exercises.
    Unsupported(&'static str),
}

impl BankQuestion {
    /// Every option of a multiple-choice question, sorted (the order `course` shows them in,
    /// which gives nothing away).
    pub fn options(&self) -> Vec<String> {
        match &self.kind {
            QuestionKind::MultipleChoice { answers, distractors, .. } => {
                let mut all: Vec<String> = answers.iter().chain(distractors).cloned().collect();
                all.sort();
                all.dedup();
                all
            }
            _ => Vec::new(),
        }
    }
}

/// One parsed quiz file.
#[derive(Debug, Clone)]
pub struct QuizFile {
    pub name: String,
    pub questions: Vec<BankQuestion>,
}

/// A quiz file that cannot be used (an error of the course or of an instructor's key, not of
/// a learner): the message names the file and line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct QuizError(pub String);

impl QuizFile {
    pub fn parse(text: &str, name: &str, display_path: &str) -> Result<QuizFile, QuizError> {
        let quiz: Quiz = toml::from_str(text).map_err(|e| {
            let at = match e.span() {
                Some(span) => {
                    let (line, column) = line_column(text, span.start);
                    format!("{display_path}:{line}:{column}")
                }
                None => display_path.to_string(),
            };
            QuizError(format!("{at}: not an mdbook-quiz file: {}", e.message().trim()))
        })?;
        let mut questions = Vec::new();
        for (index, question) in quiz.questions.into_iter().enumerate() {
            let q = convert(question);
            let Some(q) = q else {
                return Err(QuizError(format!(
                    "{display_path}: question {} has no `id`; the grader refers to questions by id",
                    index + 1
                )));
            };
            if questions.iter().any(|other: &BankQuestion| other.id == q.id) {
                return Err(QuizError(format!("{display_path}: two questions have the id `{}`", q.id)));
            }
            questions.push(q);
        }
        Ok(QuizFile { name: name.to_string(), questions })
    }

    pub fn question(&self, id: &str) -> Option<&BankQuestion> {
        self.questions.iter().find(|q| q.id == id)
    }
}

fn convert(question: Question) -> Option<BankQuestion> {
    match question {
        Question::MultipleChoice(mc) => {
            let fields = mc.0;
            let (answers, multi) = match fields.answer.answer {
                MultipleChoiceAnswerFormat::Single(a) => (vec![a.0], false),
                MultipleChoiceAnswerFormat::Multi(list) => (list.into_iter().map(|m| m.0).collect(), true),
            };
            Some(BankQuestion {
                id: fields.id?,
                prompt: fields.prompt.prompt.0,
                kind: QuestionKind::MultipleChoice {
                    answers,
                    distractors: fields.prompt.distractors.into_iter().map(|m| m.0).collect(),
                    multi,
                },
                context: fields.context.map(|m| m.0),
            })
        }
        Question::ShortAnswer(sa) => {
            let fields = sa.0;
            Some(BankQuestion {
                id: fields.id?,
                prompt: fields.prompt.prompt.0,
                kind: QuestionKind::ShortAnswer {
                    answer: fields.answer.answer,
                    alternatives: fields.answer.alternatives.unwrap_or_default(),
                },
                context: fields.context.map(|m| m.0),
            })
        }
        Question::Tracing(t) => {
            let fields = t.0;
            Some(BankQuestion {
                id: fields.id?,
                prompt: fields.prompt.program,
                kind: QuestionKind::Unsupported("Tracing"),
                context: fields.context.map(|m| m.0),
            })
        }
    }
}

/// Quiz files by name, loaded from an ordered list of folders: a file in an earlier folder
/// (an instructor's `--key DIR/quizzes`) replaces one of the same name in a later one
/// (`book/src/quizzes`).
#[derive(Debug, Clone, Default)]
pub struct QuestionBank {
    files: BTreeMap<String, QuizFile>,
}

impl QuestionBank {
    pub fn load(dirs: &[PathBuf], names: &[String]) -> Result<QuestionBank, QuizError> {
        let mut bank = QuestionBank::default();
        for name in names {
            if bank.files.contains_key(name) {
                continue;
            }
            let path = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());
            let Some(path) = path else {
                let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                return Err(QuizError(format!(
                    "quiz file {name} was not found in {}; the exercise manifest names it",
                    searched.join(" or ")
                )));
            };
            let text = std::fs::read_to_string(&path)
                .map_err(|e| QuizError(format!("{}: cannot read the quiz file: {e}", path.display())))?;
            bank.insert(QuizFile::parse(&text, name, &path.display().to_string())?);
        }
        Ok(bank)
    }

    pub fn insert(&mut self, file: QuizFile) {
        self.files.insert(file.name.clone(), file);
    }

    pub fn question(&self, file: &str, id: &str) -> Option<&BankQuestion> {
        self.files.get(file)?.question(id)
    }

    pub fn file(&self, name: &str) -> Option<&QuizFile> {
        self.files.get(name)
    }
}

/// The default quiz folder, relative to the course root.
pub fn book_quiz_dir(root: &Path) -> PathBuf {
    root.join("book/src/quizzes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_multiple_choice_and_short_answer() {
        let text = r#"
[[questions]]
id = "q1"
type = "MultipleChoice"
prompt.prompt = "Which?"
prompt.distractors = ["Profile"]
answer.answer = "Benchmark"
context = "Because."

[[questions]]
id = "q2"
type = "MultipleChoice"
prompt.prompt = "Pick two"
prompt.distractors = ["c"]
answer.answer = ["a", "b"]

[[questions]]
id = "q3"
type = "ShortAnswer"
prompt.prompt = "Why?"
answer.answer = "memory"
answer.alternatives = ["bandwidth"]
"#;
        let quiz = QuizFile::parse(text, "t.toml", "t.toml").unwrap();
        let q1 = quiz.question("q1").unwrap();
        assert_eq!(q1.options(), ["Benchmark", "Profile"]);
        assert_eq!(q1.context.as_deref(), Some("Because."));
        assert!(matches!(&quiz.question("q2").unwrap().kind, QuestionKind::MultipleChoice { multi: true, .. }));
        assert!(matches!(&quiz.question("q3").unwrap().kind, QuestionKind::ShortAnswer { alternatives, .. } if alternatives == &["bandwidth"]));
    }

    #[test]
    fn a_question_without_id_is_refused() {
        let text = "[[questions]]\ntype = \"ShortAnswer\"\nprompt.prompt = \"x\"\nanswer.answer = \"y\"\n";
        let err = QuizFile::parse(text, "t.toml", "t.toml").unwrap_err();
        assert!(err.0.contains("no `id`"), "{}", err.0);
    }

    #[test]
    fn the_books_quiz_files_parse() {
        // Every quiz file the book ships must be readable by the grader (same question bank).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/quizzes");
        let Ok(entries) = std::fs::read_dir(&dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                QuizFile::parse(&text, &name, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
