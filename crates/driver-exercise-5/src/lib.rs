//! The program around exercise 5's TODOs: everything `exercises/exercise-5` and
//! `solutions/exercise-5` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
