//! The question bank: mdbook-quiz TOML files parsed with `mdbook-quiz-schema`. Two sets use
//! the same schema: the book's practice quizzes (`book/src/quizzes/`, shown in the page with
//! their answers) and the graded bank (`crates/grader/bank/`, which no page includes), from
//! which exercises 1 and 6 draw each learner's questions (`crate::quiz_variant`). The grader
//! refers to a question by file name and id.

use crate::text::line_column;
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
    /// The options in the order one learner is shown them (`crate::quiz_variant`); empty for
    /// a question as the file holds it.
    pub order: Vec<String>,
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
    /// Every option of a multiple-choice question: in the learner's shuffled order when the
    /// question comes from their variant, else sorted (an order that gives nothing away).
    pub fn options(&self) -> Vec<String> {
        if !self.order.is_empty() {
            return self.order.clone();
        }
        self.sorted_options()
    }

    /// Every option, sorted: the same list whatever order a learner was shown.
    pub fn sorted_options(&self) -> Vec<String> {
        match &self.kind {
            QuestionKind::MultipleChoice {
                answers,
                distractors,
                ..
            } => {
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
            QuizError(format!(
                "{at}: not an mdbook-quiz file: {}",
                e.message().trim()
            ))
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
            if questions
                .iter()
                .any(|other: &BankQuestion| other.id == q.id)
            {
                return Err(QuizError(format!(
                    "{display_path}: two questions have the id `{}`",
                    q.id
                )));
            }
            questions.push(q);
        }
        Ok(QuizFile {
            name: name.to_string(),
            questions,
        })
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
                MultipleChoiceAnswerFormat::Multi(list) => {
                    (list.into_iter().map(|m| m.0).collect(), true)
                }
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
                order: Vec::new(),
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
                order: Vec::new(),
            })
        }
        Question::Tracing(t) => {
            let fields = t.0;
            Some(BankQuestion {
                id: fields.id?,
                prompt: fields.prompt.program,
                kind: QuestionKind::Unsupported("Tracing"),
                context: fields.context.map(|m| m.0),
                order: Vec::new(),
            })
        }
    }
}

/// Quiz files by name, loaded from an ordered list of folders: a file in an earlier folder
/// (an instructor's `--key DIR/quizzes`) replaces one of the same name in a later one
/// (`crates/grader/bank`).
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
            let text = std::fs::read_to_string(&path).map_err(|e| {
                QuizError(format!(
                    "{}: cannot read the quiz file: {e}",
                    path.display()
                ))
            })?;
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

/// The book's practice quizzes, relative to the course root: shown in the page, never graded.
pub fn book_quiz_dir(root: &Path) -> PathBuf {
    root.join("book/src/quizzes")
}

/// Where the graded questions live, relative to the course root: outside the book, so that no
/// built page contains them (scripts/test-book.sh checks it), except the article's four
/// Check-yourself questions (`article-*`), which the article itself prints.
pub const BANK_DIR: &str = "crates/grader/bank";

/// The graded bank's folder under a course root.
pub fn bank_dir(root: &Path) -> PathBuf {
    root.join(BANK_DIR)
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
        assert!(matches!(
            &quiz.question("q2").unwrap().kind,
            QuestionKind::MultipleChoice { multi: true, .. }
        ));
        assert!(
            matches!(&quiz.question("q3").unwrap().kind, QuestionKind::ShortAnswer { alternatives, .. } if alternatives == &["bandwidth"])
        );
    }

    #[test]
    fn a_question_without_id_is_refused() {
        let text =
            "[[questions]]\ntype = \"ShortAnswer\"\nprompt.prompt = \"x\"\nanswer.answer = \"y\"\n";
        let err = QuizFile::parse(text, "t.toml", "t.toml").unwrap_err();
        assert!(err.0.contains("no `id`"), "{}", err.0);
    }

    /// Every quiz file of a folder, parsed.
    fn quiz_files(dir: &Path) -> Vec<QuizFile> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                QuizFile::parse(
                    &std::fs::read_to_string(p).unwrap(),
                    &name,
                    &p.display().to_string(),
                )
                .unwrap_or_else(|e| panic!("{e}"))
            })
            .collect()
    }

    #[test]
    fn the_right_option_is_the_longest_in_at_most_a_third_of_the_questions() {
        // A learner who always picks the longest option must do no better than chance. Counted
        // over the graded bank and the book's practice quizzes together; questions whose
        // options are one-word labels (Benchmark / Profile, the same pair in every scenario)
        // are left out: their lengths are the same in every question, so they tell nothing.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut counted = 0;
        let mut longest = Vec::new();
        for file in quiz_files(&bank_dir(&root))
            .into_iter()
            .chain(quiz_files(&book_quiz_dir(&root)))
        {
            for q in &file.questions {
                let QuestionKind::MultipleChoice {
                    answers,
                    distractors,
                    ..
                } = &q.kind
                else {
                    continue;
                };
                let len = |s: &String| s.trim().chars().count();
                if answers
                    .iter()
                    .chain(distractors)
                    .all(|o| o.split_whitespace().count() == 1)
                {
                    continue;
                }
                counted += 1;
                let right = answers.iter().map(len).max().unwrap_or(0);
                if distractors.iter().all(|d| len(d) < right) {
                    longest.push(format!("{}:{}", file.name, q.id));
                }
            }
        }
        assert!(
            counted >= 30,
            "only {counted} multiple-choice questions with written options were found"
        );
        assert!(longest.len() * 3 <= counted, "the right option is the longest in {} of {counted} questions (at most a third allowed): {longest:?}", longest.len());
    }

    /// The tools an option names, by a word match: benchmark (benchmarks, benchmarking,
    /// benchmarked) and profile (profiles, profiling, profiled, profiler, profilers, Nsight).
    fn tools_named(option: &str) -> Vec<&'static str> {
        let mut tools: Vec<&'static str> = option
            .split(|c: char| !c.is_alphanumeric())
            .filter_map(|word| match word.to_lowercase().as_str() {
                "benchmark" | "benchmarks" | "benchmarking" | "benchmarked" => Some("benchmark"),
                "profile" | "profiles" | "profiling" | "profiled" | "profiler" | "profilers"
                | "nsight" => Some("profile"),
                _ => None,
            })
            .collect();
        tools.sort();
        tools.dedup();
        tools
    }

    #[test]
    fn the_tool_words_are_matched_as_words() {
        assert_eq!(tools_named("Benchmark at twice the rate."), ["benchmark"]);
        assert_eq!(
            tools_named("Open Nsight Systems, then benchmarking."),
            ["benchmark", "profile"]
        );
        assert_eq!(
            tools_named("A profile of each setup (the profiler's view)."),
            ["profile"]
        );
        assert!(
            tools_named("Multiply today's P90 by two; profitable benchmarkers aside.").is_empty()
        );
    }

    #[test]
    fn the_right_option_is_rarely_the_only_one_that_names_its_tool() {
        // A learner who picks the one option naming a tool no other option names must do no
        // better than chance: "Benchmark ..." among "Profile ..." and "Nsight ..." distractors
        // gives the answer away. Counted over the questions of three or more options in the
        // graded bank and the book's practice quizzes together; at most one in six may.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut counted = 0;
        let mut alone = Vec::new();
        for file in quiz_files(&bank_dir(&root))
            .into_iter()
            .chain(quiz_files(&book_quiz_dir(&root)))
        {
            for q in &file.questions {
                let QuestionKind::MultipleChoice {
                    answers,
                    distractors,
                    ..
                } = &q.kind
                else {
                    continue;
                };
                if answers.len() + distractors.len() < 3 {
                    continue;
                }
                counted += 1;
                let in_distractors: Vec<&str> =
                    distractors.iter().flat_map(|d| tools_named(d)).collect();
                let only_right: Vec<&str> = answers
                    .iter()
                    .flat_map(|a| tools_named(a))
                    .filter(|t| !in_distractors.contains(t))
                    .collect();
                if !only_right.is_empty() {
                    alone.push(format!(
                        "{}:{} ({})",
                        file.name,
                        q.id,
                        only_right.join(", ")
                    ));
                }
            }
        }
        assert!(
            counted >= 30,
            "only {counted} multiple-choice questions of three or more options were found"
        );
        assert!(
            alone.len() * 6 <= counted,
            "in {} of {counted} questions the right option is the only one naming its tool (at most one in six allowed): {alone:?}; \
             rewrite distractors to use the same tool the wrong way (wrong metric or traffic, one request instead of many, the wrong level of tool)",
            alone.len()
        );
    }

    #[test]
    fn the_graded_banks_keep_their_contract() {
        // Exercise 1 routes each scenario to exactly "Benchmark" or "Profile"; every graded
        // question explains itself after an attempt.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for file in quiz_files(&bank_dir(&root)) {
            for q in &file.questions {
                assert!(
                    q.context.as_deref().is_some_and(|c| !c.trim().is_empty()),
                    "{}:{} has no context",
                    file.name,
                    q.id
                );
                if file.name == "routing.toml" {
                    if let QuestionKind::MultipleChoice { .. } = &q.kind {
                        assert_eq!(
                            q.options(),
                            ["Benchmark", "Profile"],
                            "{}:{}",
                            file.name,
                            q.id
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_books_quiz_files_parse() {
        // Every quiz file the book ships must be readable by the grader (same question bank).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/quizzes");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                QuizFile::parse(&text, &name, &path.display().to_string())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
