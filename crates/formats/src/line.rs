//! The budget lines a profile's rows are on, and the chapter's illustrative step.
//!
//! The course's chapter "Reading a profile as a budget" splits a step into matmuls, attention,
//! activations and element-wise ops, and everything else; every row of a `report.json` says
//! which of the four it is on (`line`, by its short name). The table's long names
//! ([`Line::name`], [`NAMES`]) are the ones exercise 4's answers and `course bench budget` use.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One line of the budget; written by its short name (`matmuls`, `attention`, `activations`,
/// `other`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    Matmuls,
    Attention,
    Activations,
    Other,
}

impl Line {
    /// In the order the chapter's table lists them.
    pub const ALL: [Line; 4] = [
        Line::Matmuls,
        Line::Attention,
        Line::Activations,
        Line::Other,
    ];

    /// The name the chapter's table uses.
    pub const fn name(self) -> &'static str {
        match self {
            Line::Matmuls => "matmuls",
            Line::Attention => "attention",
            Line::Activations => "activations and elementwise",
            Line::Other => "everything else",
        }
    }

    /// The line of an op whose code gave only its name. Dashes count as underscores
    /// (candle-transformers names its spans `rms-norm`, `attn-rot`); any name with `gelu`,
    /// `silu` or `relu` in it is an activation, so a caller's own fused op lands there
    /// whatever it is called. It knows the generic names other code gives its spans, not the
    /// `gpt2` engine's own (`attn_qk`, `kv_cache`, `bias_add`, ...): those are declared with
    /// their line where the ops are (the engine's op list, `engine::ops::list`), and a second
    /// list here would drift.
    pub fn of_undeclared(name: &str) -> Line {
        let name = name.to_ascii_lowercase().replace('-', "_");
        match name.as_str() {
            "matmul" | "qmatmul" | "linear" | "lm_head" => Line::Matmuls,
            "attn_rot" | "softmax" => Line::Attention,
            "layer_norm" | "rms_norm" => Line::Activations,
            _ if ["gelu", "silu", "relu"].iter().any(|a| name.contains(a)) => Line::Activations,
            _ => Line::Other,
        }
    }
}

/// The four lines' table names, in the chapter's order.
pub const NAMES: [&str; 4] = [
    Line::ALL[0].name(),
    Line::ALL[1].name(),
    Line::ALL[2].name(),
    Line::ALL[3].name(),
];

/// The chapter's illustrative decode step, in ms per line, in the order of [`Line::ALL`]: a
/// 40 ms step of 22, 10, 6 and 2 ms. Round numbers, **not measured**: the book, exercise 4's
/// worked example and `course bench budget` show it.
pub const ILLUSTRATIVE_STEP_MS: [f64; 4] = [22.0, 10.0, 6.0, 2.0];

/// One line of the illustrative step, in ms.
pub fn illustrative_ms(line: Line) -> f64 {
    Line::ALL
        .iter()
        .position(|l| *l == line)
        .map_or(0.0, |i| ILLUSTRATIVE_STEP_MS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_names_map_once_here() {
        for (name, line) in [
            ("matmul", Line::Matmuls),
            ("linear", Line::Matmuls),
            ("lm_head", Line::Matmuls),
            ("softmax", Line::Attention),
            ("attn-rot", Line::Attention),
            ("qmatmul", Line::Matmuls),
            ("rms-norm", Line::Activations),
            ("layer_norm", Line::Activations),
            ("my_fused_bias_GELU", Line::Activations),
            ("silu", Line::Activations),
            ("embedding", Line::Other),
            ("mask", Line::Other),
            // The engine's own names are declared with their line, never mapped here.
            ("attn_qk", Line::Other),
            ("bias_add", Line::Other),
            ("mask_fill", Line::Other),
            ("attn_scores", Line::Other),
            ("ProfilerStep*", Line::Other),
        ] {
            assert_eq!(Line::of_undeclared(name), line, "{name}");
        }
    }

    #[test]
    fn lines_serialize_by_their_short_names() {
        let names: Vec<String> = Line::ALL
            .iter()
            .map(|l| serde_json::to_string(l).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "\"matmuls\"",
                "\"attention\"",
                "\"activations\"",
                "\"other\""
            ]
        );
        for l in Line::ALL {
            let back: Line = serde_json::from_str(&serde_json::to_string(&l).unwrap()).unwrap();
            assert_eq!(back, l);
        }
    }

    #[test]
    fn the_illustrative_step_is_forty_ms_on_the_lines_in_order() {
        assert_eq!(NAMES[2], "activations and elementwise");
        assert_eq!(illustrative_ms(Line::Matmuls), 22.0);
        assert_eq!(illustrative_ms(Line::Other), 2.0);
        assert_eq!(ILLUSTRATIVE_STEP_MS.iter().sum::<f64>(), 40.0);
    }
}
