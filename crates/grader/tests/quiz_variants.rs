//! Exercises 1 and 6 against the real graded bank (crates/grader/bank): each learner is asked
//! their own questions, drawn with their id, and graded on those only. Adversarial cases: a
//! copied answer file, the book's practice answers, a why line that contradicts itself. The
//! article's four written questions have their own cases in tests/article_answers.rs.

mod support;

use course_model::learner_id::LEARNER_FILE;
use course_model::quiz::{BankQuestion, QuestionKind, QuizFile};
use grader::report::Outcome;
use grader::submission::{Limits, Submission};
use grader::{ExerciseReport, Grader};
use std::collections::BTreeMap;

/// The routing answer of every scenario of routing.toml, written out here rather than read
/// from the bank, so that a scenario whose answer changed in the bank fails this test.
const ROUTES: [(&str, &str); 22] = [
    ("route-01", "Benchmark"),
    ("route-02", "Benchmark"),
    ("route-03", "Benchmark"),
    ("route-04", "Benchmark"),
    ("route-05", "Benchmark"),
    ("route-06", "Benchmark"),
    ("route-07", "Benchmark"),
    ("route-08", "Benchmark"),
    ("route-09", "Benchmark"),
    ("route-10", "Benchmark"),
    ("route-11", "Benchmark"),
    ("route-12", "Profile"),
    ("route-13", "Profile"),
    ("route-14", "Profile"),
    ("route-15", "Profile"),
    ("route-16", "Profile"),
    ("route-17", "Profile"),
    ("route-18", "Profile"),
    ("route-19", "Profile"),
    ("route-20", "Profile"),
    ("route-21", "Profile"),
    ("route-22", "Profile"),
];

const WHY: &str = "route-03 asks whether users feel a kernel change, an end-to-end figure under load, so a benchmark; in route-13 the gap is measured and the fix is code in our own port, so a profile shows where its time goes.";

fn real_grader() -> Grader {
    Grader::load(&support::repo_root(), None).unwrap_or_else(|e| panic!("{e}"))
}

fn bank_file(grader: &Grader, number: u32) -> &QuizFile {
    let name = &grader.manifest.exercise(number).unwrap().quizzes[0];
    grader.bank.file(name).unwrap()
}

fn variant(grader: &Grader, number: u32, learner: &str) -> Vec<BankQuestion> {
    course_model::quiz_variant::asked(
        grader.manifest.exercise(number).unwrap(),
        bank_file(grader, number),
        Some(learner),
    )
    .unwrap()
}

fn ids(asked: &[BankQuestion]) -> Vec<String> {
    asked.iter().map(|q| q.id.clone()).collect()
}

fn toml_text(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Exercise 1's answers for `learner`'s own scenarios, from the table above.
fn ex1_answers(grader: &Grader, learner: &str) -> String {
    let mut out = String::from("[quiz]\n");
    for q in variant(grader, 1, learner) {
        match ROUTES.iter().find(|(id, _)| *id == q.id) {
            Some((id, route)) => out.push_str(&format!("{id} = \"{route}\"\n")),
            None => out.push_str(&format!("{} = {}\n", q.id, toml_text(WHY))),
        }
    }
    out
}

/// Exercise 6's answers for `learner`: the right option of each drawn question, and the
/// article's four questions answered in the learner's own words.
fn ex6_answers(grader: &Grader, learner: &str) -> String {
    const WRITTEN: [(&str, &str); 4] = [
        ("article-double-traffic", "Benchmark it at twice today's request rate: whether the P90 TTFT target holds is a figure of the whole system under load."),
        ("article-slower-than-vllm", "Profile our own engine: we wrote the code, so the fix is a code change, and a per-op breakdown shows where it falls behind."),
        ("article-nsight-ttft", "No: tune vLLM's settings and benchmark each change; a profiler only helps if you plan to change its kernels."),
        ("article-activations-first", "The matmuls are already tuned near their ceiling, while the activations take their time for little math: extra memory reads that a fused kernel removes."),
    ];
    let mut out = String::from("[quiz]\n");
    for q in variant(grader, 6, learner) {
        match &q.kind {
            QuestionKind::MultipleChoice { answers, .. } => {
                out.push_str(&format!("{} = {}\n", q.id, toml_text(&answers[0])))
            }
            _ => {
                let (_, text) = WRITTEN
                    .iter()
                    .find(|(id, _)| *id == q.id)
                    .unwrap_or_else(|| panic!("no written answer for {}", q.id));
                out.push_str(&format!("{} = {}\n", q.id, toml_text(text)))
            }
        }
    }
    out
}

fn submission(learner: &str, files: &[(&str, String)]) -> Submission {
    let mut all: BTreeMap<String, String> = files
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    all.insert(LEARNER_FILE.to_string(), format!("id = \"{learner}\"\n"));
    Submission::from_texts(learner, all)
}

/// One line per question: id, outcome, points: what a snapshot needs to show who was asked what.
fn outline(report: &ExerciseReport) -> String {
    let mut out = format!(
        "exercise {}: {}/{} points, passed: {}\n",
        report.exercise, report.points, report.max_points, report.passed
    );
    for q in &report.questions {
        out.push_str(&format!(
            "  {:<20} {:<10} {}/{}{}\n",
            q.id,
            q.outcome.label(),
            q.points,
            q.max_points,
            if q.needs_review { "  (review)" } else { "" }
        ));
    }
    for note in &report.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out
}

#[test]
fn two_learners_get_different_scenarios_and_each_is_graded_right() {
    let grader = real_grader();
    let (alice, bob) = (variant(&grader, 1, "alice"), variant(&grader, 1, "bob"));
    assert_ne!(ids(&alice), ids(&bob));
    assert_eq!(
        ids(&alice).last().map(String::as_str),
        Some("route-why"),
        "the why line is asked of everyone, last"
    );
    let mut out = String::new();
    for learner in ["alice", "bob"] {
        let s = submission(
            learner,
            &[
                ("exercise-1/answers.toml", ex1_answers(&grader, learner)),
                ("exercise-6/answers.toml", ex6_answers(&grader, learner)),
            ],
        );
        let ex1 = grader.grade_exercise(&s, 1);
        let ex6 = grader.grade_exercise(&s, 6);
        assert!(
            ex1.passed && ex6.passed,
            "{learner}:\n{}\n{}",
            outline(&ex1),
            outline(&ex6)
        );
        let scenarios = ex1.questions.iter().filter(|q| q.id != "route-why");
        assert!(
            scenarios.clone().all(|q| q.outcome == Outcome::Right),
            "{}",
            outline(&ex1)
        );
        assert_eq!(scenarios.count(), 6);
        out.push_str(&format!("{learner}\n{}{}", outline(&ex1), outline(&ex6)));
    }
    assert_ne!(
        ids(&variant(&grader, 6, "alice")),
        ids(&variant(&grader, 6, "bob"))
    );
    insta::assert_snapshot!("two_learners_two_variants", out);
}

#[test]
fn an_answer_file_copied_from_another_learner_fails() {
    let grader = real_grader();
    let alices = [
        ("exercise-1/answers.toml", ex1_answers(&grader, "alice")),
        ("exercise-6/answers.toml", ex6_answers(&grader, "alice")),
    ];
    assert!(
        grader
            .grade_exercise(&submission("alice", &alices), 1)
            .passed
    );
    // Bob hands in Alice's files with his own id.
    let copied = submission("bob", &alices);
    let ex1 = grader.grade_exercise(&copied, 1);
    let ex6 = grader.grade_exercise(&copied, 6);
    assert!(
        !ex1.passed && !ex6.passed,
        "{}\n{}",
        outline(&ex1),
        outline(&ex6)
    );
    assert!(
        ex1.notes
            .iter()
            .any(|n| n.contains("questions you were not asked")),
        "{:?}",
        ex1.notes
    );
    insta::assert_snapshot!(
        "copied_from_alice_graded_for_bob",
        format!("{}{}", outline(&ex1), outline(&ex6))
    );
}

#[test]
fn the_practice_quiz_answers_do_not_grade_the_exam() {
    let grader = real_grader();
    let root = support::repo_root();
    // The right answer of every practice question the book shows for these chapters.
    let practice = |name: &str| -> (String, QuizFile) {
        let path = course_model::quiz::book_quiz_dir(&root).join(name);
        let quiz = QuizFile::parse(&std::fs::read_to_string(&path).unwrap(), name, name).unwrap();
        let mut out = String::from("[quiz]\n");
        for q in &quiz.questions {
            let answer = match &q.kind {
                QuestionKind::MultipleChoice { answers, .. } => answers[0].clone(),
                QuestionKind::ShortAnswer { answer, .. } => answer.clone(),
                QuestionKind::Unsupported(_) => continue,
            };
            out.push_str(&format!("{} = {}\n", q.id, toml_text(&answer)));
        }
        (out, quiz)
    };
    let (ex1_text, ex1_book) = practice("name-the-question.toml");
    let (ex6_text, ex6_book) = practice("check-yourself.toml");
    // No graded question is a practice question, by id or by prompt.
    for (bank, book) in [
        (bank_file(&grader, 1), &ex1_book),
        (bank_file(&grader, 6), &ex6_book),
    ] {
        for q in &bank.questions {
            assert!(
                book.question(&q.id).is_none(),
                "{} is both graded and in the book",
                q.id
            );
            // The article's four questions are public: the page asks them in the same words
            // (tests/article_answers.rs), and only they may share a prompt with the book.
            if q.id.starts_with("article-") {
                continue;
            }
            let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                book.questions
                    .iter()
                    .all(|b| flat(&b.prompt) != flat(&q.prompt)),
                "{}'s prompt is in the book",
                q.id
            );
        }
    }
    let s = submission(
        "alice",
        &[
            ("exercise-1/answers.toml", ex1_text),
            ("exercise-6/answers.toml", ex6_text),
        ],
    );
    let ex1 = grader.grade_exercise(&s, 1);
    let ex6 = grader.grade_exercise(&s, 6);
    assert_eq!(
        (ex1.points, ex6.points),
        (0.0, 0.0),
        "{}\n{}",
        outline(&ex1),
        outline(&ex6)
    );
    assert!(ex1
        .questions
        .iter()
        .chain(&ex6.questions)
        .all(|q| q.outcome == Outcome::Unanswered));
    insta::assert_snapshot!(
        "practice_answers_on_the_exam",
        format!("{}{}", outline(&ex1), outline(&ex6))
    );
}

#[test]
fn the_why_line_is_read_by_the_rubric_and_awarded_by_the_instructor() {
    let grader = real_grader();
    let mut answers = ex1_answers(&grader, "carol");
    let mut out = String::new();
    for (case, why) in [
        ("right in the rubric's words", WHY),
        ("right in other words", "One wanted a single latency percentile for the service at a given request rate; the other had its slowdown measured and needed the breakdown of our own code before changing it."),
        ("contradicting itself", "Not an end-to-end figure under load, so never a benchmark; and the fix is not code, so do not profile."),
        ("bare keywords", "throughput kernel code"),
    ] {
        answers = answers.lines().filter(|l| !l.starts_with("route-why")).map(|l| format!("{l}\n")).collect::<String>() + &format!("route-why = {}\n", toml_text(why));
        let report = grader.grade_exercise(&submission("carol", &[("exercise-1/answers.toml", answers.clone())]), 1);
        let q = report.questions.iter().find(|q| q.id == "route-why").unwrap();
        assert_eq!(q.points, 0.0, "{case}: the machine awards nothing");
        assert!(q.needs_review, "{case}: every why line is flagged for the instructor");
        out.push_str(&format!("{case}: {}\n", q.reason));
    }
    insta::assert_snapshot!("why_line_readings", out);
}

#[test]
fn course_check_and_course_grade_read_the_same_variant_from_the_folder() {
    // `course check` reads the exercises folder; `course grade` the same files from a
    // submission. Both find learner.toml there and regenerate one variant.
    let grader = real_grader();
    let dir = tempfile::tempdir().unwrap();
    let files: BTreeMap<String, String> = [
        (
            "exercise-1/answers.toml".to_string(),
            ex1_answers(&grader, "dana"),
        ),
        (LEARNER_FILE.to_string(), "id = \"dana\"\n".to_string()),
    ]
    .into();
    support::write_tree(dir.path(), &files);
    let from_folder = Submission::from_exercises_dir(
        &dir.path().join("exercises"),
        "exercises",
        grader.wanted(),
        &Limits::default(),
    );
    let from_archive = Submission::from_texts("dana", files);
    let (a, b) = (
        grader.grade_exercise(&from_folder, 1),
        grader.grade_exercise(&from_archive, 1),
    );
    assert!(a.passed && b.passed, "{}\n{}", outline(&a), outline(&b));
    assert_eq!(
        a.questions.iter().map(|q| &q.id).collect::<Vec<_>>(),
        b.questions.iter().map(|q| &q.id).collect::<Vec<_>>()
    );
    // Without an id the shared variant is graded, and the report says so.
    let anonymous = grader.grade_exercise(
        &Submission::from_texts(
            "x",
            [(
                "exercise-1/answers.toml".to_string(),
                ex1_answers(&grader, "dana"),
            )],
        ),
        1,
    );
    assert!(
        anonymous.notes.iter().any(|n| n.contains("no learner id")),
        "{:?}",
        anonymous.notes
    );
}
