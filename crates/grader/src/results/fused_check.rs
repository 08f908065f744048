//! Exercise 5's `results/fused_check.json`: how far the learner's fused bias-add + GELU is from
//! the unfused ops. Schema `fused-check/1`, written by the exercise:
//! `{"schema": "fused-check/1", "max_abs_error": 3.1e-7, "shape": [8, 3072], "device": "cpu"}`
//! (only `schema` and `max_abs_error` are read).

use super::{parse_json, tampered};
use crate::problem::Problem;
use serde::Deserialize;

pub const SCHEMA: &str = "fused-check/1";

#[derive(Debug, Clone, Deserialize)]
pub struct FusedCheck {
    pub schema: String,
    pub max_abs_error: f64,
}

impl FusedCheck {
    pub fn parse(text: &str, file: &str) -> Result<FusedCheck, Problem> {
        let regenerate = "regenerate it with `course run 5`; never edit results by hand";
        let check: FusedCheck = parse_json(text, file, "fused-op check (fused-check/1)", regenerate)?;
        if check.schema != SCHEMA {
            return Err(tampered(file, format!("the schema is {:?}, but the grader reads {SCHEMA:?}", check.schema), regenerate));
        }
        if !check.max_abs_error.is_finite() || check.max_abs_error < 0.0 {
            return Err(tampered(file, format!("max_abs_error is {}, which no comparison can produce", check.max_abs_error), regenerate));
        }
        Ok(check)
    }
}
