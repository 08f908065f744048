//! One forward pass over several sequences at once: continuous batching's pass, where decode
//! steps (one new token each) and prompt chunks share every matmul.
//!
//! A [`Segment`] is one sequence's slice of the pass: its new tokens, the cache they continue
//! and whether it wants logits. The model sees the pass as one `[tokens, n_embd]` activation;
//! this module keeps where each segment's rows sit in it, builds each segment's causal mask
//! once for every layer, and routes attention's rows ([`Pass::attend`]), which is the one step
//! where sequences cannot share a product: each attends to its own cache.

use candle_core::{Device, Tensor};
use candle_nn::kv_cache::KvCache;

use crate::cache::SeqCache;
use crate::error::{Error, Result};
use crate::ops;

/// Which of a segment's positions get logits: all of them (what `model(ids)` returns in
/// PyTorch; the profiling exercise), only the last (generation: the other rows would be
/// thrown away), or none (a prompt chunk that does not end its prompt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    AllPositions,
    LastPosition,
    None,
}

/// One sequence's slice of a model's forward pass: `ids` continue what `cache` holds.
pub struct Segment<'a> {
    pub ids: &'a [u32],
    pub cache: &'a mut SeqCache,
    pub logits: Logits,
}

impl<'a> Segment<'a> {
    /// One segment per row of `ids`, each continuing its own entry of `caches` (a batch of
    /// sequences that advance together, as the profile and `gpt2 bench` run them).
    pub fn rows(
        ids: &'a [Vec<u32>],
        caches: &'a mut [SeqCache],
        logits: Logits,
    ) -> Result<Vec<Segment<'a>>> {
        if ids.len() != caches.len() {
            return Err(Error::Input(format!(
                "the batch has {} rows but {} caches were made for it",
                ids.len(),
                caches.len()
            )));
        }
        Ok(ids
            .iter()
            .zip(caches)
            .map(|(ids, cache)| Segment { ids, cache, logits })
            .collect())
    }

    /// A decode step: one new token, attended with the other decode steps ([`Group::Decode`]).
    fn decodes(&self) -> bool {
        self.ids.len() == 1
    }
}

/// A pass's segments, where their rows sit and their masks.
pub struct Pass<'s, 'a> {
    segments: &'s mut [Segment<'a>],
    /// The first row of each segment in the pass's activations.
    starts: Vec<usize>,
    /// Each segment's causal mask (none for a single new token).
    masks: Vec<Option<Tensor>>,
}

/// The sequences one attention call of [`Pass::attend`] covers, with their layer's caches.
pub enum Group<'g> {
    /// Every sequence with one new token (a decode step): attended together, unmasked (a
    /// single new token sees every key).
    Decode(Vec<&'g mut KvCache>),
    /// One sequence's prompt or prompt chunk, causal-masked within its new tokens.
    Chunk(&'g mut KvCache, Option<&'g Tensor>),
}

impl Group<'_> {
    /// How many sequences the group's rows belong to.
    pub fn sequences(&self) -> usize {
        match self {
            Group::Decode(caches) => caches.len(),
            Group::Chunk(..) => 1,
        }
    }
}

impl<'s, 'a> Pass<'s, 'a> {
    pub fn new(segments: &'s mut [Segment<'a>], device: &Device) -> Result<Self> {
        let mut starts = Vec::with_capacity(segments.len());
        let mut row = 0;
        for s in segments.iter() {
            starts.push(row);
            row += s.ids.len();
        }
        let masks = segments
            .iter()
            .map(|s| ops::mask_build(s.cache.len, s.ids.len(), device))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            segments,
            starts,
            masks,
        })
    }

    /// Every segment's new token ids, one segment after another.
    pub fn ids(&self) -> Vec<u32> {
        self.segments
            .iter()
            .flat_map(|s| s.ids.iter().copied())
            .collect()
    }

    /// The position of each new token in its own sequence.
    pub fn positions(&self) -> Vec<u32> {
        self.segments
            .iter()
            .flat_map(|s| (s.cache.len..s.cache.len + s.ids.len()).map(|p| p as u32))
            .collect()
    }

    /// The input's shape as a profile shows it: `[batch, seq]` for segments of one length,
    /// `[tokens]` for several.
    pub fn shape(&self) -> Vec<usize> {
        let seq = self.segments[0].ids.len();
        match self.segments.iter().all(|s| s.ids.len() == seq) {
            true => vec![self.segments.len(), seq],
            false => vec![self.segments.iter().map(|s| s.ids.len()).sum()],
        }
    }

    /// Layer `layer`'s attention over `qkv` (`[tokens, 3 · n_embd]`, the pass's rows): `attend`
    /// runs once for the decode steps' rows together, if there are any, and once for each
    /// other segment's rows, and returns that group's output rows; they are put back in the
    /// pass's order.
    pub fn attend(
        &mut self,
        layer: usize,
        qkv: &Tensor,
        mut attend: impl FnMut(&Tensor, Group<'_>) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let decoding: Vec<usize> = (0..self.segments.len())
            .filter(|&s| self.segments[s].decodes())
            .collect();
        let mut outputs: Vec<Option<Tensor>> = vec![None; self.segments.len()];
        if !decoding.is_empty() {
            let rows = if decoding.len() == self.segments.len() {
                qkv.clone()
            } else {
                let rows: Vec<u32> = decoding.iter().map(|&s| self.starts[s] as u32).collect();
                qkv.index_select(&Tensor::new(rows, qkv.device())?, 0)?
            };
            let caches = self
                .segments
                .iter_mut()
                .filter(|s| s.decodes())
                .map(|s| &mut s.cache.layers[layer])
                .collect();
            let y = attend(&rows, Group::Decode(caches))?;
            for (i, &s) in decoding.iter().enumerate() {
                outputs[s] = Some(y.narrow(0, i, 1)?);
            }
        }
        for (s, segment) in self.segments.iter_mut().enumerate() {
            if !segment.decodes() {
                let rows = qkv.narrow(0, self.starts[s], segment.ids.len())?;
                outputs[s] = Some(attend(
                    &rows,
                    Group::Chunk(&mut segment.cache.layers[layer], self.masks[s].as_ref()),
                )?);
            }
        }
        let outputs: Vec<Tensor> = outputs.into_iter().flatten().collect();
        Ok(if outputs.len() == 1 {
            outputs[0].clone()
        } else {
            Tensor::cat(&outputs, 0)?
        })
    }

    /// Ends the pass over `x` (the last block's output, `[tokens, width]`): every cache now
    /// holds its segment's tokens, and `head` (the final norm and the output head) runs on the
    /// rows that want logits, gathered by a `last_position` row where not all of them do:
    /// `[rows, vocab]`, or no rows (and no head) when none does.
    pub fn logits(
        self,
        x: &Tensor,
        vocab: usize,
        head: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        match self.finish() {
            None => head(x),
            Some(rows) if rows.is_empty() => Ok(Tensor::zeros(
                (0, vocab),
                candle_core::DType::F32,
                x.device(),
            )?),
            Some(rows) => head(&ops::last_position(x, &rows)?),
        }
    }

    /// Every cache now holds its segment's tokens. Returns the rows that want logits, or
    /// `None` when all of them do.
    fn finish(self) -> Option<Vec<usize>> {
        let mut rows = Vec::new();
        let mut all = true;
        for (s, start) in self.segments.iter_mut().zip(self.starts) {
            let n = s.ids.len();
            s.cache.len += n;
            match s.logits {
                Logits::AllPositions => rows.extend(start..start + n),
                Logits::LastPosition => rows.push(start + n - 1),
                Logits::None => {}
            }
            all &= s.logits == Logits::AllPositions;
        }
        (!all).then_some(rows)
    }
}

/// Rejects what would otherwise fail deep inside a kernel: no tokens, ids outside a vocabulary
/// of `vocab`, sequences past a context of `context` positions.
pub fn check_input(segments: &[Segment<'_>], vocab: usize, context: usize) -> Result<()> {
    if segments.is_empty() || segments.iter().any(|s| s.ids.is_empty()) {
        return Err(Error::Input(
            "empty input: give at least one token id in at least one row".into(),
        ));
    }
    for (r, s) in segments.iter().enumerate() {
        if let Some((c, id)) = s
            .ids
            .iter()
            .enumerate()
            .find(|(_, id)| **id as usize >= vocab)
        {
            return Err(Error::Input(format!("token id {id} (row {r}, position {c}) is out of range: the vocabulary has {vocab} ids (0..={})", vocab - 1)));
        }
        let end = s.cache.len + s.ids.len();
        if end > context {
            return Err(Error::Input(format!(
                "sequence of {end} positions ({} cached + {} new) is longer than the model's context of {context}",
                s.cache.len,
                s.ids.len()
            )));
        }
    }
    Ok(())
}
