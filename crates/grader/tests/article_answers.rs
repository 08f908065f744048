//! The article's four Check-yourself questions, graded in exercise 6 as written answers
//! (crates/grader/bank/check-yourself.toml, `article-*`), by their rubrics in
//! crates/grader/key/key.toml and the course's one rubric grader
//! (grader::question_types::rubric).
//!
//! For each question: the article's own answer key passes word for word, the same ideas in
//! other words pass, and lookalike wrong answers do not (the other tool or the other yes/no,
//! a negation, a list of keywords, the wrong mechanism). Each case's outcome and the grader's
//! reason are pinned in a snapshot, `article_answers__<question id>.snap`.
//!
//! The answer key below is quoted from the article the course grows from: Philip Kiely, "Check
//! yourself", in *Inference Engineering*, ch. 4, sec. 4.5.3. It is quoted here only, to test
//! that the grader accepts it; the bank's own model answers are in the course's words.

mod support;

use course_model::learner_id::LEARNER_FILE;
use course_model::quiz::QuestionKind;
use grader::key::ExerciseKey;
use grader::report::{Outcome, QuestionResult};
use grader::submission::Submission;
use grader::Grader;
use std::collections::BTreeMap;

/// The article's answer key, word for word (Kiely, *Inference Engineering*, ch. 4, sec. 4.5.3).
const ARTICLE_KEY: [(&str, &str); 4] = [
    (
        "article-double-traffic",
        "Benchmark. The question is about a whole-system figure under load, and no per-kernel data changes the answer.",
    ),
    (
        "article-slower-than-vllm",
        "Profile your code. You wrote the engine code, so the fix will be code, and you need per-op time to find where yours loses.",
    ),
    (
        "article-nsight-ttft",
        "No. Kiely's rule is that with a high-performance engine your workflow is configuration and benchmarking, and profiling is extraneous unless you plan to contribute kernel-level changes.",
    ),
    (
        "article-activations-first",
        "The matrix multiplies are doing the model's math and are already the target of years of kernel work, while the activations line is large relative to the little math it does, so it is the likelier sign of waste, e.g., excess memory reads a fused kernel can remove.",
    ),
];

/// Right answers in the course's words (the same ideas, other phrasing).
const PARAPHRASES: [(&str, [&str; 2]); 4] = [
    (
        "article-double-traffic",
        [
            "A benchmark: load the service at twice today's request rate and read the P90 TTFT against the target; a per-op profile cannot tell you how queues grow.",
            "I'd run a load test at the doubled traffic, since whether the target holds is an end-to-end number for the whole system, which kernel timings won't change.",
        ],
    ),
    (
        "article-slower-than-vllm",
        [
            "Start with a profiler on your own engine: the code is yours, so the fix will be a code change, and an op-by-op breakdown shows where it falls behind vLLM.",
            "Profile it. We wrote this engine, so whatever we fix will be in our code, and we need to see which ops take longer than vLLM's.",
        ],
    ),
    (
        "article-nsight-ttft",
        [
            "Not yet: vLLM is already fast, so tune its settings one at a time and benchmark each change; Nsight only pays off if you intend to change vLLM's kernels.",
            "No, configuration comes first: change one flag at a time and measure TTFT under load after each; profiling is for people who will rewrite its kernels.",
        ],
    ),
    (
        "article-activations-first",
        [
            "The matmuls already run close to what the hardware allows after years of library tuning, whereas the activations spend their time on hardly any math, which points to waste: extra passes over memory that fusing the ops would remove.",
            "Matrix multiplies are the model's real math and libraries have tuned them for years; the activation line is out of proportion to the little arithmetic it does, likely because each op reads and writes the whole tensor again, which one fused kernel avoids.",
        ],
    ),
];

/// Wrong answers that look right: (what makes it wrong, the answer).
const LOOKALIKES: [(&str, &[(&str, &str)]); 4] = [
    (
        "article-double-traffic",
        &[
            ("the other tool, one word", "Profile."),
            ("the other tool, in the question's words", "Profile the server under the doubled load to find which kernel breaks the P90 TTFT target."),
            ("the right tool denied", "Don't benchmark: the question is about a whole-system figure under load, so profile it."),
            ("the reason negated, one request instead of the load", "Benchmark it, though this is not about the whole system under load: one request at a time shows the P90."),
            ("today's P90 doubled instead of measured", "Benchmark one request at a time today and double its P90 TTFT to see whether the target still holds."),
            ("the right tool on the wrong object, kernel by kernel", "Benchmark the kernels one at a time to see which gets slower under load."),
            ("a list of keywords", "benchmark, whole system, under load, P90"),
        ],
    ),
    (
        "article-slower-than-vllm",
        &[
            ("the other tool, on the other engine", "Benchmark vLLM"),
            ("benchmark vLLM and copy its settings", "Benchmark vLLM at several request rates and copy the settings where it does best into your engine."),
            ("profile the other engine", "Profile vLLM to see which kernels make it fast, then call the same ones from your code."),
            ("the right tool denied", "Don't profile your code: you wrote it, but the fix is vLLM's configuration, so tune that."),
            ("give up the engine", "Switch to vLLM: your code will never catch up, so profiling it is wasted effort."),
            ("a list of keywords", "profile, own code, per-op"),
        ],
    ),
    (
        "article-nsight-ttft",
        &[
            ("yes, open Nsight", "Yes, open Nsight."),
            ("yes, profile first and tune after", "Yes: Nsight Systems shows where TTFT goes, so profile vLLM first and tune the configuration after."),
            ("\"no need\" for the right workflow", "No need for configuration or benchmarking; open Nsight Systems and profile the prefill kernels."),
            ("no, but the workflow negated", "No. Your workflow is not configuration and benchmarking; open Nsight and look at the kernels."),
            ("no, and nothing to tune", "No: benchmark vLLM once at its defaults and report that TTFT, since a fast engine leaves nothing to tune."),
            ("a list of keywords", "no, configuration, benchmark, kernels"),
        ],
    ),
    (
        "article-activations-first",
        &[
            ("the bigger line first", "The matmuls are bigger, so attack them first."),
            ("the matmuls first, a faster GEMM", "Attack the matmuls first: 22 ms is the largest line, and a faster GEMM saves the most."),
            ("launch overhead instead of excess memory reads", "The matmuls are already tuned, while the activations are many small kernels: their time is launch overhead, the fixed cost of each launch, which a fused kernel removes."),
            ("launch overhead, with the rest of the article's ideas", "The activations do little math for their time: in this small-batch decode step it is launch overhead, each separate kernel's fixed cost, which a fused kernel can mostly remove. The matrix multiplies are bound by reading their weights, which has to happen, and they already run close to that ceiling after years of library tuning, so little is left to gain."),
            ("every idea negated", "The matrix multiplies are not yet tuned, and the activations are no sign of waste: fusing would not remove any memory reads."),
            ("a list of keywords", "memory reads, fusion, already tuned, little math"),
        ],
    ),
];

fn real_grader() -> Grader {
    Grader::load(&support::repo_root(), None).unwrap_or_else(|e| panic!("{e}"))
}

fn toml_text(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `answer` to question `id`, graded as `course check 6` grades it (the learner's
/// answers.toml and learner.toml; the other questions left unanswered).
fn grade(grader: &Grader, id: &str, answer: &str) -> QuestionResult {
    let files: BTreeMap<String, String> = [
        (
            "exercise-6/answers.toml".to_string(),
            format!("[quiz]\n{id} = {}\n", toml_text(answer)),
        ),
        (LEARNER_FILE.to_string(), "id = \"article\"\n".to_string()),
    ]
    .into();
    let report = grader.grade_exercise(&Submission::from_texts("article", files), 6);
    report
        .questions
        .into_iter()
        .find(|q| q.id == id)
        .unwrap_or_else(|| panic!("exercise 6 does not ask {id}"))
}

fn line(case: &str, q: &QuestionResult) -> String {
    format!(
        "{case}: {} {}/{}{}: {}\n",
        q.outcome.label(),
        q.points,
        q.max_points,
        if q.needs_review { " (review)" } else { "" },
        q.reason
    )
}

fn right_without_review(q: &QuestionResult) -> bool {
    q.outcome == Outcome::Right && q.points == q.max_points && !q.needs_review
}

#[test]
fn each_article_answer_passes_verbatim_in_other_words_and_lookalikes_do_not() {
    let grader = real_grader();
    for (id, key) in ARTICLE_KEY {
        let mut out = String::new();
        let graded = grade(&grader, id, key);
        assert!(
            right_without_review(&graded),
            "{id}: the article's answer must pass verbatim: {}",
            line("key", &graded)
        );
        out.push_str(&line("the article's answer, verbatim", &graded));
        let paraphrases = PARAPHRASES.iter().find(|(p, _)| *p == id).unwrap().1;
        for (n, text) in paraphrases.iter().enumerate() {
            let graded = grade(&grader, id, text);
            let case = format!("the same ideas in other words ({})", n + 1);
            assert!(
                right_without_review(&graded),
                "{id}: {}",
                line(&case, &graded)
            );
            out.push_str(&line(&case, &graded));
        }
        let lookalikes = LOOKALIKES.iter().find(|(p, _)| *p == id).unwrap().1;
        assert!(lookalikes.len() >= 3, "{id}: at least three lookalikes");
        for (case, text) in lookalikes {
            let graded = grade(&grader, id, text);
            // Not accepted: no points, or some points with the answer sent to the instructor.
            assert!(
                graded.outcome != Outcome::Right
                    && graded.points < graded.max_points
                    && (graded.points == 0.0 || graded.needs_review),
                "{id}: a lookalike must not pass: {}",
                line(case, &graded)
            );
            out.push_str(&line(&format!("wrong, {case}"), &graded));
        }
        insta::assert_snapshot!(id, out);
    }
}

#[test]
fn the_other_tool_a_denied_verdict_and_keyword_lists_earn_nothing() {
    // The lookalikes that reverse the decision or only list words get no points at all; the
    // rest lose ideas and go to the instructor (pinned in the snapshots).
    let grader = real_grader();
    let zero = [
        ("article-double-traffic", "the other tool, one word"),
        (
            "article-double-traffic",
            "the other tool, in the question's words",
        ),
        ("article-double-traffic", "the right tool denied"),
        ("article-double-traffic", "a list of keywords"),
        (
            "article-slower-than-vllm",
            "the other tool, on the other engine",
        ),
        ("article-slower-than-vllm", "profile the other engine"),
        ("article-slower-than-vllm", "the right tool denied"),
        ("article-slower-than-vllm", "a list of keywords"),
        ("article-nsight-ttft", "yes, open Nsight"),
        ("article-nsight-ttft", "\"no need\" for the right workflow"),
        ("article-nsight-ttft", "a list of keywords"),
        ("article-activations-first", "the bigger line first"),
        ("article-activations-first", "every idea negated"),
        ("article-activations-first", "a list of keywords"),
    ];
    for (id, case) in zero {
        let lookalikes = LOOKALIKES.iter().find(|(p, _)| *p == id).unwrap().1;
        let text = lookalikes.iter().find(|(c, _)| *c == case).unwrap().1;
        let graded = grade(&grader, id, text);
        assert_eq!(graded.points, 0.0, "{id}: {}", line(case, &graded));
    }
    // The wrong mechanism for question 4 never passes without an instructor's review.
    for case in [
        "launch overhead instead of excess memory reads",
        "launch overhead, with the rest of the article's ideas",
    ] {
        let text = LOOKALIKES[3].1.iter().find(|(c, _)| *c == case).unwrap().1;
        let graded = grade(&grader, "article-activations-first", text);
        assert!(
            graded.needs_review && graded.reason.contains("\"launch overhead\""),
            "{}",
            line(case, &graded)
        );
    }
}

#[test]
fn everyone_is_asked_the_four_after_their_draw_and_the_banks_own_answers_pass() {
    let grader = real_grader();
    let exercise = grader.manifest.exercise(6).unwrap();
    let file = grader.bank.file(&exercise.quizzes[0]).unwrap();
    let ids: Vec<&str> = ARTICLE_KEY.iter().map(|(id, _)| *id).collect();
    for learner in ["alice", "bob", "carol"] {
        let asked = course_model::quiz_variant::asked(exercise, file, Some(learner)).unwrap();
        let tail: Vec<&str> = asked[asked.len() - 4..]
            .iter()
            .map(|q| q.id.as_str())
            .collect();
        assert_eq!(tail, ids, "{learner}");
        assert_eq!(asked.len(), exercise.draw + 4);
    }
    for id in ids {
        let question = file.question(id).unwrap();
        let QuestionKind::ShortAnswer { answer, .. } = &question.kind else {
            panic!("{id} is a written answer");
        };
        let Some(ExerciseKey::Quiz(key)) = grader.key.exercise(6) else {
            panic!("exercise 6's key is a quiz key");
        };
        assert!(key.rubrics.contains_key(id), "{id} has a rubric");
        // The bank's model answer passes, and so does the rubric on it alone (no exact match).
        assert!(right_without_review(&grade(&grader, id, answer)), "{id}");
        let rubric = &key.rubrics[id];
        let by_ideas = rubric.grade(answer, &|_| None);
        assert!(
            by_ideas.fraction == 1.0 && !by_ideas.needs_review,
            "{id}: {by_ideas:?}"
        );
    }
}

#[test]
fn the_four_prompts_are_the_check_yourself_pages_questions() {
    // The one graded text the book prints: each prompt, as the page asks it in bold.
    let root = support::repo_root();
    let page = std::fs::read_to_string(root.join("book/src/check-yourself.md")).unwrap();
    // As the page renders: bold marks gone, `{{#given 40 ms}}` shown as `40 ms`.
    let flat = |s: &str| {
        s.replace("**", "")
            .replace("{{#given ", "")
            .replace("}}", "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let page = flat(&page);
    let grader = real_grader();
    let file = grader.bank.file("check-yourself.toml").unwrap();
    for (id, _) in ARTICLE_KEY {
        let prompt = flat(&file.question(id).unwrap().prompt);
        assert!(
            page.contains(&prompt),
            "{id}'s prompt is not on the page: {prompt}"
        );
    }
}

#[test]
fn the_practice_quizs_right_answers_to_the_same_questions_pass_the_graded_rubrics() {
    // The Check-yourself page's practice quiz asks the same four questions (multiple choice,
    // then a written answer): its right answers must be right by the rubrics too, so the page
    // and the grader teach one mechanism.
    let grader = real_grader();
    let path = course_model::quiz::book_quiz_dir(&support::repo_root()).join("check-yourself.toml");
    let practice = course_model::quiz::QuizFile::parse(
        &std::fs::read_to_string(&path).unwrap(),
        "check-yourself.toml",
        &path.display().to_string(),
    )
    .unwrap();
    let pairs = [
        ("cy-double-traffic", "article-double-traffic"),
        ("cy-slower-than-vllm", "article-slower-than-vllm"),
        ("cy-nsight-ttft", "article-nsight-ttft"),
        ("cy-6ms-before-22ms", "article-activations-first"),
    ];
    for (practice_id, graded_id) in pairs {
        let question = practice.question(practice_id).unwrap();
        let answers: Vec<String> = match &question.kind {
            QuestionKind::MultipleChoice { answers, .. } => answers.clone(),
            QuestionKind::ShortAnswer {
                answer,
                alternatives,
            } => std::iter::once(answer)
                .chain(alternatives)
                .cloned()
                .collect(),
            QuestionKind::Unsupported(kind) => panic!("{practice_id} is a {kind} question"),
        };
        for answer in answers {
            let graded = grade(&grader, graded_id, &answer);
            assert!(
                right_without_review(&graded),
                "{practice_id}'s answer, graded as {graded_id}: {}",
                line("practice", &graded)
            );
        }
    }
}
