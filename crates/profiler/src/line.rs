//! The budget line a row belongs to: the course's chapter "Reading a profile as a budget"
//! splits a step into matmuls, attention, activations and element-wise ops, and everything
//! else, and every row of a report says which of the four it is on.
//!
//! Instrumented code declares an op's line with its name, once ([`OpName::new`], e.g. the
//! engine's op list, `engine::ops::list`). A range opened by name alone (a `tracing` span of a model's own,
//! such as candle-transformers' `linear` or `rms-norm`, or a plain [`crate::op`]`("matmul")`)
//! gets its line from [`Line::of_undeclared`], the one mapping for names nobody declared.
//! Module rows and the step row are "everything else": their self time is the glue between
//! ops.

/// One line of the budget: the file's vocabulary, defined with report.json's types.
pub use formats::line::Line;

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
}
