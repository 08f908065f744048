//! Speed benchmark (not a test): generate a cohort of students with every exercise answered,
//! grade it as `course grade` does, and print the time.
//!
//! cargo run -p grader --example cohort_bench -- [STUDENTS] [THREADS]
//!
//! Students alternate between folders (80%), .zip (10%) and .tar.gz (10%) submissions, with
//! answers varied so that reports differ. The goal is under 2 s for 500 students on 2 cores.

#[path = "../tests/support/mod.rs"]
mod support;

use grader::cohort::{grade_cohort, CohortOptions};
use grader::overrides::Overrides;
use std::io::Write;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let students: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(500);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let grader = support::grader();
    let dir = tempfile::tempdir().expect("temporary folder");
    let cohort = dir.path().join("cohort");
    let started = Instant::now();
    for i in 0..students {
        let mut files = support::perfect_files();
        // Vary the answers: every third student gets exercise 1 partly wrong, every fifth an
        // empty exercise 4, every seventh a different plan.
        if i % 3 == 0 {
            files.insert(
                "exercise-1/answers.toml".into(),
                "[quiz]\nntq-1 = \"Profile\"\nntq-2 = \"Profile\"\n".into(),
            );
        }
        if i % 5 == 0 {
            files.insert(
                "exercise-4/answers.toml".into(),
                "[illustrative]\nsaving_ms = \"\"\n".into(),
            );
        }
        if i % 7 == 0 {
            files.insert(
                "exercise-3/answers.toml".into(),
                support::perfect_ex3_cpu().replace("attack = \"lm_head\"", "attack = \"matmul\""),
            );
        }
        let name = format!("student-{i:04}");
        match i % 10 {
            8 => write_zip(&cohort.join(format!("{name}.zip")), &files),
            9 => write_tar_gz(&cohort.join(format!("{name}.tar.gz")), &files),
            _ => support::write_tree(&cohort.join(&name), &files),
        }
    }
    eprintln!("generated {students} students in {:.2?}", started.elapsed());
    let out = dir.path().join("grades");
    let started = Instant::now();
    let graded = grade_cohort(
        &grader,
        &cohort,
        &CohortOptions::new(&out, &Overrides::default(), threads),
    )
    .expect("grading");
    let elapsed = started.elapsed();
    let passed: usize = graded.students.iter().map(|s| s.passed()).sum();
    println!(
        "graded {} students ({} exercise passes) with {threads} threads in {:.3} s, gradebook and feedback written",
        graded.students.len(),
        passed,
        elapsed.as_secs_f64()
    );
}

fn write_zip(path: &std::path::Path, files: &std::collections::BTreeMap<String, String>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (rel, text) in files {
        zip.start_file(
            format!("exercises/{rel}"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
}

fn write_tar_gz(path: &std::path::Path, files: &std::collections::BTreeMap<String, String>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::default(),
    );
    let mut tar = tar::Builder::new(gz);
    for (rel, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("exercises/{rel}"), text.as_bytes())
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
}
