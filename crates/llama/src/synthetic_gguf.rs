//! Synthetic GGUF checkpoints: a real model's exact shapes, its matrices written straight to
//! `Q1_0` blocks with seeded signs (no f32 weight is ever made), norms f32, and a tokenizer of
//! its vocabulary's size in `tokenizer.ggml.*` form, as llama.cpp's converter writes a Qwen3.
//! Every timing is real, the outputs are not.
//!
//! [`BONSAI_8B`] stands in for `prism-ml/Bonsai-8B-gguf` when the Hub cannot be reached: Qwen3
//! 8B's architecture with every matrix 1-bit, embeddings and head included (8.19 billion
//! weights in about 1.15 GB). It is written once into the course's cache
//! ([`GgufShape::cached`]), streamed tensor by tensor (`engine::gguf::write`), and its size and
//! the memory it needs are known from its [`GgufShape::plan`] before a byte is written.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use engine::gguf::write::{self, Plan, SplitMix64, TensorPlan};
use engine::gguf::{GgmlType, Value};
use engine::Result;

/// The Hub repository [`BONSAI_8B`] stands in for.
pub const BONSAI_8B_REPO: &str = "prism-ml/Bonsai-8B-gguf";

/// The same signs on every machine.
const SEED: u64 = 41;
/// Bump when the contents change, so that a stale cached file is not reused.
const VERSION: u32 = 1;

/// llama.cpp's token types (`llama_token_type`), as the converter writes them.
mod token_type {
    pub const NORMAL: i32 = 1;
    pub const CONTROL: i32 = 3;
    pub const USER_DEFINED: i32 = 4;
    pub const UNUSED: i32 = 5;
}

/// Qwen's added tokens after its regular vocabulary, in id order, and whether each is special
/// (the converter writes special ones, and ones that look like `<|…|>`, as control tokens; the
/// others as user-defined).
const QWEN3_ADDED: [(&str, bool); 26] = [
    ("<|endoftext|>", true),
    ("<|im_start|>", true),
    ("<|im_end|>", true),
    ("<|object_ref_start|>", true),
    ("<|object_ref_end|>", true),
    ("<|box_start|>", true),
    ("<|box_end|>", true),
    ("<|quad_start|>", true),
    ("<|quad_end|>", true),
    ("<|vision_start|>", true),
    ("<|vision_end|>", true),
    ("<|vision_pad|>", true),
    ("<|image_pad|>", true),
    ("<|video_pad|>", true),
    ("<tool_call>", false),
    ("</tool_call>", false),
    ("<|fim_prefix|>", true),
    ("<|fim_middle|>", true),
    ("<|fim_suffix|>", true),
    ("<|fim_pad|>", true),
    ("<|repo_name|>", true),
    ("<|file_sep|>", true),
    ("<tool_response>", false),
    ("</tool_response>", false),
    ("<think>", false),
    ("</think>", false),
];

/// ChatML, the turn format of Qwen's chat models, in its plainest form.
const CHAT_TEMPLATE: &str = "{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";

/// A Qwen3 model's shape, every matrix `Q1_0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GgufShape {
    pub name: &'static str,
    /// The ids of the file's tokenizer and the rows of its embeddings and head.
    pub vocab_size: usize,
    /// Ids before Qwen's added tokens (the rest, after those, are padding).
    pub regular_tokens: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub max_positions: usize,
    pub rope_theta: f32,
    pub rms_norm_eps: f32,
}

/// Qwen3-8B's shapes (its `config.json`): 36 layers 4096 wide, 32 query heads of 128 over 8
/// key/value heads, an MLP of 12288, a vocabulary of 151,936 (151,643 regular tokens, Qwen's
/// added ones, padding) and a head of its own: Bonsai 8B's, all in `Q1_0`.
pub const BONSAI_8B: GgufShape = GgufShape {
    name: "bonsai-8b",
    vocab_size: 151_936,
    regular_tokens: 151_643,
    hidden_size: 4096,
    intermediate_size: 12_288,
    layers: 36,
    heads: 32,
    kv_heads: 8,
    head_dim: 128,
    max_positions: 40_960,
    rope_theta: 1_000_000.0,
    rms_norm_eps: 1e-6,
};

/// A small one for tests: the same recipe, two layers, rows of one or two blocks.
pub const BONSAI_TINY: GgufShape = GgufShape {
    name: "bonsai-tiny",
    vocab_size: 1024,
    regular_tokens: 900,
    hidden_size: 128,
    intermediate_size: 256,
    layers: 2,
    heads: 4,
    kv_heads: 2,
    head_dim: 32,
    max_positions: 256,
    rope_theta: 1_000_000.0,
    rms_norm_eps: 1e-6,
};

/// The shapes `--model synthetic-NAME` names as GGUF files.
pub const GGUF_SHAPES: [GgufShape; 2] = [BONSAI_8B, BONSAI_TINY];

/// The tokenizer's tables, as `tokenizer.ggml.*` holds them.
pub struct Vocabulary {
    pub tokens: Vec<String>,
    pub types: Vec<i32>,
    pub merges: Vec<String>,
}

impl GgufShape {
    /// The folder of the course's cache it is written into: its shape in its name.
    pub fn cache_name(&self) -> String {
        format!(
            "synthetic-gguf-v{VERSION}-qwen3-l{}-e{}-f{}-h{}-kv{}-v{}-q1_0",
            self.layers,
            self.hidden_size,
            self.intermediate_size,
            self.heads,
            self.kv_heads,
            self.vocab_size
        )
    }

    /// The file's name: what a report calls the model after the repository it stands in for.
    pub fn file_name(&self) -> String {
        format!("synthetic-{}-q1_0.gguf", self.name)
    }

    /// The tensors as llama.cpp names and shapes them (PyTorch order, outermost first, in the
    /// plan as GGUF's innermost first).
    pub fn tensors(&self) -> Vec<TensorPlan> {
        let (h, ff, d) = (
            self.hidden_size as u64,
            self.intermediate_size as u64,
            self.head_dim as u64,
        );
        let (q, kv) = (self.heads as u64 * d, self.kv_heads as u64 * d);
        let q1 = GgmlType::Q1_0;
        let f32 = GgmlType::F32;
        let mut t = vec![TensorPlan::new(
            "token_embd.weight",
            &[self.vocab_size as u64, h],
            q1,
        )];
        for i in 0..self.layers {
            let n = |s: &str| format!("blk.{i}.{s}.weight");
            t.extend([
                TensorPlan::new(n("attn_norm"), &[h], f32),
                TensorPlan::new(n("attn_q"), &[q, h], q1),
                TensorPlan::new(n("attn_k"), &[kv, h], q1),
                TensorPlan::new(n("attn_v"), &[kv, h], q1),
                TensorPlan::new(n("attn_q_norm"), &[d], f32),
                TensorPlan::new(n("attn_k_norm"), &[d], f32),
                TensorPlan::new(n("attn_output"), &[h, q], q1),
                TensorPlan::new(n("ffn_norm"), &[h], f32),
                TensorPlan::new(n("ffn_gate"), &[ff, h], q1),
                TensorPlan::new(n("ffn_up"), &[ff, h], q1),
                TensorPlan::new(n("ffn_down"), &[h, ff], q1),
            ]);
        }
        t.push(TensorPlan::new("output_norm.weight", &[h], f32));
        t.push(TensorPlan::new(
            "output.weight",
            &[self.vocab_size as u64, h],
            q1,
        ));
        t
    }

    /// Weights in all (norms included).
    pub fn parameters(&self) -> u64 {
        self.tensors()
            .iter()
            .map(|t| t.dims.iter().product::<u64>())
            .sum()
    }

    /// A byte-level BPE vocabulary of exactly `vocab_size` ids, as Qwen's is laid out: the 256
    /// byte symbols first (GPT-2's byte-to-character map, in its order), then tokens each made
    /// by one merge of two earlier ones (so every merge's parts and their concatenation are
    /// tokens), up to `regular_tokens`; then Qwen's added tokens, then `[PADn]` padding, as the
    /// converter pads a vocabulary to the embeddings' rows.
    pub fn vocabulary(&self) -> Vocabulary {
        let mut tokens: Vec<String> = byte_symbols().into_iter().map(String::from).collect();
        let mut seen: HashSet<String> = tokens.iter().cloned().collect();
        // Merged from word-like pieces (letters, and 'Ġ', the byte-level space, at the start
        // only), so that text splits into multi-byte tokens much as English does: a piece of
        // up to 8 characters, then a short one without a space, so that a token never passes 12
        // characters and a draw is rarely refused (only when it made a token already there).
        let letters = |t: &str| t.chars().all(|c| c.is_ascii_alphabetic());
        let mut left: Vec<usize> = (0..tokens.len())
            .filter(|&i| letters(&tokens[i]) || tokens[i] == "Ġ")
            .collect();
        let mut right: Vec<usize> = (0..tokens.len()).filter(|&i| letters(&tokens[i])).collect();
        let mut merges = Vec::new();
        let mut rng = SplitMix64(SEED);
        let regular = self.regular_tokens.max(tokens.len());
        // First every letter (or a space) followed by a lower-case letter, so that any word
        // merges at least into pairs; then random pieces.
        let mut pairs = left
            .iter()
            .flat_map(|&a| {
                right
                    .iter()
                    .filter(|&&b| tokens[b].chars().all(|c| c.is_ascii_lowercase()))
                    .map(move |&b| (a, b))
            })
            .collect::<Vec<_>>()
            .into_iter();
        while tokens.len() < regular {
            let (a, b) = pairs.next().unwrap_or_else(|| {
                (
                    left[(rng.next() % left.len() as u64) as usize],
                    right[(rng.next() % right.len() as u64) as usize],
                )
            });
            let merged = format!("{}{}", tokens[a], tokens[b]);
            if seen.contains(&merged) {
                continue;
            }
            let chars = merged.chars().count();
            merges.push(format!("{} {}", tokens[a], tokens[b]));
            seen.insert(merged.clone());
            let id = tokens.len();
            tokens.push(merged);
            if chars <= 8 {
                left.push(id);
            }
            if chars <= 4 && letters(&tokens[id]) {
                right.push(id);
            }
        }
        let mut types = vec![token_type::NORMAL; tokens.len()];
        for (text, special) in QWEN3_ADDED {
            if tokens.len() == self.vocab_size {
                break;
            }
            tokens.push(text.to_string());
            types.push(match special {
                true => token_type::CONTROL,
                false => token_type::USER_DEFINED,
            });
        }
        while tokens.len() < self.vocab_size {
            tokens.push(format!("[PAD{}]", tokens.len()));
            types.push(token_type::UNUSED);
        }
        Vocabulary {
            tokens,
            types,
            merges,
        }
    }

    /// The file's metadata and tensors, as `convert_hf_to_gguf.py` writes a Qwen3: the
    /// `qwen3.*` hyper-parameters, then the tokenizer (`gpt2` model, `qwen2` pre-tokenizer,
    /// Qwen's special ids, a ChatML template).
    pub fn plan(&self) -> Plan {
        let vocab = self.vocabulary();
        let id = |text: &str| {
            vocab
                .tokens
                .iter()
                .position(|t| t == text)
                .map(|i| Value::U32(i as u32))
        };
        let u32_of = |v: usize| Value::U32(v as u32);
        let mut metadata: Vec<(String, Value)> = vec![
            ("general.architecture".into(), Value::String("qwen3".into())),
            ("general.type".into(), Value::String("model".into())),
            (
                "general.name".into(),
                Value::String(format!("synthetic {} (seeded Q1_0 signs)", self.name)),
            ),
            ("general.quantization_version".into(), Value::U32(2)),
            ("qwen3.block_count".into(), u32_of(self.layers)),
            ("qwen3.context_length".into(), u32_of(self.max_positions)),
            ("qwen3.embedding_length".into(), u32_of(self.hidden_size)),
            (
                "qwen3.feed_forward_length".into(),
                u32_of(self.intermediate_size),
            ),
            ("qwen3.attention.head_count".into(), u32_of(self.heads)),
            (
                "qwen3.attention.head_count_kv".into(),
                u32_of(self.kv_heads),
            ),
            ("qwen3.rope.freq_base".into(), Value::F32(self.rope_theta)),
            (
                "qwen3.attention.layer_norm_rms_epsilon".into(),
                Value::F32(self.rms_norm_eps),
            ),
            ("qwen3.attention.key_length".into(), u32_of(self.head_dim)),
            ("qwen3.attention.value_length".into(), u32_of(self.head_dim)),
            ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
            ("tokenizer.ggml.pre".into(), Value::String("qwen2".into())),
        ];
        let strings = |v: &[String]| Value::Array(v.iter().cloned().map(Value::String).collect());
        metadata.push(("tokenizer.ggml.tokens".into(), strings(&vocab.tokens)));
        metadata.push((
            "tokenizer.ggml.token_type".into(),
            Value::Array(vocab.types.iter().map(|&t| Value::I32(t)).collect()),
        ));
        metadata.push(("tokenizer.ggml.merges".into(), strings(&vocab.merges)));
        for (key, text) in [
            ("tokenizer.ggml.eos_token_id", "<|im_end|>"),
            ("tokenizer.ggml.padding_token_id", "<|endoftext|>"),
            ("tokenizer.ggml.bos_token_id", "<|endoftext|>"),
        ] {
            if let Some(v) = id(text) {
                metadata.push((key.into(), v));
            }
        }
        metadata.push(("tokenizer.ggml.add_bos_token".into(), Value::Bool(false)));
        metadata.push((
            "tokenizer.chat_template".into(),
            Value::String(CHAT_TEMPLATE.into()),
        ));
        Plan {
            metadata,
            tensors: self.tensors(),
        }
    }

    /// Writes the file to `path` (not in one step: [`GgufShape::cached`] is). Each matrix's
    /// blocks get the scale `1/√(row length)`: a row of ±s against RMS-normed inputs (entries
    /// of size about 1) sums `k` terms of random sign to about `s·√k`, so every product, 36
    /// layers deep and at the head, stays of size about 1. Norm gains are 1.
    pub fn write(&self, path: &Path) -> Result<()> {
        let plan = self.plan();
        let index = |name: &str| plan.tensors.iter().position(|t| t.name == name);
        write::write(path, &plan, &mut |t: &TensorPlan, out: &mut dyn Write| {
            let (k, rows) = (t.dims[0], t.dims.iter().skip(1).product::<u64>());
            match t.ty {
                GgmlType::Q1_0 => {
                    let seed = SEED ^ ((index(&t.name).unwrap_or(0) as u64) << 32);
                    write::write_q1_0_random(out, rows, k, 1.0 / (k as f32).sqrt(), seed)
                }
                _ => {
                    let ones: Vec<u8> = (0..k * rows).flat_map(|_| 1f32.to_le_bytes()).collect();
                    out.write_all(&ones)
                }
            }
        })
    }

    /// The file in the course's cache, written on first use (into a folder renamed into place
    /// in one step, so an interrupted write leaves nothing to be mistaken for it).
    pub fn cached(&self) -> Result<PathBuf> {
        engine::loader::synthetic_file(&self.cache_name(), &self.file_name(), |path| {
            self.write(path)
        })
    }
}

/// GPT-2's byte-to-character map, in its order: the printable bytes stand for themselves, the
/// others for the characters from U+0100 on (so a space is 'Ġ').
fn byte_symbols() -> Vec<char> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    let mut symbols: Vec<char> = (0..256u32)
        .filter(|&b| printable(b))
        .filter_map(char::from_u32)
        .collect();
    let mut next = 256;
    for b in 0..256u32 {
        if !printable(b) {
            symbols.extend(char::from_u32(next));
            next += 1;
        }
    }
    symbols
}
