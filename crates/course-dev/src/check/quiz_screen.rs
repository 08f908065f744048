//! Answering a quiz exercise's terminal quiz as a learner who knows the bank would: read each
//! question's id and numbered options off the screen (in the order this learner is shown them)
//! and type the number of the option the bank marks right, or the bank's answer to a short
//! question. The screen, not the variant code, says what was asked, so the check proves what a
//! learner sees.

use course_model::quiz::{QuestionKind, QuizFile};

/// A question as the screen shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub id: String,
    /// (number, text) of each option, as numbered on the screen; none for a short answer.
    pub options: Vec<(String, String)>,
}

/// The question the screen stops at a prompt for: `Some(Some(question))` at a question's prompt,
/// `Some(None)` at a prompt without a question above it (asked again), `None` before any prompt.
pub fn at_prompt(screen: &str) -> Option<Option<Shown>> {
    let last = screen.rsplit('\n').next().unwrap_or(screen);
    // A prompt is the line the quiz leaves open for the answer, never a header or an option cut
    // short by the terminal's buffering.
    if !last.trim_end().ends_with(':') || question_id(last).is_some() || option(last).is_some() {
        return None;
    }
    let lines: Vec<&str> = screen.lines().collect();
    let Some(header) = lines.iter().rposition(|l| question_id(l).is_some()) else {
        return Some(None);
    };
    let id = question_id(lines[header]).unwrap_or_default();
    let options = lines[header + 1..]
        .iter()
        .filter_map(|l| option(l))
        .collect();
    Some(Some(Shown { id, options }))
}

/// `Question 3 of 7 (route-05)` → `route-05`.
fn question_id(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("Question ")?;
    let (counts, id) = rest.split_once(" (")?;
    if !counts.contains(" of ") {
        return None;
    }
    Some(id.strip_suffix(')')?.to_string()).filter(|id| !id.is_empty())
}

/// `  2) Profile` → (`2`, `Profile`).
fn option(line: &str) -> Option<(String, String)> {
    let (number, text) = line.trim_start().split_once(") ")?;
    (!number.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
        .then(|| (number.to_string(), text.trim().to_string()))
}

/// Whitespace folded to single spaces, as the quiz prints a text.
fn folded(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What to type for `shown`: the number of the right option, or the bank's answer to a short
/// question; an error says why there is none.
pub fn reply(shown: &Shown, bank: &QuizFile) -> Result<String, String> {
    let question = bank.question(&shown.id).ok_or_else(|| {
        format!(
            "the screen asks `{}`, which {} does not hold",
            shown.id, bank.name
        )
    })?;
    match &question.kind {
        QuestionKind::MultipleChoice {
            answers,
            multi: false,
            ..
        } => {
            let right = answers.first().map(|a| folded(a)).unwrap_or_default();
            shown
                .options
                .iter()
                .find(|(_, text)| folded(text) == right)
                .map(|(number, _)| number.clone())
                .ok_or_else(|| {
                    format!(
                        "no option shown for `{}` is its right answer {right:?}: {:?}",
                        shown.id, shown.options
                    )
                })
        }
        QuestionKind::ShortAnswer { answer, .. } => Ok(folded(answer)),
        _ => Err(format!(
            "`{}` is a kind of question the terminal quiz cannot answer with one line",
            shown.id
        )),
    }
}

/// The driver of one quiz: what it answered and what went wrong, for the check to judge after.
pub struct Answerer<'a> {
    bank: &'a QuizFile,
    pub answered: Vec<String>,
    pub problems: Vec<String>,
}

impl<'a> Answerer<'a> {
    pub fn new(bank: &'a QuizFile) -> Answerer<'a> {
        Answerer {
            bank,
            answered: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The line to type at the screen's prompt, if it stops at one. A question it cannot
    /// answer, or one asked again, is skipped (Enter), so the quiz always moves on.
    pub fn at(&mut self, screen: &str) -> Option<String> {
        match at_prompt(screen)? {
            Some(shown) => match reply(&shown, self.bank) {
                Ok(line) => {
                    self.answered.push(shown.id);
                    Some(line)
                }
                Err(problem) => {
                    self.problems.push(problem);
                    Some(String::new())
                }
            },
            None => {
                self.problems.push(format!(
                    "a prompt came without a question above it (an answer refused?): {:?}",
                    screen.trim()
                ));
                Some(String::new())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bank() -> QuizFile {
        let text = "[[questions]]\nid = \"route-07\"\ntype = \"MultipleChoice\"\nprompt.prompt = \"Which tool?\"\n\
                    prompt.distractors = [\"Profile\"]\nanswer.answer = \"Benchmark\"\n\n\
                    [[questions]]\nid = \"route-why\"\ntype = \"ShortAnswer\"\nprompt.prompt = \"Why?\"\n\
                    answer.answer = \"\"\"\nA whole-system figure\nis a benchmark.\"\"\"\n";
        QuizFile::parse(text, "routing.toml", "routing.toml").unwrap()
    }

    const FIRST: &str = "7 questions from your variant (learner id `tty-learner`). Answers go into /x/answers.toml.\n\n\
                         Question 1 of 7 (route-07)\nWhich tool?\n  1) Profile\n  2) Benchmark\nYour choice (1-2, Enter to skip): ";

    #[test]
    fn the_question_and_its_options_are_read_off_the_screen() {
        let shown = at_prompt(FIRST).unwrap().unwrap();
        assert_eq!(shown.id, "route-07");
        assert_eq!(
            shown.options,
            [
                ("1".to_string(), "Profile".to_string()),
                ("2".to_string(), "Benchmark".to_string())
            ]
        );
        assert_eq!(
            at_prompt("Question 1 of 7 (route-07)\nWhich tool?\n  1) Profile\n"),
            None,
            "no prompt yet"
        );
        assert_eq!(at_prompt("Type a number from 1 to 2, or press Enter to skip.\nYour choice (1-2, Enter to skip): "), Some(None));
    }

    #[test]
    fn the_right_option_s_number_or_the_bank_s_answer_is_typed() {
        let bank = bank();
        let mut answerer = Answerer::new(&bank);
        assert_eq!(
            answerer.at(FIRST).as_deref(),
            Some("2"),
            "Benchmark is option 2 on this screen"
        );
        let short = "2\n\nQuestion 7 of 7 (route-why)\nWhy?\nYour answer (one or two sentences, Enter to skip): ";
        assert_eq!(
            answerer.at(short).as_deref(),
            Some("A whole-system figure is a benchmark."),
            "one line"
        );
        assert_eq!(answerer.answered, ["route-07", "route-why"]);
        assert!(answerer.problems.is_empty());
    }

    #[test]
    fn what_cannot_be_answered_is_skipped_and_said() {
        let bank = bank();
        let mut answerer = Answerer::new(&bank);
        let unknown = "Question 2 of 7 (route-99)\nWhich?\n  1) Benchmark\nYour choice (1-1, Enter to skip): ";
        assert_eq!(answerer.at(unknown).as_deref(), Some(""));
        let wrong_options = "Question 1 of 7 (route-07)\nWhich tool?\n  1) Profile\nYour choice (1-1, Enter to skip): ";
        assert_eq!(answerer.at(wrong_options).as_deref(), Some(""));
        assert!(answerer.answered.is_empty());
        assert!(
            answerer.problems[0].contains("`route-99`, which routing.toml does not hold"),
            "{:?}",
            answerer.problems
        );
        assert!(
            answerer.problems[1].contains("right answer \"Benchmark\""),
            "{:?}",
            answerer.problems
        );
    }
}
