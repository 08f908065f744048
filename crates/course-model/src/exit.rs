//! The exit-code rule, the same wherever a learner or an autograder runs the course (`course
//! check`, `course grade`, every exercise's program):
//!
//! - **0**: passed, or (where there is nothing to pass) done;
//! - **1**: not passed: the learner's part is not done or not right yet (a failing check, a
//!   `todo!()` left in their code, a panic in their own code);
//! - **2**: the course itself could not run: a missing toolchain, a missing or corrupt file,
//!   a bad argument, a bug (a panic outside the learner's code).
//!
//! An autograder reads 0 and 1 as a grade and 2 as "do not record a grade: look at the log".
//! [`guard`] applies the rule to a `main`: errors become 2, and a panic becomes 1 or 2 by
//! where it was raised (a panic's own status, 101, never leaves the program).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// How a run of the course ended, as its exit status says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: passed, or done.
    Passed,
    /// 1: not passed (yet).
    NotPassed,
    /// 2: the course could not run.
    CouldNotRun,
}

impl Exit {
    /// The status the process exits with.
    pub fn code(self) -> u8 {
        match self {
            Exit::Passed => 0,
            Exit::NotPassed => 1,
            Exit::CouldNotRun => 2,
        }
    }

    /// The exit for a passed/not passed verdict.
    pub fn passed_if(passed: bool) -> Exit {
        if passed {
            Exit::Passed
        } else {
            Exit::NotPassed
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// An error that means "not passed", not "could not run": the learner has work left (returned
/// by a program whose run found the learner's part unfinished). [`guard`] exits 1 for it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotDone(pub String);

/// The text `--help` ends with: the rule, for the commands a learner or an autograder runs.
pub const EXIT_STATUS_HELP: &str = "Exit status: 0 passed (or done); 1 not passed yet \
    (what to fix is printed above); 2 the course itself could not run (a missing toolchain, a \
    missing or corrupt file, a bad argument, a bug): no grade should be recorded from that run.";

/// Run `main`, map its outcome to the rule and print an error as every program of the course
/// does (`error: ` with each cause after a colon). `learner_src`, for an exercise's program, is
/// the folder of the learner's own code: a panic raised there (a `todo!()` left, an index out
/// of bounds in their function) is "not passed" (1); any other panic is the course's bug (2).
/// Panics on other threads that `main` joins reach here the same way.
pub fn guard<E: Into<ExitCode>>(
    learner_src: Option<&Path>,
    main: impl FnOnce() -> anyhow::Result<E>,
) -> ExitCode {
    let raised_at: Arc<Mutex<Option<String>>> = Arc::default();
    let previous = panic::take_hook();
    let record = Arc::clone(&raised_at);
    // The default hook still prints the panic's message (the walk and the learner read it);
    // this one also remembers where it was raised.
    panic::set_hook(Box::new(move |info| {
        // The last panic's: one caught and recorded inside (a cohort's entry) is not main's.
        if let (Some(location), Ok(mut at)) = (info.location(), record.lock()) {
            *at = Some(location.file().to_string());
        }
        previous(info);
    }));
    let outcome = panic::catch_unwind(AssertUnwindSafe(main));
    let exit = match outcome {
        Ok(Ok(code)) => return code.into(),
        Ok(Err(e)) => {
            eprintln!("{}", error_line(&e));
            if e.downcast_ref::<NotDone>().is_some() {
                Exit::NotPassed
            } else {
                Exit::CouldNotRun
            }
        }
        Err(payload) => {
            let file = raised_at.lock().ok().and_then(|at| at.clone());
            let message = panic_message(payload.as_ref());
            if is_learners_panic(learner_src, file.as_deref(), &message) {
                eprintln!("==> your code stopped (above): not passed yet; fix it and run again.");
                Exit::NotPassed
            } else {
                eprintln!(
                    "error: the course itself failed (a bug{}): {message}. Please report it with \
                     the output above.",
                    file.map(|f| format!(" in {f}")).unwrap_or_default()
                );
                Exit::CouldNotRun
            }
        }
    };
    exit.into()
}

/// How every program of the course prints an error: `error: ` with each cause after a colon.
pub fn error_line(e: &anyhow::Error) -> String {
    format!("error: {e:#}")
}

/// The text a panic was raised with.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Whether a panic raised in `file` with `message` is the learner's: a `todo!()` anywhere, or
/// any panic raised in a file under `learner_src`. `file` is as the compiler saw it: relative to
/// the workspace for a workspace member (`exercises/exercise-4/src/budget.rs`), else absolute.
fn is_learners_panic(learner_src: Option<&Path>, file: Option<&str>, message: &str) -> bool {
    let Some(src) = learner_src else {
        return false;
    };
    if message.starts_with("not yet implemented") {
        return true;
    }
    let Some(file) = file.map(Path::new) else {
        return false;
    };
    if file.is_absolute() {
        return file.starts_with(src);
    }
    // A relative path: the learner's when its folder part (up to and with `src`) ends `src`.
    let mut folder = file.to_path_buf();
    while folder.file_name().is_some_and(|n| n != "src") {
        if !folder.pop() {
            return false;
        }
    }
    !folder.as_os_str().is_empty() && src.ends_with(&folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_rule() {
        assert_eq!(
            [Exit::Passed, Exit::NotPassed, Exit::CouldNotRun].map(Exit::code),
            [0, 1, 2]
        );
        assert_eq!(Exit::passed_if(true), Exit::Passed);
        assert_eq!(Exit::passed_if(false), Exit::NotPassed);
    }

    #[test]
    fn a_panic_is_the_learner_s_only_in_their_code_or_a_todo() {
        let src = Path::new("/home/a/course/exercises/exercise-4/src");
        let learner = Some(src);
        // A workspace member's panic location is relative to the workspace.
        assert!(is_learners_panic(
            learner,
            Some("exercises/exercise-4/src/budget.rs"),
            "index out of bounds"
        ));
        assert!(is_learners_panic(
            learner,
            Some("/home/a/course/exercises/exercise-4/src/main.rs"),
            "boom"
        ));
        // Another crate's panic is the course's, unless it is a todo!() (reached through a
        // callback of the learner's, say).
        assert!(!is_learners_panic(
            learner,
            Some("crates/grader/src/report.rs"),
            "boom"
        ));
        assert!(!is_learners_panic(
            learner,
            Some("exercises/exercise-3/src/main.rs"),
            "boom"
        ));
        assert!(is_learners_panic(
            learner,
            Some("crates/x/src/lib.rs"),
            "not yet implemented: share_pct"
        ));
        // Without learner code (`course`), every panic is a bug.
        assert!(!is_learners_panic(
            None,
            Some("exercises/exercise-4/src/budget.rs"),
            "not yet implemented"
        ));
    }
}
