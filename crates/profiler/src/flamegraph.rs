//! Folded stacks (`ProfilerStep*;block;attn;matmul 1234`, one line per distinct stack, the
//! count being self time in nanoseconds summed over the active steps) and a flame graph SVG
//! drawn from them by inferno. Every scope is a frame, ops and modules alike.

use std::collections::BTreeMap;
use std::path::Path;

use crate::aggregate::STEP_ROW;
use crate::error::ProfilerError;
use crate::recording::Profile;

impl Profile {
    /// Host self time per stack, in the folded format inferno and Brendan Gregg's
    /// `flamegraph.pl` read. Steps are merged under one `ProfilerStep*` root.
    pub fn folded_stacks(&self) -> String {
        let mut totals: BTreeMap<String, u64> = BTreeMap::new();
        for step in &self.steps {
            let n = step.events.len();
            let mut stacks: Vec<String> = Vec::with_capacity(n);
            let mut children = vec![0u64; n];
            let mut root_children = 0u64;
            for e in &step.events {
                let parent_stack = e.parent.map_or(STEP_ROW, |p| stacks[p].as_str());
                // Frame names cannot hold the separators of the folded format.
                let frame = e.name.replace([';', ' '], "_");
                stacks.push(format!("{parent_stack};{frame}"));
                match e.parent {
                    Some(p) => children[p] += e.host_ns(),
                    None => root_children += e.host_ns(),
                }
            }
            *totals.entry(STEP_ROW.to_string()).or_default() +=
                step.wall_ns().saturating_sub(root_children);
            for (i, e) in step.events.iter().enumerate() {
                *totals.entry(stacks[i].clone()).or_default() +=
                    e.host_ns().saturating_sub(children[i]);
            }
        }
        totals
            .into_iter()
            .filter(|(_, ns)| *ns > 0)
            .map(|(stack, ns)| format!("{stack} {ns}\n"))
            .collect()
    }

    /// Draw the folded stacks as a flame graph SVG at `path`.
    pub fn flamegraph_svg(&self, path: impl AsRef<Path>) -> Result<(), ProfilerError> {
        let path = path.as_ref();
        let folded = self.folded_stacks();
        let mut svg = Vec::new();
        let mut options = inferno::flamegraph::Options::default();
        options.title = "Profiler scopes (host self time)".to_string();
        options.count_name = "ns".to_string();
        // Book-page width: inferno's default 1200 px is scaled down to about 7 px text in the
        // course's pages; 800 px keeps labels readable there and in a browser tab.
        options.image_width = Some(800);
        let fail = |message: String| ProfilerError::FlameGraph {
            path: path.to_path_buf(),
            message,
        };
        if folded.is_empty() {
            return Err(fail(
                "the profile has no recorded time (no active step ran)".to_string(),
            ));
        }
        inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg)
            .map_err(|e| fail(e.to_string()))?;
        std::fs::write(path, svg).map_err(|source| ProfilerError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}
