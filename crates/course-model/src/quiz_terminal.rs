//! A quiz in the terminal, for the exercises that ask multiple-choice questions (1 and 6): asks
//! the learner's draw from the graded bank (the file the grader reads, parsed with its parser)
//! and writes the answers into the exercise's `answers.toml`, keeping its comments. Without a
//! terminal it explains how to fill `answers.toml` by hand instead.

use crate::quiz::{BankQuestion, QuestionKind, QuizFile};
use answers_file::fill_answers::{self, Answer};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

/// Reads and parses a quiz file of the book.
pub fn load(path: &Path) -> Result<QuizFile> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("cannot read the quiz file {}: run the exercise from your copy of the course (the book's quizzes live in book/src/quizzes/)", path.display())
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    QuizFile::parse(&text, &name, &path.display().to_string()).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The prompt with its line breaks folded, as one paragraph.
fn paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Prints a question and its numbered options.
fn show(out: &mut impl Write, number: usize, total: usize, q: &BankQuestion) -> Result<()> {
    writeln!(out, "\nQuestion {number} of {total} ({})", q.id)?;
    writeln!(out, "{}", paragraph(&q.prompt))?;
    for (i, option) in q.options().iter().enumerate() {
        writeln!(out, "  {}) {}", i + 1, paragraph(option))?;
    }
    Ok(())
}

/// Asks every question on the terminal; returns (id, answer) for each question answered.
fn ask(quiz: &QuizFile) -> Result<Vec<(String, String)>> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout().lock();
    let mut answers = Vec::new();
    let total = quiz.questions.len();
    for (index, q) in quiz.questions.iter().enumerate() {
        show(&mut out, index + 1, total, q)?;
        let options = q.options();
        loop {
            match &q.kind {
                QuestionKind::MultipleChoice { .. } => {
                    write!(out, "Your choice (1-{}, Enter to skip): ", options.len())?
                }
                _ => write!(out, "Your answer (one or two sentences, Enter to skip): ")?,
            }
            out.flush()?;
            let Some(line) = lines.next() else {
                // End of input: keep what was answered so far.
                writeln!(out)?;
                return Ok(answers);
            };
            let line = line.context("cannot read your answer from the terminal")?;
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if options.is_empty() {
                answers.push((q.id.clone(), line.to_string()));
                break;
            }
            match line.parse::<usize>() {
                Ok(n) if (1..=options.len()).contains(&n) => {
                    answers.push((q.id.clone(), paragraph(&options[n - 1])));
                    break;
                }
                _ => writeln!(
                    out,
                    "Type a number from 1 to {}, or press Enter to skip.",
                    options.len()
                )?,
            }
        }
    }
    Ok(answers)
}

/// Sets `[quiz] id = "answer"` for each answer in `answers.toml`, keeping the rest of the file
/// (comments included) as it is: the file and its `[quiz]` table are created if missing.
pub fn record(answers_path: &Path, answers: &[(String, String)]) -> Result<()> {
    let answers: Vec<(String, Answer)> = answers
        .iter()
        .map(|(id, answer)| (id.clone(), answer.as_str().into()))
        .collect();
    fill_answers::set_in_table(answers_path, "quiz", &answers)
}

/// Explains how to answer without a terminal: every question with its options, and the file to
/// edit.
fn explain_by_hand(quiz: &QuizFile, answers_path: &Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "No terminal to ask you in (standard input is not a TTY), so here are the questions to answer by hand.")?;
    for (index, q) in quiz.questions.iter().enumerate() {
        show(&mut out, index + 1, quiz.questions.len(), q)?;
    }
    writeln!(
        out,
        "\nWrite your answers in {}, under [quiz], one line per question id:",
        answers_path.display()
    )?;
    for q in &quiz.questions {
        let example = match &q.kind {
            QuestionKind::MultipleChoice { .. } => {
                "the text of the option you choose, e.g. \"".to_string()
                    + &paragraph(&q.options()[0])
                    + "\""
            }
            _ => "one or two sentences in quotes".to_string(),
        };
        writeln!(out, "  {} = {example}", q.id)?;
    }
    writeln!(
        out,
        "Or run the exercise again in a terminal to be asked one question at a time."
    )?;
    Ok(())
}

/// Asks the quiz (or explains how to answer by hand) and records the answers.
pub fn run(quiz_path: &Path, answers_path: &Path, check_command: &str) -> Result<()> {
    let quiz = load(quiz_path)?;
    run_quiz(
        &quiz,
        &quiz_path.display().to_string(),
        answers_path,
        check_command,
    )
}

/// What exercises 1 and 6 run: the learner's id first (asked in the terminal and stored in
/// exercises/learner.toml the first time; without a terminal, an error that says how to give
/// one), then their own draw of exercise `number`'s questions, asked one at a time and written
/// to the exercise's answers.toml; without a terminal, how to answer by hand. The id comes
/// before the draw so that the questions asked are the ones `course check` grades.
pub fn run_exercise(exercise_dir: &Path, number: u32) -> Result<()> {
    // Shown in messages: the path without the ../.. that leads from the package to the course.
    let dir = std::fs::canonicalize(exercise_dir).unwrap_or_else(|_| exercise_dir.to_path_buf());
    let exercises = dir.parent().unwrap_or(&dir);
    let root = exercises.parent().unwrap_or(exercises);
    let rerun = format!("cargo run -p exercise-{number}");
    let learner = crate::learner_id::ensure_learner_id(exercises, &rerun)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let quiz = crate::quiz_variant::for_learner(root, number, &learner)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    run_quiz(
        &quiz,
        &format!("your variant (learner id `{learner}`)"),
        &dir.join("answers.toml"),
        &format!("course check {number}"),
    )
}

/// Asks the questions of `quiz`, in its order (a learner's variant:
/// `crate::quiz_variant::variant_quiz`), `source` saying where they come from.
pub fn run_quiz(
    quiz: &QuizFile,
    source: &str,
    answers_path: &Path,
    check_command: &str,
) -> Result<()> {
    if quiz.questions.is_empty() {
        bail!("{source} holds no questions: tell the instructor");
    }
    if !std::io::stdin().is_terminal() {
        return explain_by_hand(quiz, answers_path);
    }
    println!(
        "{} questions from {source}. Answers go into {}.",
        quiz.questions.len(),
        answers_path.display()
    );
    let answers = ask(quiz)?;
    if answers.is_empty() {
        println!(
            "\nNo answers given; {} is unchanged.",
            answers_path.display()
        );
        return Ok(());
    }
    record(answers_path, &answers)?;
    println!(
        "\nWrote {} answer(s) to {}. Grade them with `{check_command}`.",
        answers.len(),
        answers_path.display()
    );
    Ok(())
}
