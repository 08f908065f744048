//! The questions one learner is asked in a quiz exercise (1 and 6), and the order of their
//! options: `draw` questions from the quiz file's pool (every question the manifest's
//! `questions` does not name), then the `questions` everyone is asked. The draw and the option
//! order come from `crate::variant::rng(learner, exercise)`, so the exercise's program that
//! asks the questions, `course check` and `course grade` all regenerate the same variant.
//!
//! The shuffles are written here (Fisher–Yates over ChaCha8's raw 64-bit output) rather than
//! taken from `rand::seq`, whose algorithms may change between rand releases: a submission
//! graded a year later must still be graded against the questions its learner was asked.

use crate::manifest::{ExerciseInfo, Manifest, MANIFEST_PATH};
use crate::quiz::{bank_dir, BankQuestion, QuestionBank, QuestionKind, QuizError, QuizFile};
use crate::variant::{self, VariantRng};
use rand::RngCore;
use std::path::Path;

/// The id a submission without one is graded as: one shared variant, which the grader's report
/// names (`course grade` also flags the missing id). No learner is asked it: the quiz
/// exercises ask for the id before they draw.
const SHARED_VARIANT_ID: &str = "";

/// The questions `learner` is asked in `exercise` (`None`: no id, the shared variant), in
/// order, each multiple-choice one with its options in the order this learner sees them
/// (`BankQuestion::options`).
pub fn asked(
    exercise: &ExerciseInfo,
    file: &QuizFile,
    learner: Option<&str>,
) -> Result<Vec<BankQuestion>, QuizError> {
    let mut rng = variant::rng(learner.unwrap_or(SHARED_VARIANT_ID), exercise.number);
    let mut pool: Vec<&BankQuestion> = file
        .questions
        .iter()
        .filter(|q| !exercise.questions.contains(&q.id))
        .collect();
    if exercise.draw > pool.len() {
        return Err(QuizError(format!(
            "exercise {} draws {} questions from {}, whose pool holds only {}; lower `draw` in exercises/info.toml or add questions",
            exercise.number,
            exercise.draw,
            file.name,
            pool.len()
        )));
    }
    shuffle(&mut pool, &mut rng);
    let mut chosen: Vec<&BankQuestion> = pool.into_iter().take(exercise.draw).collect();
    for id in &exercise.questions {
        let question = file.question(id).ok_or_else(|| {
            QuizError(format!("exercise {} asks question `{id}`, which is not in the quiz file {}; fix exercises/info.toml or the quiz", exercise.number, file.name))
        })?;
        chosen.push(question);
    }
    Ok(chosen
        .into_iter()
        .map(|question| {
            let mut question = question.clone();
            if matches!(question.kind, QuestionKind::MultipleChoice { .. }) {
                let mut options = question.sorted_options();
                shuffle(&mut options, &mut rng);
                question.order = options;
            }
            question
        })
        .collect())
}

/// The learner's variant as a quiz file of its own (for `quiz_terminal`, which asks a file's
/// questions in order).
pub fn variant_quiz(
    exercise: &ExerciseInfo,
    file: &QuizFile,
    learner: Option<&str>,
) -> Result<QuizFile, QuizError> {
    Ok(QuizFile {
        name: file.name.clone(),
        questions: asked(exercise, file, learner)?,
    })
}

/// What an exercise's program asks: `learner`'s variant of quiz exercise `number` of the
/// course at `root`. Reads the manifest and the graded bank as the grader does; the program
/// has the learner's id first (`crate::learner_id::ensure_learner_id`), so that what it asks is
/// what `course check` grades.
pub fn for_learner(root: &Path, number: u32, learner: &str) -> Result<QuizFile, QuizError> {
    let manifest = Manifest::load(&root.join(MANIFEST_PATH)).map_err(|e| QuizError(e.0))?;
    let exercise = manifest
        .exercise(number)
        .ok_or_else(|| QuizError(format!("{MANIFEST_PATH} has no exercise {number}")))?;
    let name = exercise.quizzes.first().ok_or_else(|| {
        QuizError(format!(
            "{MANIFEST_PATH}: exercise {number} names no quiz file"
        ))
    })?;
    let bank = QuestionBank::load(&[bank_dir(root)], std::slice::from_ref(name))?;
    let file = bank
        .file(name)
        .ok_or_else(|| QuizError(format!("quiz file {name} was not loaded")))?;
    variant_quiz(exercise, file, Some(learner))
}

/// A uniform index below `n` from one 64-bit draw (the high half of the 128-bit product: a
/// bias below n / 2^64, nothing a quiz can notice).
fn below(n: usize, rng: &mut VariantRng) -> usize {
    ((u128::from(rng.next_u64()) * n as u128) >> 64) as usize
}

/// Fisher–Yates, from the last element down.
fn shuffle<T>(items: &mut [T], rng: &mut VariantRng) {
    for i in (1..items.len()).rev() {
        let j = below(i + 1, rng);
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiz(pool: usize) -> QuizFile {
        let mut text = String::new();
        for i in 1..=pool {
            text.push_str(&format!(
                "[[questions]]\nid = \"s{i}\"\ntype = \"MultipleChoice\"\nprompt.prompt = \"Scenario {i}\"\nprompt.distractors = [\"b{i}\", \"c{i}\"]\nanswer.answer = \"a{i}\"\n\n"
            ));
        }
        text.push_str("[[questions]]\nid = \"why\"\ntype = \"ShortAnswer\"\nprompt.prompt = \"Why?\"\nanswer.answer = \"because\"\n");
        QuizFile::parse(&text, "pool.toml", "pool.toml").unwrap()
    }

    fn exercise(draw: usize) -> ExerciseInfo {
        let text = format!(
            "format = 1\n[[exercises]]\nnumber = 1\nname = \"n\"\ntitle = \"t\"\ndir = \"exercises/exercise-1\"\npackage = \"exercise-1\"\n\
             solution_dir = \"solutions/exercise-1\"\nchapter = \"c.md\"\ntest = false\ncheck = \"quiz\"\nquizzes = [\"pool.toml\"]\n\
             questions = [\"why\"]\ndraw = {draw}\nhints = [\"h\"]\nanswers_template = \"\"\n"
        );
        Manifest::parse(&text, "info.toml")
            .unwrap()
            .exercises
            .remove(0)
    }

    fn ids(asked: &[BankQuestion]) -> Vec<&str> {
        asked.iter().map(|a| a.id.as_str()).collect()
    }

    #[test]
    fn a_learner_gets_the_same_draw_every_time_and_the_fixed_questions_last() {
        let (file, ex) = (quiz(12), exercise(4));
        let alice = asked(&ex, &file, Some("alice")).unwrap();
        assert_eq!(alice, asked(&ex, &file, Some("alice")).unwrap());
        assert_eq!(ids(&alice).len(), 5);
        assert_eq!(ids(&alice)[4], "why");
        let mut drawn = ids(&alice)[..4].to_vec();
        drawn.sort();
        drawn.dedup();
        assert_eq!(drawn.len(), 4, "no question drawn twice: {drawn:?}");
        // Every option of a drawn question is shown, once.
        for a in &alice[..4] {
            let mut shown = a.options();
            shown.sort();
            assert_eq!(shown, a.sorted_options());
        }
        assert!(
            alice[4].options().is_empty(),
            "a short answer has no options"
        );
    }

    #[test]
    fn across_learners_every_question_and_every_option_position_comes_up() {
        let (file, ex) = (quiz(12), exercise(4));
        let mut asked_ids = std::collections::BTreeSet::new();
        let mut first_options = std::collections::BTreeSet::new();
        let mut sets = std::collections::BTreeSet::new();
        for n in 0..60 {
            let variant = asked(&ex, &file, Some(&format!("learner-{n}"))).unwrap();
            let mut set: Vec<String> = ids(&variant).iter().map(|s| s.to_string()).collect();
            set.sort();
            sets.insert(set);
            for a in &variant[..4] {
                asked_ids.insert(a.id.clone());
                let position = a.options().iter().position(|o| o.starts_with('a')).unwrap();
                first_options.insert(position);
            }
        }
        assert_eq!(
            asked_ids.len(),
            12,
            "every pool question is asked of someone"
        );
        assert_eq!(
            first_options.len(),
            3,
            "the right option shows up in every position"
        );
        assert!(
            sets.len() > 40,
            "60 learners share few question sets: {}",
            sets.len()
        );
    }

    #[test]
    fn a_draw_larger_than_the_pool_is_a_course_error() {
        let err = asked(&exercise(13), &quiz(12), Some("alice")).unwrap_err();
        assert!(err.0.contains("pool holds only 12"), "{}", err.0);
    }
}
