//! Each exercise's answers.toml is the `answers_template` exercises/info.toml gives: what a
//! learner starts from, what `course reset` restores (the committed file inside git, the
//! template outside it) and what the book describes. The template must also be a file the
//! grader reads: valid TOML with nothing answered yet.

use std::path::Path;

use course_model::manifest::{Manifest, MANIFEST_PATH};
use grader::answers::Answers;

fn manifest() -> Manifest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(MANIFEST_PATH);
    Manifest::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_answers_toml_is_its_template() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let manifest = manifest();
    assert!(
        !manifest.exercises.is_empty(),
        "{MANIFEST_PATH} lists no exercise"
    );
    for exercise in &manifest.exercises {
        let path = root.join(&exercise.dir).join("answers.toml");
        let file =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let template = &exercise.answers_template;
        // `course reset` outside git writes the template without its leading blank lines: the
        // same text only if there are none.
        assert_eq!(
            template.trim_start(),
            template.as_str(),
            "exercise {}: the template starts with blank lines",
            exercise.number
        );
        if file != *template {
            let line = file
                .lines()
                .zip(template.lines())
                .position(|(a, b)| a != b)
                .map_or_else(
                    || {
                        format!(
                            "one is longer ({} lines in the file, {} in the template)",
                            file.lines().count(),
                            template.lines().count()
                        )
                    },
                    |i| format!("first difference on line {}", i + 1),
                );
            panic!(
                "{} differs from the answers_template of exercise {} in {MANIFEST_PATH} ({line}): change both together",
                path.display(),
                exercise.number
            );
        }
    }
}

#[test]
fn every_template_is_an_unanswered_answers_file() {
    for exercise in &manifest().exercises {
        let shown = format!("{MANIFEST_PATH} (exercise {} template)", exercise.number);
        toml::from_str::<toml::Table>(&exercise.answers_template)
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        let answers =
            Answers::parse(&exercise.answers_template, &shown).unwrap_or_else(|p| panic!("{p}"));
        assert!(
            answers.is_empty(),
            "{shown} has answers filled in: a learner would start with them"
        );
    }
}

/// The exercises that start with a prediction get the questions their template asks: exercise
/// 3 which op tops the table, exercise 5 what fusing will do (the form `course run` and the
/// exercise's binary ask, chosen by the template's `[prediction]` keys); the others none.
#[test]
fn each_prediction_template_picks_its_form() {
    use grader::prediction::{Form, FUSION, TOP_OP};
    for exercise in &manifest().exercises {
        let expected = match exercise.number {
            3 | 8 => Some(&TOP_OP),
            5 => Some(&FUSION),
            _ => None,
        };
        assert_eq!(
            Form::for_template(&exercise.answers_template),
            expected,
            "exercise {}",
            exercise.number
        );
        if expected.is_some() {
            assert!(
                exercise.result_path("profile").is_some(),
                "exercise {} names the results file its prediction comes before",
                exercise.number
            );
        }
    }
}
