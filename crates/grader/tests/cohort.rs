//! `course grade`'s engine on a small cohort with every kind of bad input: folders, zips and
//! tar.gz files; a whole clone and a bare exercises/ folder; malformed, non-UTF-8, tampered,
//! escaping, bombed and duplicate submissions. Everyone is graded; each problem is recorded.

mod support;

use grader::cohort::{grade_cohort, CohortOptions};
use grader::overrides::Overrides;
use grader::Limits;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use support::*;
use zip::write::SimpleFileOptions;

fn templates() -> BTreeMap<String, String> {
    grader()
        .manifest
        .exercises
        .iter()
        .map(|e| (e.answers_path(), e.answers_template.clone()))
        .collect()
}

/// Build the cohort folder; returns its path.
fn build_cohort(dir: &Path) -> std::path::PathBuf {
    let cohort = dir.join("cohort");
    std::fs::create_dir_all(&cohort).unwrap();
    let perfect = perfect_files();

    // alice: a whole clone, with the reference solutions' folders that must be ignored.
    write_tree(&cohort.join("alice/bpc-course"), &perfect);
    std::fs::create_dir_all(cohort.join("alice/bpc-course/solutions/exercise-1")).unwrap();
    std::fs::write(
        cohort.join("alice/bpc-course/solutions/exercise-1/answers.toml"),
        "[quiz]\nntq-1 = \"Profile\"\n",
    )
    .unwrap();

    // bob: only the exercises folder, zipped; a partial attempt.
    let mut bob = perfect_files_for("bob");
    bob.insert(
        "exercise-1/answers.toml".into(),
        "[quiz]\nntq-1 = \"Benchmark\"\nntq-2 = \"Benchmark\"\n".into(),
    );
    bob.insert("exercise-3/answers.toml".into(), "[[top_ops]]\nname = \"matmul\"\nshare_pct = 52\n[plan]\nattack = \"gelu\"\nexpected_cut_pct = 5\nmechanism = \"memory-traffic\"\nwhy = \"The gelu op, because it is memory-bound.\"\n".into());
    bob.remove("exercise-7/results/rate-2x/bench.json");
    // bob looked at exercise 4's solution before passing it (his progress file says so).
    bob.insert(
        ".course-progress.json".into(),
        r#"{"format": 1, "exercises": {"4": {"passed": true, "solution_viewed": true, "solution_viewed_before_pass": true}}}"#.into(),
    );
    zip_files(&cohort.join("bob.zip"), &bob, "exercises/", |_| {});

    // carol: the untouched templates, as a tar.gz.
    tar_gz_files(
        &cohort.join("carol.tar.gz"),
        &templates(),
        "course/exercises/",
        |_| {},
    );

    // dave: malformed TOML, wrong types, invalid UTF-8, an oversized results file.
    let mut dave = perfect_files_for("dave");
    dave.insert(
        "exercise-1/answers.toml".into(),
        "[quiz\nntq-1 = \"Benchmark\"\n".into(),
    );
    dave.insert(
        "exercise-2/answers.toml".into(),
        "[above]\nthroughput_ratio = true\nthroughput = [\"faster\"]\n".into(),
    );
    write_tree(&cohort.join("dave"), &dave);
    std::fs::write(
        cohort.join("dave/exercises/exercise-6/answers.toml"),
        b"[quiz]\ncy-double-traffic = \"\xc3\x28\"\n",
    )
    .unwrap();
    std::fs::write(
        cohort.join("dave/exercises/exercise-5/results/bench.json"),
        vec![b' '; 300 * 1024],
    )
    .unwrap();

    // erin: a zip whose entries escape (zip-slip) and a link pointing outside.
    zip_files(
        &cohort.join("erin.zip"),
        &perfect_files_for("erin"),
        "",
        |zip| {
            zip.start_file("../../outside.txt", SimpleFileOptions::default())
                .unwrap();
            zip.write_all(b"escaped").unwrap();
            zip.start_file("/etc/cron.d/evil", SimpleFileOptions::default())
                .unwrap();
            zip.write_all(b"escaped").unwrap();
            zip.add_symlink(
                "exercise-4/results",
                "../../../../etc",
                SimpleFileOptions::default(),
            )
            .unwrap();
        },
    );

    // frank: an archive bomb (a small tar.gz that expands past the cap).
    tar_gz_files(
        &cohort.join("frank.tar.gz"),
        &perfect_files_for("frank"),
        "exercises/",
        |tar| {
            let zeros = vec![0u8; 3 << 20];
            let mut header = tar::Header::new_gnu();
            header.set_size(zeros.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, "exercises/zeros.bin", zeros.as_slice())
                .unwrap();
        },
    );

    // grace: tampered results (the ranking contradicts the rows).
    let mut grace = perfect_files_for("grace");
    grace.insert(
        "exercise-3/results/report.json".into(),
        profile_json(
            "cpu",
            &[
                ("gelu", 2600.0, None),
                ("matmul", 5200.0, None),
                ("add", 1100.0, None),
            ],
        ),
    );
    write_tree(&cohort.join("grace"), &grace);

    // alice again, as a zip: two students with the same name.
    zip_files(
        &cohort.join("alice.zip"),
        &templates(),
        "exercises/",
        |_| {},
    );

    // heidi: answers.toml is a link to a file outside her folder.
    let mut heidi = perfect_files_for("heidi");
    heidi.remove("exercise-1/answers.toml");
    write_tree(&cohort.join("heidi"), &heidi);
    std::fs::write(dir.join("leaked-answers.toml"), PERFECT_EX1).unwrap();
    std::fs::create_dir_all(cohort.join("heidi/exercises/exercise-1")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        dir.join("leaked-answers.toml"),
        cohort.join("heidi/exercises/exercise-1/answers.toml"),
    )
    .unwrap();

    // ivan: a folder with no exercises at all; and a stray file.
    std::fs::create_dir_all(cohort.join("ivan/homework")).unwrap();
    std::fs::write(cohort.join("notes.txt"), "not a submission").unwrap();
    cohort
}

fn test_grader() -> grader::Grader {
    let mut g = grader();
    // Small caps so the bomb and the oversized file trip them quickly.
    g.limits = Limits {
        max_file_bytes: 256 * 1024,
        max_archive_bytes: 2 << 20,
        ..Limits::default()
    };
    g
}

#[test]
fn a_bad_cohort_is_graded_student_by_student() {
    let dir = tempfile::tempdir().unwrap();
    let cohort_dir = build_cohort(dir.path());
    let out = dir.path().join("grades");
    let grader = test_grader();
    let cohort = grade_cohort(
        &grader,
        &cohort_dir,
        &CohortOptions::new(&out, &Overrides::default(), 2),
    )
    .unwrap();

    let names: Vec<&str> = cohort.students.iter().map(|s| s.student.as_str()).collect();
    assert_eq!(
        names,
        [
            "alice",
            "alice.zip",
            "bob",
            "carol",
            "dave",
            "erin",
            "frank",
            "grace",
            "heidi",
            "ivan"
        ]
    );
    assert_eq!(
        cohort.warnings,
        ["skipped notes.txt: not a folder, .zip or .tar.gz"]
    );
    let by_name = |n: &str| cohort.students.iter().find(|s| s.student == n).unwrap();
    assert_eq!(
        by_name("alice").passed(),
        8,
        "{:?}",
        by_name("alice").flags()
    );
    assert!(
        by_name("bob")
            .flags()
            .contains(&"solution-early:4".to_string()),
        "{:?}",
        by_name("bob").flags()
    );
    let bob_feedback = std::fs::read_to_string(out.join("feedback/bob.md")).unwrap();
    assert!(bob_feedback.contains("the solution was shown before this exercise passed"));
    assert!(
        by_name("erin")
            .problems
            .iter()
            .filter(|p| p.kind == grader::ProblemKind::Escapes)
            .count()
            >= 3,
        "{:?}",
        by_name("erin").problems
    );
    assert!(by_name("frank")
        .problems
        .iter()
        .any(|p| p.kind == grader::ProblemKind::Archive && p.message.contains("archive bomb")));
    // erin's other files were still graded from the archive, in memory.
    // (Six scenarios right; exercise 1's why line waits for the instructor.)
    assert_eq!(
        by_name("erin").reports[0].points,
        6.0,
        "{:?}",
        by_name("erin").reports[0].questions
    );
    assert!(!dir.path().join("outside.txt").exists());

    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    insta::assert_snapshot!("gradebook_csv", csv);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("gradebook.json")).unwrap())
            .unwrap();
    assert_eq!(json.as_array().unwrap().len(), cohort.students.len());
    // (Each learner is asked exercise 1's scenarios in their own order.)
    assert!(json[0]["reports"][0]["questions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|q| q["id"] == "ntq-1"));
    for student in &cohort.students {
        let feedback = out.join("feedback").join(&student.feedback_file);
        assert!(feedback.is_file(), "{}", feedback.display());
    }
    let erin = std::fs::read_to_string(out.join("feedback/erin.md")).unwrap();
    let erin_head: String = erin.split("## Exercise 2").next().unwrap().to_string();
    insta::assert_snapshot!("escaping_archive_feedback", erin_head);
    insta::assert_snapshot!(
        "summary_table",
        grader::cohort::summary_table(&grader, &cohort)
    );
}

#[test]
fn overrides_win_and_survive_a_regrade() {
    let dir = tempfile::tempdir().unwrap();
    let cohort_dir = build_cohort(dir.path());
    let out = dir.path().join("grades");
    let grader = test_grader();
    let grade = |overrides: &Overrides| {
        grade_cohort(
            &grader,
            &cohort_dir,
            &CohortOptions::new(&out, overrides, 2),
        )
        .unwrap()
    };
    let before = grade(&Overrides::default());
    let bob_before = before.students.iter().find(|s| s.student == "bob").unwrap();
    // The rule refutes memory traffic for gelu on this profile; the instructor disagrees.
    let attack = bob_before.reports[2]
        .questions
        .iter()
        .find(|q| q.id == "plan.mechanism")
        .unwrap();
    assert!(attack.points < 3.0);

    let overrides_path = out.join("overrides.toml");
    std::fs::write(
        &overrides_path,
        "[[override]]\nstudent = \"bob\"\nexercise = 3\nquestion = \"plan.mechanism\"\npoints = 3\nreason = \"Right idea, other words\"\n\n[[override]]\nstudent = \"nobody\"\nexercise = 1\nquestion = \"ntq-1\"\npoints = 1\n",
    )
    .unwrap();
    for _ in 0..2 {
        let overrides = Overrides::load(&overrides_path).unwrap();
        let after = grade(&overrides);
        let bob = after.students.iter().find(|s| s.student == "bob").unwrap();
        let q = bob.reports[2]
            .questions
            .iter()
            .find(|q| q.id == "plan.mechanism")
            .unwrap();
        assert_eq!(q.points, 3.0);
        assert!(!q.needs_review);
        assert_eq!(
            q.overridden.as_ref().unwrap().autograded_points,
            attack.points
        );
        assert!(bob.flags().contains(&"override:3".to_string()));
        assert_eq!(
            after.warnings.last().unwrap(),
            "override for nobody matches no student in the cohort"
        );
        let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
        assert!(
            csv.lines()
                .any(|l| l.starts_with("bob,") && l.contains("override:3")),
            "{csv}"
        );
    }
}

#[test]
fn a_malformed_overrides_file_names_its_line() {
    let err = Overrides::parse(
        "[[override]]\nstudent = \"bob\"\nexercise = \"three\"\n",
        "overrides.toml",
    )
    .unwrap_err();
    assert!(err.0.starts_with("overrides.toml:3:"), "{}", err.0);
}

#[test]
fn names_that_share_a_file_name_get_distinct_feedback_pages() {
    let dir = tempfile::tempdir().unwrap();
    let cohort_dir = dir.path().join("cohort");
    for name in ["a b", "a_b", "Åsa"] {
        let mut files = BTreeMap::new();
        files.insert(
            "exercise-1/answers.toml".to_string(),
            PERFECT_EX1.to_string(),
        );
        write_tree(&cohort_dir.join(name), &files);
    }
    let out = dir.path().join("grades");
    let cohort = grade_cohort(
        &grader(),
        &cohort_dir,
        &CohortOptions::new(&out, &Overrides::default(), 1),
    )
    .unwrap();
    let pages: Vec<&str> = cohort
        .students
        .iter()
        .map(|s| s.feedback_file.as_str())
        .collect();
    assert_eq!(pages, ["a_b.md", "a_b-2.md", "Åsa.md"]);
    // (They carry no learner.toml, which is flagged: not what this test is about.)
    assert!(
        cohort.students.iter().all(|s| s
            .problems
            .iter()
            .all(|p| p.kind != grader::ProblemKind::DuplicateName)),
        "distinct names are not duplicates"
    );
    for page in pages {
        assert!(out.join("feedback").join(page).is_file());
    }
}
