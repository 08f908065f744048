//! The program around exercise 8's TODOs: everything `exercises/exercise-8` and
//! `solutions/exercise-8` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
