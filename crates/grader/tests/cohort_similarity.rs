//! `course grade`'s similarity report: a copied profile and a copied written answer are flagged
//! for the instructor, with their evidence; learners who share multiple-choice answers, quote
//! the article's answer key or the reference solutions word for word are not; a prediction made
//! after its profile is listed beside them. No grade changes.

mod support;

use grader::cohort::{grade_cohort, CohortOptions, SIMILARITY_FILE};
use grader::overrides::Overrides;
use grader::similarity::{compare, fingerprint, Evidence, Published};
use std::collections::BTreeMap;
use support::*;

/// The article's answer key, as the key folder's published.toml quotes it.
fn article_key() -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(repo_root().join("crates/grader/key/published.toml")).unwrap();
    let value: toml::Value = toml::from_str(&text).unwrap();
    value["text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let source = t["source"].as_str().unwrap();
            let id = source.rsplit(": ").next().unwrap().to_string();
            (id, t["text"].as_str().unwrap().to_string())
        })
        .collect()
}

/// The reference solution's answer to a question.
fn solution_answer(exercise: u32, id: &str) -> String {
    let path = repo_root().join(format!("solutions/exercise-{exercise}/answers.toml"));
    let value: toml::Value = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["quiz"][id].as_str().unwrap().to_string()
}

fn ex1(route_why: &str) -> String {
    format!(
        "[quiz]\nntq-1 = \"Benchmark\"\nntq-2 = \"Profile\"\nntq-3 = \"Benchmark\"\nroute-why = {route_why:?}\n"
    )
}

/// Exercise 6: the same multiple-choice answers for everyone (the solution's options) and the
/// article's answer key, word for word.
fn ex6_verbatim() -> String {
    let mut out = "[quiz]\n".to_string();
    for id in ["serve-01", "serve-02", "serve-03", "serve-04"] {
        out.push_str(&format!("{id} = {:?}\n", solution_answer(6, id)));
    }
    for (id, text) in article_key() {
        out.push_str(&format!("{id} = {text:?}\n"));
    }
    out
}

const ANN_WHY: &str = "Route three asks whether users notice a faster kernel, which only shows up end to end under real traffic, so I benchmark it; route thirteen already has the gap measured and the fix lives in our own code, so a profile comes first.";

fn build(dir: &std::path::Path) -> std::path::PathBuf {
    let cohort = dir.join("cohort");
    let mut files = BTreeMap::new();
    let mut add = |student: &str, rel: &str, text: String| {
        files
            .entry(student.to_string())
            .or_insert_with(|| {
                let mut f = BTreeMap::new();
                f.insert(
                    course_model::learner_id::LEARNER_FILE.to_string(),
                    learner_toml(student),
                );
                f
            })
            .insert(rel.to_string(), text);
    };
    // ann and ben: ben submits ann's profile and her written answer with its case, spacing and
    // one word changed.
    add("ann", "exercise-1/answers.toml", ex1(ANN_WHY));
    add("ann", "exercise-3/results/report.json", cpu_profile());
    add("ann", "exercise-3/answers.toml", perfect_ex3_cpu());
    let copied = ANN_WHY
        .to_uppercase()
        .replace(", so I", ",  so   we")
        .replace("FASTER", "QUICKER");
    add("ben", "exercise-1/answers.toml", ex1(&copied));
    add("ben", "exercise-3/results/report.json", cpu_profile());
    add("ben", "exercise-3/answers.toml", perfect_ex3_cpu());
    // cat and dan: honest, with their own profiles; the same multiple-choice answers, the
    // article's answers word for word; dan quotes the reference solution's written answer.
    add("cat", "exercise-1/answers.toml", ex1("A percentile at the launch traffic is a property of the whole service under load, which a benchmark measures; the slow engine is code we wrote, so profiling it shows which op to fix."));
    add("cat", "exercise-6/answers.toml", ex6_verbatim());
    add(
        "cat",
        "exercise-3/results/report.json",
        cpu_stage1_profile(),
    );
    add(
        "dan",
        "exercise-1/answers.toml",
        ex1(&solution_answer(1, "route-why")),
    );
    add("dan", "exercise-6/answers.toml", ex6_verbatim());
    add(
        "dan",
        "exercise-3/results/report.json",
        cpu_stage2_profile(),
    );
    // eve: the solution's answer in lower case (published, so not a copy of dan), and a
    // prediction recorded after the profile existed.
    add(
        "eve",
        "exercise-1/answers.toml",
        ex1(&solution_answer(1, "route-why").to_lowercase()),
    );
    add("eve", "exercise-6/answers.toml", ex6_verbatim());
    add(
        "eve",
        "exercise-3/results/report.json",
        cpu_unfused_profile(),
    );
    add(
        "eve",
        "exercise-3/answers.toml",
        perfect_ex3_cpu()
            .replace("report_existed = false", "report_existed = true")
            .replace(
                "lm_head takes a fifth of the step and streams its 154 MB weight matrix at 90% of the read bandwidth, so storing it in bf16 halves the bytes it reads.",
                "My own plan: the output projection reads a large weight matrix near the memory roofline, and bf16 weights mean half the bytes.",
            ),
    );
    for (student, f) in &files {
        write_tree(&cohort.join(student), f);
    }
    cohort
}

#[test]
fn a_copied_profile_and_answer_are_flagged_and_honest_agreement_is_not() {
    let grader = grader();
    let dir = tempfile::tempdir().unwrap();
    let cohort = build(dir.path());
    let out = dir.path().join("grades");
    let published = Published::load(&repo_root(), &repo_root().join("crates/grader/key"));
    let overrides = Overrides::default();
    let mut options = CohortOptions::new(&out, &overrides, 2);
    options.published = Some(&published);
    let graded = grade_cohort(&grader, &cohort, &options).unwrap();

    let column = |s: &str| {
        graded
            .students
            .iter()
            .find(|r| r.student == s)
            .unwrap()
            .similarity
            .clone()
    };
    let report = std::fs::read_to_string(out.join(SIMILARITY_FILE)).unwrap();
    assert_eq!(
        column("ann"),
        "same-measurements:ben similar-answer:ben",
        "{report}"
    );
    assert_eq!(column("ben"), "same-measurements:ann similar-answer:ann");
    assert_eq!(column("cat"), "");
    assert_eq!(column("dan"), "");
    assert_eq!(column("eve"), "prediction-after:3");

    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains(",similarity"), "{csv}");
    assert!(
        csv.lines()
            .any(|l| l.starts_with("ann,")
                && l.contains(",same-measurements:ben similar-answer:ben,")),
        "{csv}"
    );

    assert!(report.contains("## Group 1: ann, ben"), "{report}");
    assert!(!report.contains("## Group 2"), "{report}");
    assert!(
        report.contains("**Identical measurements** in `exercise-3/results/report.json`: ann, ben"),
        "{report}"
    );
    assert!(
        report.contains("**Near-identical answers** to `exercise-1/answers.toml: quiz.route-why`"),
        "{report}"
    );
    assert!(report.contains("- eve, exercise 3: made "), "{report}");

    // What kept cat and dan apart is the published text: without it, their shared quotes of
    // the article (and eve's of the solution) would be flagged.
    let nothing_published = Published::default();
    let mut bare = CohortOptions::new(&out, &overrides, 2);
    bare.published = Some(&nothing_published);
    let unexcluded = grade_cohort(&grader, &cohort, &bare).unwrap();
    let cat = &unexcluded
        .students
        .iter()
        .find(|s| s.student == "cat")
        .unwrap()
        .similarity;
    assert!(cat.contains("similar-answer:dan"), "{cat}");
    assert!(cat.contains("similar-answer:eve"), "{cat}");

    // Flags, never penalties: the grades are those of a run without the report.
    let plain_out = dir.path().join("plain");
    let plain = grade_cohort(
        &grader,
        &cohort,
        &CohortOptions::new(&plain_out, &overrides, 2),
    )
    .unwrap();
    for (a, b) in graded.students.iter().zip(&plain.students) {
        assert_eq!(a.reports, b.reports, "{}", a.student);
        assert_eq!(a.flags(), b.flags(), "{}", a.student);
    }
}

#[test]
fn identical_answers_are_grouped_once_and_a_different_one_is_not_near() {
    let grader = grader();
    let published = Published::default();
    let print = |student: &str, why: &str| {
        let mut files = BTreeMap::new();
        files.insert("exercise-1/answers.toml".to_string(), ex1(why));
        fingerprint(student, &submission(files), &grader.manifest, &published)
    };
    let same = "The P90 at twice the traffic is a figure of the whole service, so benchmark it.";
    let prints = [
        print("p1", same),
        print("p2", &format!("  {}  ", same.to_uppercase())),
        print("p3", same),
        print(
            "p4",
            "The kernel gap is in code we wrote, so a profile of our engine says where to start.",
        ),
    ];
    let report = compare(&prints, &[]);
    assert_eq!(report.groups.len(), 1);
    let (students, evidence) = &report.groups[0];
    assert_eq!(students, &["p1", "p2", "p3"]);
    assert!(matches!(
        &evidence[..],
        [Evidence::SameAnswer { students, .. }] if students == &["p1", "p2", "p3"]
    ));
}
