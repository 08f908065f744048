//! A GGUF file's own tokenizer, from its `tokenizer.ggml.*` metadata, built from the
//! `tokenizers` crate's parts so that it encodes as the checkpoint's `tokenizer.json` does.
//!
//! llama.cpp's converter (`convert_hf_to_gguf.py`) writes one of two models:
//!
//! - **`gpt2`**: byte-level BPE (GPT-2, Llama 3, SmolLM2, Qwen2/2.5/3): `tokens`, `token_type`,
//!   `merges` (`"a b"`, the rank is the position) and `pre`, the name the converter gives the
//!   checkpoint's pre-tokenizer (a hash of how it splits a test text). The name picks the split
//!   [`PRE_TOKENIZERS`] lists, written as the checkpoints' `tokenizer.json` files write it; a
//!   name not listed is refused (a wrong split gives other ids without an error).
//! - **`llama`**: SentencePiece BPE with byte fallback (Llama 2, TinyLlama, Mistral 7B v0.1):
//!   `tokens`, `scores`, `token_type`, and no merges. The merges are rebuilt as transformers'
//!   converter does from the same `tokenizer.model` (`generate_merges`): every split of a piece
//!   into two pieces of the vocabulary, in the order of the merged piece's id, then the length of
//!   the left part; spaces become `▁`, prepended to the text's start unless
//!   `tokenizer.ggml.add_space_prefix` is false; bytes the vocabulary lacks become `<0xXX>`.
//!
//! Tokens of type control (and unknown) are special added tokens, user-defined ones added
//! tokens, as the converter made them from `added_tokens`; both are matched whole before the
//! model splits the rest.
//!
//! `tokenizer.ggml.add_bos_token` and `add_eos_token` (the converter's reading of the
//! checkpoint's post-processor or `tokenizer_config.json`) become a post-processor that puts the
//! BOS token first and the EOS token last when encoding with special tokens, as llama.cpp's
//! `llama_tokenize` with `add_special` does; without the keys, llama.cpp's defaults for the
//! model (BOS first for `llama` and for `gpt2` with the `llama-bpe` split, nothing else).

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::unicode::NFC;
use tokenizers::normalizers::Replace;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::sequence::Sequence as PreSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::processors::template::{SpecialToken as TemplateToken, TemplateProcessing};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};

use super::{GgufFile, Value};
use crate::error::{Error, Result};
use crate::loader::ChatTemplate;
use crate::tokenizer::Tokenizer;

/// The `tokenizer.ggml.pre` names this module reads, for the byte-level (`gpt2`) model.
pub const PRE_TOKENIZERS: [&str; 6] =
    ["gpt-2", "default", "smollm", "llama-bpe", "qwen2", "qwen35"];

/// Qwen2's split (its `tokenizer.json`'s `Split` regex; Qwen2.5 and Qwen3 keep it).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen3.5's: letters take their combining marks along.
const QWEN35_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Llama 3's: numbers in runs of up to three digits.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// llama.cpp's token types (`llama_token_type`).
mod token_type {
    pub const UNKNOWN: i64 = 2;
    pub const CONTROL: i64 = 3;
    pub const USER_DEFINED: i64 = 4;
}

/// The tokenizer in `file`'s metadata; `None` when the file carries none (no
/// `tokenizer.ggml.model`, or the model `none`).
pub fn tokenizer(file: &GgufFile) -> Result<Option<Tokenizer>> {
    let model = match file.metadata().get("tokenizer.ggml.model") {
        None => return Ok(None),
        Some(_) => file.get_str("tokenizer.ggml.model")?,
    };
    let bad = |message: String| Error::Tokenizer {
        path: file.path().to_owned(),
        message,
    };
    let tokens = strings(file, "tokenizer.ggml.tokens")?;
    let types = match file.metadata().get("tokenizer.ggml.token_type") {
        Some(_) => integers(file, "tokenizer.ggml.token_type")?,
        None => vec![1; tokens.len()],
    };
    if types.len() != tokens.len() {
        return Err(bad(format!(
            "{} token types for {} tokens",
            types.len(),
            tokens.len()
        )));
    }
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let mut tk = match model {
        "none" => return Ok(None),
        "gpt2" => byte_level(file, vocab)?,
        "llama" => sentencepiece(file, &tokens, &types, vocab)?,
        other => {
            return Err(bad(format!(
                "tokenizer.ggml.model is {other}; the engine builds gpt2 (byte-level BPE) and llama (SentencePiece BPE) tokenizers"
            )))
        }
    };
    let (mut special, mut user) = (Vec::new(), Vec::new());
    for (t, &ty) in tokens.iter().zip(&types) {
        match ty {
            token_type::CONTROL | token_type::UNKNOWN => {
                special.push(AddedToken::from(t.clone(), true).normalized(false))
            }
            token_type::USER_DEFINED => {
                user.push(AddedToken::from(t.clone(), false).normalized(false))
            }
            _ => {}
        }
    }
    // Special ones are left out of decoded text, as `skip_special_tokens` does.
    tk.add_special_tokens(special)
        .map_err(|e| bad(format!("cannot add its control tokens: {e}")))?;
    tk.add_tokens(user)
        .map_err(|e| bad(format!("cannot add its user-defined tokens: {e}")))?;
    if let Some(around) = bos_and_eos(file, model, &tokens)? {
        tk.with_post_processor(Some(around));
    }
    Ok(Some(Tokenizer::from(tk)))
}

/// The post-processor that adds BOS and EOS where the file says llama.cpp adds them; `None`
/// where it adds neither. Pairs take each one again before the second text, as transformers'
/// Llama tokenizer does.
fn bos_and_eos(
    file: &GgufFile,
    model: &str,
    tokens: &[String],
) -> Result<Option<TemplateProcessing>> {
    let bad = |message: String| Error::Tokenizer {
        path: file.path().to_owned(),
        message,
    };
    let flag = |key: &str, default: bool| match file.metadata().get(key) {
        None => Ok(default),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| bad(format!("{key} is not a bool"))),
    };
    let bos_by_default = match model {
        "llama" => true,
        _ => {
            file.metadata()
                .get("tokenizer.ggml.pre")
                .and_then(Value::as_str)
                == Some("llama-bpe")
        }
    };
    let mut special = Vec::new();
    for (name, add, id_key) in [
        (
            "bos",
            flag("tokenizer.ggml.add_bos_token", bos_by_default)?,
            "tokenizer.ggml.bos_token_id",
        ),
        (
            "eos",
            flag("tokenizer.ggml.add_eos_token", false)?,
            "tokenizer.ggml.eos_token_id",
        ),
    ] {
        if !add {
            continue;
        }
        let id = file.metadata().get(id_key).and_then(Value::as_u64);
        let text = id.and_then(|id| tokens.get(id as usize));
        let (Some(id), Some(text)) = (id, text) else {
            return Err(bad(format!(
                "says to add the {name} token, but {id_key} names none of its tokens"
            )));
        };
        let token = TemplateToken::new(name.into(), vec![id as u32], vec![text.clone()])
            .map_err(|e| bad(format!("the {name} token: {e}")))?;
        special.push((name, token));
    }
    if special.is_empty() {
        return Ok(None);
    }
    // Template pieces name the special tokens by key ("bos", "eos"), so a token's text can hold
    // the spaces and colons the template syntax would split on.
    let has = |n: &str| special.iter().any(|(name, _)| *name == n);
    let side = |seq: &str, type_id: u32| {
        let mut pieces = Vec::new();
        if has("bos") {
            pieces.push(format!("bos:{type_id}"));
        }
        pieces.push(format!("{seq}:{type_id}"));
        if has("eos") {
            pieces.push(format!("eos:{type_id}"));
        }
        pieces.join(" ")
    };
    let template = TemplateProcessing::builder()
        .try_single(side("$A", 0))
        .and_then(|b| b.try_pair(format!("{} {}", side("$A", 0), side("$B", 1))))
        .map_err(|e| bad(format!("cannot build its BOS/EOS template: {e}")))?
        .special_tokens(special.into_iter().map(|(_, t)| t).collect::<Vec<_>>())
        .build()
        .map_err(|e| bad(format!("cannot build its BOS/EOS template: {e}")))?;
    Ok(Some(template))
}

type Tk = tokenizers::Tokenizer;

/// The `gpt2` model: byte-level BPE with the merges as stored and the split `pre` names.
fn byte_level(file: &GgufFile, vocab: Vocab) -> Result<Tk> {
    let bad = |message: String| Error::Tokenizer {
        path: file.path().to_owned(),
        message,
    };
    let merges = strings(file, "tokenizer.ggml.merges")?
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| bad(format!("merge {i} ({m:?}) is not two tokens")))
        })
        .collect::<Result<Vec<_>>>()?;
    let pre = match file.metadata().get("tokenizer.ggml.pre") {
        None => "default",
        Some(_) => file.get_str("tokenizer.ggml.pre")?,
    };
    // The byte-level step after a regex split only maps bytes to symbols.
    let bytes_only = || ByteLevel::new(false, false, false);
    let split = |regex: &str| -> Result<PreTokenizerWrapper> {
        let split = Split::new(
            SplitPattern::Regex(regex.into()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| bad(format!("the {pre} split: {e}")))?;
        Ok(PreSequence::new(vec![split.into(), bytes_only().into()]).into())
    };
    let (pre_tokenizer, nfc): (PreTokenizerWrapper, bool) = match pre {
        "gpt-2" | "default" => (ByteLevel::new(false, true, true).into(), false),
        "smollm" => (
            PreSequence::new(vec![
                Digits::new(true).into(),
                ByteLevel::new(false, true, true).into(),
            ])
            .into(),
            false,
        ),
        "llama-bpe" => (split(LLAMA3_SPLIT)?, false),
        "qwen2" => (split(QWEN2_SPLIT)?, true),
        "qwen35" => (split(QWEN35_SPLIT)?, true),
        other => {
            return Err(bad(format!(
                "tokenizer.ggml.pre is {other}; the engine knows the pre-tokenizers {} (use the checkpoint's tokenizer.json for another)",
                PRE_TOKENIZERS.join(", ")
            )))
        }
    };
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        // Llama 3's tokenizer.json takes a word found whole in the vocabulary as it is.
        .ignore_merges(pre == "llama-bpe")
        .build()
        .map_err(|e| bad(format!("cannot build its BPE: {e}")))?;
    let mut tk = Tk::new(bpe);
    if nfc {
        tk.with_normalizer(Some(NFC))
            .map_err(|e| bad(format!("NFC: {e}")))?;
    }
    tk.with_pre_tokenizer(Some(pre_tokenizer));
    tk.with_decoder(Some(ByteLevelDecoder::default()));
    Ok(tk)
}

/// The `llama` model: SentencePiece BPE with byte fallback, merges rebuilt from the vocabulary.
fn sentencepiece(file: &GgufFile, tokens: &[String], types: &[i64], vocab: Vocab) -> Result<Tk> {
    let bad = |message: String| Error::Tokenizer {
        path: file.path().to_owned(),
        message,
    };
    let add_space_prefix = match file.metadata().get("tokenizer.ggml.add_space_prefix") {
        None => true,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| bad("tokenizer.ggml.add_space_prefix is not a bool".into()))?,
    };
    let unk = match file.metadata().get("tokenizer.ggml.unknown_token_id") {
        Some(_) => Some(file.get_u64("tokenizer.ggml.unknown_token_id")? as usize),
        None => types.iter().position(|&t| t == token_type::UNKNOWN),
    };
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab.clone(), merges_of(tokens, &vocab))
        .byte_fallback(true)
        .fuse_unk(true);
    if let Some(unk) = unk.and_then(|i| tokens.get(i)) {
        builder = builder.unk_token(unk.clone());
    }
    let bpe = builder
        .build()
        .map_err(|e| bad(format!("cannot build its BPE: {e}")))?;
    let mut tk = Tk::new(bpe);
    let scheme = match add_space_prefix {
        true => PrependScheme::First,
        false => PrependScheme::Never,
    };
    tk.with_pre_tokenizer(Some(Metaspace::new('▁', scheme, false)));
    let mut decoders = vec![
        tokenizers::DecoderWrapper::from(
            Replace::new("▁", " ").map_err(|e| bad(format!("the decoder: {e}")))?,
        ),
        ByteFallback::default().into(),
        Fuse::default().into(),
    ];
    if add_space_prefix {
        decoders.push(Strip::new(' ', 1, 0).into());
    }
    tk.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok(tk)
}

/// Every split of a piece into two pieces of `vocab`, ordered by the merged piece's id, then by
/// the length (in characters) of the left part: transformers' `generate_merges` on a
/// SentencePiece vocabulary, whose ids run in the order of its pieces' scores.
fn merges_of(tokens: &[String], vocab: &Vocab) -> Vec<(String, String)> {
    let mut merges = Vec::new();
    for piece in tokens {
        let bounds: Vec<usize> = piece.char_indices().map(|(i, _)| i).skip(1).collect();
        for at in bounds {
            let (l, r) = piece.split_at(at);
            if vocab.contains_key(l) && vocab.contains_key(r) {
                merges.push((l.to_string(), r.to_string()));
            }
        }
    }
    merges
}

/// The chat template in `tokenizer.chat_template`, with the texts of the BOS and EOS tokens it
/// may name.
pub fn chat_template(file: &GgufFile) -> Result<Option<ChatTemplate>> {
    let source = match file.metadata().get("tokenizer.chat_template") {
        None => return Ok(None),
        Some(_) => file.get_str("tokenizer.chat_template")?.to_string(),
    };
    let tokens = match file.metadata().get("tokenizer.ggml.tokens") {
        Some(_) => strings(file, "tokenizer.ggml.tokens")?,
        None => Vec::new(),
    };
    let text_of = |key: &str| -> Option<String> {
        let id = file.metadata().get(key)?.as_u64()?;
        tokens.get(id as usize).cloned()
    };
    Ok(Some(ChatTemplate {
        source,
        bos_token: text_of("tokenizer.ggml.bos_token_id"),
        eos_token: text_of("tokenizer.ggml.eos_token_id"),
        path: file.path().to_owned(),
    }))
}

/// The ids that end a generation: the end-of-sequence, end-of-turn and end-of-message tokens the
/// metadata names, each once.
pub fn eos_ids(file: &GgufFile) -> Vec<u32> {
    let mut ids = Vec::new();
    for key in [
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.eot_token_id",
        "tokenizer.ggml.eom_token_id",
    ] {
        if let Some(id) = file.metadata().get(key).and_then(Value::as_u64) {
            if let Ok(id) = u32::try_from(id) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    ids
}

/// An array of strings.
fn strings(file: &GgufFile, key: &str) -> Result<Vec<String>> {
    match file.get(key)? {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    file.error(format!("{key}[{i}] is a {}, not a string", v.type_name()))
                })
            })
            .collect(),
        v => Err(file.error(format!("{key} is a {}, not an array", v.type_name()))),
    }
}

/// An array of integers (token types are written as int32).
fn integers(file: &GgufFile, key: &str) -> Result<Vec<i64>> {
    let as_i64 = |v: &Value| match *v {
        Value::I8(x) => Some(x.into()),
        Value::I16(x) => Some(x.into()),
        Value::I32(x) => Some(x.into()),
        Value::I64(x) => Some(x),
        _ => v.as_u64().and_then(|x| i64::try_from(x).ok()),
    };
    match file.get(key)? {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                as_i64(v).ok_or_else(|| {
                    file.error(format!("{key}[{i}] is a {}, not an integer", v.type_name()))
                })
            })
            .collect(),
        v => Err(file.error(format!("{key} is a {}, not an array", v.type_name()))),
    }
}
