//! The budget line a row belongs to: the course's chapter "Reading a profile as a budget"
//! splits a step into matmuls, attention, activations and element-wise ops, and everything
//! else, and every row of a report says which of the four it is on.
//!
//! Instrumented code declares an op's line with its name, once ([`OpName::new`], e.g. the
//! `gpt2` crate's op list). A range opened by name alone (a `tracing` span of a model's own,
//! such as candle-transformers' `linear` or `rms-norm`, or a plain [`crate::op`]`("matmul")`)
//! gets its line from [`Line::of_undeclared`], the one mapping for names nobody declared.
//! Module rows and the step row are "everything else": their self time is the glue between
//! ops.

use serde::{Deserialize, Serialize};

/// One line of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    pub fn name(self) -> &'static str {
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
    /// their line where the ops are (`gpt2::ops::list`), and a second list here would drift.
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

/// An op's row name and its budget line, declared together by the code that opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpName {
    pub name: &'static str,
    /// `None`: given by name alone; its row's line is [`Line::of_undeclared`]'s.
    pub line: Option<Line>,
}

impl OpName {
    /// An op that says which line it is on.
    pub const fn new(name: &'static str, line: Line) -> OpName {
        OpName {
            name,
            line: Some(line),
        }
    }

    /// The line its row goes on.
    pub fn line(self) -> Line {
        self.line.unwrap_or_else(|| Line::of_undeclared(self.name))
    }
}

impl From<&'static str> for OpName {
    fn from(name: &'static str) -> OpName {
        OpName { name, line: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_line_wins_over_the_name() {
        assert_eq!(OpName::new("matmul", Line::Other).line(), Line::Other);
        assert_eq!(OpName::from("matmul").line(), Line::Matmuls);
    }

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
}
