//! The one schema check every reader of a file runs first, and its migration error.
//!
//! Each file declares a [`FileSchema`]: its current identifier, the identifiers it replaced
//! (each with what the old files lack), and the command that writes a current one. A reader
//! looks at `"schema"` before anything else, so an old file gets this message rather than a
//! parse error about a field that moved.

/// A file's schema identifiers and the way out for an old file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSchema {
    /// The file's usual name, e.g. `report.json`.
    pub file: &'static str,
    /// The identifier a current file carries in `"schema"`.
    pub current: &'static str,
    /// Earlier identifiers, oldest first, each with what a file of that version lacks
    /// ("from before …").
    pub old: &'static [(&'static str, &'static str)],
    /// The sentence that tells the reader how to write a current file.
    pub rerun: &'static str,
}

/// Why a file's `"schema"` is not the one this version reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// An identifier this file used to have: what it lacks is known.
    #[error("{path} has schema `{found}` ({lacks}), but this version reads `{expected}`. {rerun}")]
    Old {
        path: String,
        found: String,
        lacks: &'static str,
        expected: &'static str,
        rerun: &'static str,
    },
    /// Anything else: another file, a newer version, or no `"schema"` at all.
    #[error(
        "{path} has schema `{found}`, but this version reads `{expected}`; is it a {file}? {rerun}"
    )]
    Foreign {
        path: String,
        found: String,
        file: &'static str,
        expected: &'static str,
        rerun: &'static str,
    },
}

impl FileSchema {
    /// What a file of `schema` lacks, when it is one of the versions this one replaced.
    pub fn lacks(&self, schema: &str) -> Option<&'static str> {
        self.old
            .iter()
            .find(|(old, _)| *old == schema)
            .map(|(_, lacks)| *lacks)
    }

    /// Whether `found` (the file's `"schema"`, `None` when it has none) is the current
    /// version; the error names `path`, says what an old version lacks, and how to re-run.
    pub fn check(&self, found: Option<&str>, path: &str) -> Result<(), SchemaError> {
        match found {
            Some(found) if found == self.current => Ok(()),
            Some(found) => match self.lacks(found) {
                Some(lacks) => Err(SchemaError::Old {
                    path: path.to_string(),
                    found: found.to_string(),
                    lacks,
                    expected: self.current,
                    rerun: self.rerun,
                }),
                None => Err(self.foreign(found, path)),
            },
            None => Err(self.foreign("(none)", path)),
        }
    }

    /// Check the `"schema"` of a parsed JSON document.
    pub fn check_value(&self, value: &serde_json::Value, path: &str) -> Result<(), SchemaError> {
        self.check(value.get("schema").and_then(|s| s.as_str()), path)
    }

    fn foreign(&self, found: &str, path: &str) -> SchemaError {
        SchemaError::Foreign {
            path: path.to_string(),
            found: found.to_string(),
            file: self.file,
            expected: self.current,
            rerun: self.rerun,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: FileSchema = FileSchema {
        file: "thing.json",
        current: "thing/3",
        old: &[("thing/1", "from before A"), ("thing/2", "from before B")],
        rerun: "Run `make thing` again.",
    };

    #[test]
    fn the_current_version_passes_and_old_ones_say_what_they_lack() {
        assert_eq!(FILE.check(Some("thing/3"), "a/thing.json"), Ok(()));
        let old = FILE.check(Some("thing/2"), "a/thing.json").unwrap_err();
        assert_eq!(
            old.to_string(),
            "a/thing.json has schema `thing/2` (from before B), but this version reads `thing/3`. \
             Run `make thing` again."
        );
        let other = FILE
            .check_value(&serde_json::json!({"schema": "bench-report/3"}), "x.json")
            .unwrap_err()
            .to_string();
        assert!(
            other.contains("x.json") && other.contains("is it a thing.json?"),
            "{other}"
        );
        let none = FILE
            .check_value(&serde_json::json!({}), "x.json")
            .unwrap_err();
        assert!(none.to_string().contains("`(none)`"), "{none}");
    }
}
