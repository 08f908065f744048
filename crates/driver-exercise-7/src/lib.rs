//! The program around exercise 7's TODOs: everything `exercises/exercise-7` and
//! `solutions/exercise-7` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
