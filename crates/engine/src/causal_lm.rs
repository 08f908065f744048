//! What the course's tools need of a model, whichever family it is: one forward pass over
//! sequences with their own caches, and what the reports record about where it ran. GPT-2's
//! `Model` and the Llama family's implement it; the profile ([`crate::profile`]), the benchmark
//! cases and the ceilings run any of them.

use candle_core::{DType, Device, Tensor};

use crate::cpu::KernelPath;
use crate::pass::{Logits, Segment};
use crate::{Result, SeqCache};

/// `Sync`: the tools run it on the compute pool's threads ([`crate::cpu::on_pool`]).
pub trait CausalLm: Sync {
    /// One forward pass over sequences of any lengths, each after what its own cache holds:
    /// f32 logits for the positions each segment's `logits` asks for, `[rows, vocab]`.
    fn forward(&self, segments: &mut [Segment<'_>]) -> Result<Tensor>;

    /// A cache for one sequence growing to `capacity` positions.
    fn new_cache(&self, capacity: usize) -> SeqCache;

    fn device(&self) -> &Device;

    /// The type its weights are stored in.
    fn dtype(&self) -> DType;

    /// The CPU kernel path it was built for.
    fn kernel_path(&self) -> KernelPath;

    fn vocab_size(&self) -> usize;

    /// [`CausalLm::forward`] for one sequence.
    fn forward_one(&self, ids: &[u32], cache: &mut SeqCache, logits: Logits) -> Result<Tensor> {
        self.forward(&mut [Segment { ids, cache, logits }])
    }

    /// `batch` caches, each growing to `capacity` positions (for [`Segment::rows`]).
    fn new_caches(&self, batch: usize, capacity: usize) -> Vec<SeqCache> {
        (0..batch).map(|_| self.new_cache(capacity)).collect()
    }

    /// What reports record as its kernels: the CPU path's name, or `cuda`.
    fn kernels(&self) -> &'static str {
        self.kernel_path().run_name(self.device())
    }
}
