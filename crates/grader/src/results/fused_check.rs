//! Exercise 5's `results/fused_check.json`: how far each of the learner's fused ops (stage 1,
//! the fusion; stage 2, the kernel fix, once written) is from the unfused ops. Schema
//! `fused-check/2`, written by the exercise:
//! `{"schema": "fused-check/2", "max_abs_error": 4.8e-7, "limit": 1e-5, "shape": [64, 3072],
//! "device": "cpu", "stages": [{"op": "fused_bias_gelu", "max_abs_error": 4.8e-7}, …]}`
//! (`schema`, `max_abs_error` and the stages' ops and errors are read).

use super::{parse_json, tampered};
use crate::problem::Problem;
use serde::Deserialize;

pub const SCHEMA: &str = "fused-check/2";

#[derive(Debug, Clone, Deserialize)]
pub struct FusedCheck {
    pub schema: String,
    /// The worst of the stages' errors.
    pub max_abs_error: f64,
    #[serde(default)]
    pub stages: Vec<StageCheck>,
}

/// One op's check.
#[derive(Debug, Clone, Deserialize)]
pub struct StageCheck {
    pub op: String,
    pub max_abs_error: f64,
}

impl FusedCheck {
    pub fn parse(text: &str, file: &str) -> Result<FusedCheck, Problem> {
        let regenerate = "regenerate it with `course run 5`; never edit results by hand";
        let check: FusedCheck =
            parse_json(text, file, "fused-op check (fused-check/2)", regenerate)?;
        if check.schema == "fused-check/1" {
            return Err(tampered(file, "this check is fused-check/1, from before the exercise's two stages; the grader reads fused-check/2".to_string(), "run the exercise again (`course run 5`)"));
        }
        if check.schema != SCHEMA {
            return Err(tampered(
                file,
                format!(
                    "the schema is {:?}, but the grader reads {SCHEMA:?}",
                    check.schema
                ),
                regenerate,
            ));
        }
        let errors = std::iter::once(check.max_abs_error)
            .chain(check.stages.iter().map(|s| s.max_abs_error));
        if errors.clone().any(|e| !e.is_finite() || e < 0.0) {
            return Err(tampered(
                file,
                "an error is negative or not a number, which no comparison can produce".to_string(),
                regenerate,
            ));
        }
        if check
            .stages
            .iter()
            .any(|s| s.max_abs_error > check.max_abs_error)
        {
            return Err(tampered(
                file,
                format!(
                    "max_abs_error {} is below a stage's own error",
                    check.max_abs_error
                ),
                regenerate,
            ));
        }
        Ok(check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_stages_and_refuses_the_old_schema_and_impossible_errors() {
        let good = r#"{"schema": "fused-check/2", "max_abs_error": 4e-7, "stages": [{"op": "fused_bias_gelu", "max_abs_error": 3e-7}, {"op": "fused_bias_gelu_fast", "max_abs_error": 4e-7}]}"#;
        let check = FusedCheck::parse(good, "fused_check.json").unwrap();
        assert_eq!(check.stages.len(), 2);
        assert!(
            FusedCheck::parse(&good.replace("fused-check/2", "fused-check/1"), "f.json")
                .unwrap_err()
                .to_string()
                .contains("two stages")
        );
        assert!(FusedCheck::parse(
            &good.replace(
                "\"max_abs_error\": 4e-7, \"stages\"",
                "\"max_abs_error\": 1e-8, \"stages\""
            ),
            "f.json"
        )
        .is_err());
        assert!(FusedCheck::parse(&good.replace("3e-7", "-1"), "f.json").is_err());
    }
}
