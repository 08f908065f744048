//! `--key DIR`: an instructor's key replaces the default one, and its quizzes/ folder replaces
//! quiz files of the same name, so a workshop can use question variants learners have not seen.

mod support;

use course_model::manifest::Manifest;
use course_model::quiz::QuestionBank;
use grader::key::Key;
use grader::submission::Submission;
use grader::Grader;

#[test]
fn a_variant_key_and_quiz_change_the_grades() {
    let dir = tempfile::tempdir().unwrap();
    let root = support::repo_root();
    let manifest = Manifest::load(&root.join(course_model::manifest::MANIFEST_PATH)).unwrap();
    // The variant: exercise 1's scenarios with every answer flipped, and a stricter pass mark
    // for exercise 4.
    let quiz = std::fs::read_to_string(support::fixture_quiz_dir().join("routing.toml")).unwrap();
    let flipped = quiz
        .replace("\"Benchmark\"", "\"TMP\"")
        .replace("\"Profile\"", "\"Benchmark\"")
        .replace("\"TMP\"", "\"Profile\"");
    std::fs::create_dir_all(dir.path().join("quizzes")).unwrap();
    std::fs::write(dir.path().join("quizzes/routing.toml"), flipped).unwrap();
    let key_text =
        std::fs::read_to_string(root.join(grader::key::DEFAULT_KEY_DIR).join("key.toml")).unwrap();
    std::fs::write(
        dir.path().join("key.toml"),
        key_text.replace(
            "[exercise-4]\npass_mark = 0.75",
            "[exercise-4]\npass_mark = 1.0",
        ),
    )
    .unwrap();

    let key = Key::load(dir.path(), &manifest).unwrap();
    // The key's quizzes come first; the check-yourself quiz still comes from the fixtures.
    let bank = QuestionBank::load(
        &[dir.path().join("quizzes"), support::fixture_quiz_dir()],
        &["routing.toml".into(), "check-yourself.toml".into()],
    )
    .unwrap();
    let variant = Grader::new(manifest, bank, key).unwrap();

    let mut files = support::perfect_files();
    files.insert(
        "exercise-4/answers.toml".into(),
        support::perfect_ex4().replacen("saving_ms = ", "saving_ms = 1", 1),
    );
    let submission = Submission::from_texts("exercises", files);
    let default = support::grader();
    assert!(default.grade_exercise(&submission, 1).passed);
    assert!(default.grade_exercise(&submission, 4).passed);
    let ex1 = variant.grade_exercise(&submission, 1);
    assert_eq!(
        ex1.points, 0.0,
        "every answer of the original is wrong in the flipped variant"
    );
    assert!(
        !variant.grade_exercise(&submission, 4).passed,
        "the variant's pass mark is 100%"
    );
}

#[test]
fn a_key_missing_a_section_is_refused_with_its_name() {
    let root = support::repo_root();
    let manifest = Manifest::load(&root.join(course_model::manifest::MANIFEST_PATH)).unwrap();
    let err = Key::parse("[exercise-1]\npass_mark = 0.8\n", "key.toml", &manifest).unwrap_err();
    assert!(err.0.contains("[exercise-2]"), "{}", err.0);
    let err = Key::parse("[exercise-1]\npass_mark = 'high'\n", "key.toml", &manifest).unwrap_err();
    assert!(err.0.contains("[exercise-1]"), "{}", err.0);
}
