//! Multiple choice: exact, single or multi-select. The learner writes the option's text.

use super::normalize;
use crate::report::QuestionResult;
use course_model::quiz::{BankQuestion, QuestionKind};

/// Grade the options a learner chose; `chosen` is never empty (empty is "unanswered").
pub fn grade(question: &BankQuestion, chosen: &[String], result: QuestionResult) -> QuestionResult {
    let QuestionKind::MultipleChoice { answers, multi, .. } = &question.kind else {
        return result.wrong(
            "this question is not multiple choice; the answer key is wrong, tell the instructor",
        );
    };
    let options = question.options();
    let find = |text: &str| find_option(&options, text);
    let mut picked = Vec::new();
    for choice in chosen {
        match find(choice) {
            Some(option) => picked.push(normalize(option)),
            None => {
                let listed = options
                    .iter()
                    .map(|o| format!("\"{}\"", o.trim()))
                    .collect::<Vec<_>>()
                    .join(", ");
                return result.wrong(format!("\"{choice}\" is not one of the options: {listed}"));
            }
        }
    }
    picked.sort();
    picked.dedup();
    let mut expected: Vec<String> = answers.iter().map(|a| normalize(a)).collect();
    expected.sort();
    expected.dedup();
    if !multi && picked.len() > 1 {
        return result.wrong("choose one option only");
    }
    if picked == expected {
        result.right("")
    } else if *multi {
        let hits = picked.iter().filter(|p| expected.contains(p)).count();
        let extra = picked.len() - hits;
        result.wrong(format!(
            "{hits} of the {} right options chosen, {extra} wrong one{}; every right option is needed",
            expected.len(),
            if extra == 1 { "" } else { "s" }
        ))
    } else {
        result.wrong("not the right option")
    }
}

/// The option a learner meant: the exact text (normalised), or else the one option that the
/// answer starts (or that starts the answer), so "Benchmark" picks "Benchmark: double the load"
/// and "benchmarking" picks "Benchmark". Ambiguous or short prefixes pick nothing.
pub fn find_option<'a>(options: &'a [String], text: &str) -> Option<&'a String> {
    let wanted = normalize(text);
    if let Some(exact) = options.iter().find(|o| normalize(o) == wanted) {
        return Some(exact);
    }
    const MIN_PREFIX_CHARS: usize = 4;
    let prefixed: Vec<&String> = options
        .iter()
        .filter(|o| {
            let option = normalize(o);
            let (short, long) = if option.len() <= wanted.len() {
                (&option, &wanted)
            } else {
                (&wanted, &option)
            };
            short.chars().count() >= MIN_PREFIX_CHARS && long.starts_with(short.as_str())
        })
        .collect();
    match prefixed.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Outcome;

    fn mc(answers: &[&str], distractors: &[&str], multi: bool) -> BankQuestion {
        BankQuestion {
            id: "q".into(),
            prompt: "?".into(),
            kind: QuestionKind::MultipleChoice {
                answers: answers.iter().map(|s| s.to_string()).collect(),
                distractors: distractors.iter().map(|s| s.to_string()).collect(),
                multi,
            },
            context: None,
            order: Vec::new(),
        }
    }

    fn r() -> QuestionResult {
        QuestionResult::new("q", "q", 1.0)
    }

    #[test]
    fn single_choice_ignores_case_space_and_markdown() {
        let q = mc(&["**Benchmark** it"], &["Profile"], false);
        assert_eq!(
            grade(&q, &[" benchmark  IT ".into()], r()).outcome,
            Outcome::Right
        );
        assert_eq!(grade(&q, &["Profile".into()], r()).outcome, Outcome::Wrong);
        let q2 = mc(&["Benchmark"], &["Profile"], false);
        assert_eq!(
            grade(&q2, &["benchmarking".into()], r()).outcome,
            Outcome::Right
        );
        assert_eq!(
            grade(&q2, &["profiling".into()], r()).outcome,
            Outcome::Wrong
        );
        assert_eq!(grade(&q2, &["B".into()], r()).outcome, Outcome::Wrong);
        let not_an_option = grade(&q, &["Nsight".into()], r());
        assert!(not_an_option.reason.contains("not one of the options"));
    }

    #[test]
    fn multi_select_needs_exactly_the_right_set() {
        let q = mc(&["a", "b"], &["c"], true);
        assert_eq!(
            grade(&q, &["b".into(), "a".into()], r()).outcome,
            Outcome::Right
        );
        assert_eq!(grade(&q, &["a".into()], r()).outcome, Outcome::Wrong);
        assert_eq!(
            grade(&q, &["a".into(), "b".into(), "c".into()], r()).outcome,
            Outcome::Wrong
        );
    }
}
