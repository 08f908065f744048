//! The program around exercise 2's TODOs: everything `exercises/exercise-2` and
//! `solutions/exercise-2` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
