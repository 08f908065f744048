//! The program around exercise 4's TODOs: everything `exercises/exercise-4` and
//! `solutions/exercise-4` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
