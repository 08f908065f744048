//! A tree of files held in memory: what `course grade --run-tests` reads of a learner's
//! sources, from a folder (crate::sources) or an archive (crate::archive), under the caps.

use crate::submission::{human_bytes, Limits};
use std::collections::BTreeMap;

/// Files by their path below the tree's root, and what was left out (links, oversized files).
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub files: BTreeMap<String, Vec<u8>>,
    pub skipped: Vec<String>,
    total: u64,
}

impl Tree {
    /// Keep a file, or note it skipped when `over` its cap; fails past the total cap.
    pub(crate) fn add(
        &mut self,
        rel: String,
        bytes: Vec<u8>,
        over: bool,
        limits: &Limits,
    ) -> Result<(), String> {
        if over {
            self.skipped.push(format!(
                "{rel}: over the {} size cap",
                human_bytes(limits.max_file_bytes)
            ));
            return Ok(());
        }
        self.total += bytes.len() as u64;
        if self.total > limits.max_archive_bytes || self.files.len() >= limits.max_entries {
            return Err(format!(
                "the sources are over the {} / {} files cap",
                human_bytes(limits.max_archive_bytes),
                limits.max_entries
            ));
        }
        self.files.insert(rel, bytes);
        Ok(())
    }
}
