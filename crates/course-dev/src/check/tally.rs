//! The dev check's score: one `ok` or `FAIL` line per check as it finishes (a failure followed by
//! why, and the end of the output that shows it), then `N passed, M failed`.

use std::io::Write;
use std::process::ExitCode;

/// Lines of a failed step's output shown under its FAIL line: enough for a compiler error or a
/// failing test, few enough that seven failures still read.
pub const SHOWN_LINES: usize = 40;

pub struct Tally<W: Write> {
    out: W,
    pub passed: usize,
    pub failed: usize,
}

impl<W: Write> Tally<W> {
    pub fn new(out: W) -> Tally<W> {
        Tally {
            out,
            passed: 0,
            failed: 0,
        }
    }

    /// Counts one check: passed when `outcome` is `Ok`, else failed with the reason it holds.
    pub fn record(&mut self, what: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.pass(what),
            Err(why) => self.fail(what, &why),
        }
    }

    pub fn pass(&mut self, what: &str) {
        self.passed += 1;
        self.say(&format!("ok   {what}"));
    }

    pub fn fail(&mut self, what: &str, why: &str) {
        self.failed += 1;
        let mut text = format!("FAIL {what}");
        for line in why.lines() {
            text.push_str("\n     ");
            text.push_str(line);
        }
        self.say(&text);
    }

    /// A line that is no check (where the temporary roots are kept).
    pub fn note(&mut self, text: &str) {
        self.say(text);
    }

    fn say(&mut self, text: &str) {
        // The score goes to stdout as it happens; a closed pipe must not stop the checks.
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    /// Prints `N passed, M failed`; success only when nothing failed (and something ran).
    pub fn finish(mut self) -> ExitCode {
        let summary = summary(self.passed, self.failed);
        self.say(&summary);
        if self.failed == 0 && self.passed > 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }

    #[cfg(test)]
    pub fn into_inner(self) -> W {
        self.out
    }
}

pub fn summary(passed: usize, failed: usize) -> String {
    format!("{passed} passed, {failed} failed")
}

/// The last `lines` lines of a step's output, each behind `| `, so it reads as quoted under
/// its FAIL line; a note when there was none.
pub fn excerpt(output: &str, lines: usize) -> String {
    let all: Vec<&str> = output.lines().collect();
    if all.iter().all(|l| l.trim().is_empty()) {
        return "(it printed nothing)".to_string();
    }
    let start = all.len().saturating_sub(lines);
    let mut text = String::new();
    if start > 0 {
        text.push_str(&format!("| ... ({start} lines above)\n"));
    }
    for line in &all[start..] {
        text.push_str("| ");
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// Each of `texts` that `output` does not contain, as the lines that say so; empty when all are there.
pub fn missing(output: &str, texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .filter(|t| !output.contains(t.as_str()))
        .map(|t| format!("missing from the output: {t}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_is_one_line_and_the_summary_counts_them() {
        let mut tally = Tally::new(Vec::new());
        tally.pass("exercise-1 has TODOs");
        tally.record(
            "solution 2: course check 2 passes",
            Err("missing from the output: Exercise 2 passes\n| error: boom".into()),
        );
        tally.record("exercise-2 --help", Ok(()));
        assert_eq!((tally.passed, tally.failed), (2, 1));
        let text = String::from_utf8(tally.into_inner()).unwrap();
        assert_eq!(
            text,
            "ok   exercise-1 has TODOs\n\
             FAIL solution 2: course check 2 passes\n     missing from the output: Exercise 2 passes\n     | error: boom\n\
             ok   exercise-2 --help\n"
        );
        assert_eq!(summary(38, 0), "38 passed, 0 failed");
    }

    #[test]
    fn a_run_with_a_failure_or_with_nothing_checked_fails() {
        let mut failing = Tally::new(Vec::new());
        failing.pass("a");
        failing.fail("b", "why");
        assert_eq!(failing.finish(), ExitCode::FAILURE);
        assert_eq!(
            Tally::new(Vec::new()).finish(),
            ExitCode::FAILURE,
            "nothing ran, nothing proved"
        );
        let mut passing = Tally::new(Vec::new());
        passing.pass("a");
        assert_eq!(passing.finish(), ExitCode::SUCCESS);
    }

    #[test]
    fn an_excerpt_is_the_end_of_the_output_quoted() {
        let output: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let text = excerpt(&output, 3);
        assert_eq!(
            text,
            "| ... (47 lines above)\n| line 48\n| line 49\n| line 50\n"
        );
        assert_eq!(excerpt("only\n", 40), "| only\n");
        assert_eq!(excerpt("\n \n", 40), "(it printed nothing)");
    }

    #[test]
    fn missing_texts_are_each_named() {
        let texts = vec!["tests fail".to_string(), "course hint 2".to_string()];
        assert!(missing("==> exercise-2's tests fail: ... `course hint 2`", &texts).is_empty());
        assert_eq!(
            missing("==> Not passed yet.", &texts),
            [
                "missing from the output: tests fail",
                "missing from the output: course hint 2"
            ]
        );
    }
}
