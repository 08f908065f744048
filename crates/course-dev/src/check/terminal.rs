//! The programs that ask in a terminal, run in a pseudo-terminal ([`super::pty`]): `course run N`
//! records the prediction it asks for before the profile (the lines `dev_check.prediction`
//! types) and shows it beside the measurement; each quiz exercise, run as a learner first runs
//! it (no learner id yet, `cargo run -p exercise-N`), asks for the id before anything else,
//! then that learner's own draw, answered as the bank says ([`super::quiz_screen`]), writes
//! answers.toml keeping its comments, and those answers pass `course check N`: the questions
//! asked are the ones graded. Without a terminal and without an id it draws nothing and says
//! how to give one.

use super::quiz_screen::Answerer;
use super::root::Source;
use super::shim::Packages;
use super::tally::{missing, SHOWN_LINES};
use super::{check_passes, failure, pty, step, verdict, Lint, QUICK_LIMIT};
use answers_file::prediction::{self, Form, Value};
use course_model::learner_id::{learner_id, LEARNER_FILE, LEARNER_ID_ENV};
use course_model::manifest::{CheckKind, ExerciseInfo};
use course_model::quiz::{bank_dir, QuestionBank};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A run that asks: the time to answer, and for exercise 3 a profile of the synthetic model.
const TERMINAL_LIMIT: Duration = Duration::from_secs(10 * 60);

/// The learner the quizzes are asked as: not the other roots' one, so another draw is proved.
const QUIZ_LEARNER: &str = "tty-learner";

pub fn check(lint: &mut Lint) {
    let exercises = lint.exercises.clone();
    for exercise in exercises
        .iter()
        .filter(|e| !e.dev_check.prediction.is_empty())
    {
        let n = exercise.number;
        let what = format!("exercise-{n}: course run {n} in a terminal records the prediction before the profile and shows it beside the measurement");
        let outcome = records_the_prediction(lint, exercise);
        lint.tally.record(&what, outcome);
    }
    for exercise in exercises.iter().filter(|e| e.check == CheckKind::Quiz) {
        let n = exercise.number;
        let count = exercise.draw + exercise.questions.len();
        let what = format!("exercise-{n} in a terminal, with no learner id yet, asks for it first, then the learner's own {count} questions, writes answers.toml (comments kept), and the right answers pass");
        let outcome = quiz_answers_pass(lint, exercise);
        lint.tally.record(&what, outcome);
        let what = format!("exercise-{n} without a terminal and without a learner id draws nothing and names {LEARNER_FILE} and `course id`");
        let outcome = no_id_without_a_terminal(lint, exercise);
        lint.tally.record(&what, outcome);
    }
}

fn records_the_prediction(lint: &Lint, exercise: &ExerciseInfo) -> Result<(), String> {
    let n = exercise.number;
    let dev = &exercise.dev_check;
    let form = Form::for_template(&exercise.answers_template)
        .ok_or_else(|| format!("exercise {n}'s answers_template has no [prediction] table that `course run {n}` asks for; remove dev_check.prediction"))?;
    if dev.server.is_some() {
        return Err(format!("exercise {n}: a prediction run against a `dev_check.server` is not supported by `course-dev check`"));
    }
    let root = lint
        .root(
            &format!("predict-{n}"),
            Source::Exercises,
            &[exercise],
            &lint.learner,
        )
        .map_err(|e| format!("{e:#}"))?;
    let mut command = lint.course_command(&root, Packages::Exercises);
    command
        .arg("run")
        .arg(n.to_string())
        .arg("--")
        .args(dev.args.iter().flatten());
    let mut typed = dev.prediction.iter();
    // The form's questions end with `? ` and wait; each gets the next line (then Enter: skip).
    let transcript = pty::converse(&mut command, TERMINAL_LIMIT, |screen| {
        let last = screen.rsplit('\n').next().unwrap_or(screen);
        last.trim_end()
            .ends_with('?')
            .then(|| typed.next().cloned().unwrap_or_default())
    })
    .map_err(|e| format!("{e:#}"))?;
    let _ = std::fs::write(lint.log(&format!("predict-{n}")), &transcript.text);

    let answers_path = root.join(&exercise.dir).join("answers.toml");
    let mut problems = missing(&transcript.text, &dev.prediction_says);
    match form.recorded(&answers_path) {
        None => problems.push(format!(
            "no prediction is recorded in {}",
            answers_path.display()
        )),
        Some(recorded) => {
            for (question, line) in form.questions.iter().zip(&dev.prediction) {
                let found = recorded
                    .answers
                    .iter()
                    .find(|(key, _)| *key == question.key)
                    .map(|(_, v)| v);
                if !same_answer(found, line) {
                    problems.push(format!(
                        "[prediction] {} should be what was typed, {line:?}; it is {found:?}",
                        question.key
                    ));
                }
            }
        }
    }
    problems.extend(made_first(&answers_path));
    verdict(&problems, &transcript, TERMINAL_LIMIT, SHOWN_LINES)
}

/// A course root of `exercise` as a learner's first run finds it: no learner.toml yet, as in a
/// fresh clone.
fn first_run_root(lint: &Lint, name: &str, exercise: &ExerciseInfo) -> Result<PathBuf, String> {
    let root = lint
        .root(name, Source::Exercises, &[exercise], QUIZ_LEARNER)
        .map_err(|e| format!("{e:#}"))?;
    std::fs::remove_file(root.join("exercises").join(LEARNER_FILE))
        .map_err(|e| format!("cannot remove the root's {LEARNER_FILE}: {e}"))?;
    Ok(root)
}

/// Whether a recorded answer is the line typed for it.
fn same_answer(recorded: Option<&Value>, typed: &str) -> bool {
    match recorded {
        Some(Value::Text(text)) => text.trim().eq_ignore_ascii_case(typed.trim()),
        Some(Value::Number(n)) => typed
            .trim()
            .trim_end_matches('%')
            .trim()
            .parse::<f64>()
            .is_ok_and(|t| (t - n).abs() < 1e-9),
        None => typed.trim().is_empty(),
    }
}

/// What says the prediction came first: the time it was made, and that no report existed then.
fn made_first(answers_path: &Path) -> Vec<String> {
    let shown = answers_path.display().to_string();
    let text = std::fs::read_to_string(answers_path).unwrap_or_default();
    let answers = match text.parse::<toml::Table>() {
        Ok(answers) => answers,
        Err(e) => return vec![format!("{shown}: {}", e.message())],
    };
    let mut problems = Vec::new();
    let key = |name: &str| format!("{}.{name}", prediction::TABLE);
    let made_at = lookup(&answers, &key("made_at")).and_then(toml::Value::as_str);
    if made_at
        .and_then(|t| prediction::parse_time(t.trim()))
        .is_none()
    {
        problems.push(format!(
            "{shown}: [prediction] made_at is not the time the prediction was made"
        ));
    }
    if lookup(&answers, &key("report_existed")).and_then(toml::Value::as_bool) != Some(false) {
        problems.push(format!("{shown}: [prediction] report_existed should be false (no report existed before the run)"));
    }
    problems
}

/// The value at a dotted path (`prediction.made_at`) of an answers file's table.
fn lookup<'a>(table: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let (tables, key) = path.rsplit_once('.').unwrap_or(("", path));
    let mut at = table;
    for name in tables.split('.').filter(|n| !n.is_empty()) {
        at = at.get(name)?.as_table()?;
    }
    at.get(key)
}

fn quiz_answers_pass(lint: &Lint, exercise: &ExerciseInfo) -> Result<(), String> {
    let n = exercise.number;
    let name = exercise
        .quizzes
        .first()
        .ok_or_else(|| format!("exercise {n} is a quiz check without a quiz file"))?;
    let bank = QuestionBank::load(&[bank_dir(lint.checkout())], std::slice::from_ref(name))
        .map_err(|e| e.0)?;
    let file = bank
        .file(name)
        .ok_or_else(|| format!("the quiz file {name} was not loaded"))?;
    let root = first_run_root(lint, &format!("quiz-{n}"), exercise)?;
    let exercises_dir = root.join("exercises");
    let mut command = Command::new(lint.program(&exercise.package));
    command
        .arg("--exercise-dir")
        .arg(root.join(&exercise.dir))
        .env_remove(LEARNER_ID_ENV);
    let mut answerer = Answerer::new(file);
    let mut id_asked = 0;
    let transcript = pty::converse(&mut command, TERMINAL_LIMIT, |screen| {
        let last = screen.rsplit('\n').next().unwrap_or(screen);
        if last.trim_end().ends_with("Learner id:") {
            id_asked += 1;
            // Once; asked again, the run gives up (Enter) rather than loop.
            return Some(if id_asked == 1 {
                QUIZ_LEARNER.to_string()
            } else {
                String::new()
            });
        }
        answerer.at(screen)
    })
    .map_err(|e| format!("{e:#}"))?;
    let _ = std::fs::write(lint.log(&format!("quiz-{n}")), &transcript.text);

    let mut problems = answerer.problems.clone();
    if id_asked != 1 {
        problems.push(format!(
            "the learner id was asked {id_asked} times before the questions; once expected"
        ));
    }
    let first_question = transcript.text.find("Question 1 of");
    if first_question.is_some_and(|q| transcript.text.find("Learner id:").is_none_or(|id| id > q)) {
        problems.push("a question came before the learner id was asked".to_string());
    }
    if learner_id(&exercises_dir).as_deref() != Some(QUIZ_LEARNER) {
        problems.push(format!(
            "{} does not hold the id typed, {QUIZ_LEARNER:?}",
            exercises_dir.join(LEARNER_FILE).display()
        ));
    }
    let asked = exercise.draw + exercise.questions.len();
    if answerer.answered.len() != asked {
        problems.push(format!(
            "{} questions were answered, {asked} expected (draw {} and {:?})",
            answerer.answered.len(),
            exercise.draw,
            exercise.questions
        ));
    }
    let answers_path = root.join(&exercise.dir).join("answers.toml");
    let text = std::fs::read_to_string(&answers_path).unwrap_or_default();
    match text.parse::<toml::Table>() {
        Ok(answers) => {
            for id in &answerer.answered {
                let answered = lookup(&answers, &format!("quiz.{id}"))
                    .and_then(toml::Value::as_str)
                    .is_some_and(|t| !t.trim().is_empty());
                if !answered {
                    problems.push(format!(
                        "answers.toml has no [quiz] {id}, which was answered"
                    ));
                }
            }
        }
        Err(e) => problems.push(format!("{}: {}", answers_path.display(), e.message())),
    }
    for comment in exercise
        .answers_template
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
    {
        if !text.contains(comment) {
            problems.push(format!(
                "answers.toml lost the template's comment {comment:?}"
            ));
        }
    }
    if !transcript.succeeded() || !problems.is_empty() {
        return Err(failure(&problems, &transcript, TERMINAL_LIMIT, SHOWN_LINES));
    }
    check_passes(
        lint,
        &root,
        Packages::Exercises,
        n,
        &format!("quiz-check-{n}"),
    )
}

/// Without a terminal and without a learner id, the quiz program draws nothing: it stops, names
/// the file the id lives in and the command that writes it, and leaves answers.toml as it was.
fn no_id_without_a_terminal(lint: &Lint, exercise: &ExerciseInfo) -> Result<(), String> {
    let n = exercise.number;
    let root = first_run_root(lint, &format!("no-id-{n}"), exercise)?;
    let exercises_dir = root.join("exercises");
    let answers_path = root.join(&exercise.dir).join("answers.toml");
    let before = std::fs::read(&answers_path).unwrap_or_default();
    let mut command = Command::new(lint.program(&exercise.package));
    command
        .arg("--exercise-dir")
        .arg(root.join(&exercise.dir))
        .env_remove(LEARNER_ID_ENV);
    let ran = step::run(&mut command, &lint.log(&format!("no-id-{n}")), QUICK_LIMIT)
        .map_err(|e| format!("{e:#}"))?;
    let rerun = format!("cargo run -p {}", exercise.package);
    let mut problems = missing(
        &ran.text,
        &[
            LEARNER_FILE.to_string(),
            "course id NAME".to_string(),
            rerun,
        ],
    );
    if ran.text.contains("Question 1 of") {
        problems.push("it printed questions without a learner id to draw them from".to_string());
    }
    if !ran.failed() {
        problems.insert(0, "it should stop with an error".to_string());
    }
    if std::fs::read(&answers_path).unwrap_or_default() != before {
        problems.push(format!("it changed {}", answers_path.display()));
    }
    if exercises_dir.join(LEARNER_FILE).exists() {
        problems.push(format!("it invented a {LEARNER_FILE}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(failure(&problems, &ran, QUICK_LIMIT, SHOWN_LINES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_answer_is_the_line_typed() {
        assert!(same_answer(Some(&Value::Text("matmul".into())), "matmul"));
        assert!(
            same_answer(
                Some(&Value::Text("about the same".into())),
                "About the same"
            ),
            "choices are recorded in lower case"
        );
        assert!(same_answer(Some(&Value::Number(60.0)), "60"));
        assert!(same_answer(Some(&Value::Number(60.0)), "60%"));
        assert!(!same_answer(Some(&Value::Number(60.0)), "40"));
        assert!(!same_answer(None, "60"));
        assert!(same_answer(None, ""), "a skipped question records nothing");
    }

    #[test]
    fn a_prediction_made_first_has_its_time_and_no_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.toml");
        std::fs::write(&path, "[prediction]\nop = \"matmul\"\nmade_at = \"Mon, 01 Jan 2024 09:03:12 GMT\"\nreport_existed = false\n").unwrap();
        assert!(made_first(&path).is_empty(), "{:?}", made_first(&path));
        std::fs::write(
            &path,
            "[prediction]\nop = \"matmul\"\nmade_at = \"\"\nreport_existed = true\n",
        )
        .unwrap();
        assert_eq!(made_first(&path).len(), 2, "{:?}", made_first(&path));
    }
}
