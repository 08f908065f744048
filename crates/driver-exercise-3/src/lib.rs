//! The program around exercise 3's TODOs: everything `exercises/exercise-3` and
//! `solutions/exercise-3` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
