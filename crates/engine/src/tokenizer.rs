//! A checkpoint's tokenizer (a Hugging Face `tokenizer.json`, whatever its model: GPT-2's
//! byte-level BPE, SentencePiece-style BPE of the Llama family, ...), and the synthetic one that
//! goes with a synthetic checkpoint: byte-level BPE with exactly the model's vocabulary size.

use std::collections::HashSet;
use std::path::Path;

use rand::{Rng, SeedableRng};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{
    AddedToken, DecoderWrapper, ModelWrapper, NormalizerWrapper, PostProcessorWrapper,
    PreTokenizerWrapper, TokenizerImpl,
};

use crate::error::{Error, Result};

type Inner = TokenizerImpl<
    ModelWrapper,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

pub struct Tokenizer {
    inner: Inner,
}

impl Tokenizer {
    /// The `tokenizer.json` in checkpoint folder `dir`, when it has one (`save_pretrained`
    /// folders of a bare model do not).
    pub fn from_dir(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join("tokenizer.json");
        match path.is_file() {
            true => Self::from_file(&path).map(Some),
            false => Ok(None),
        }
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| Error::Tokenizer {
            path: path.to_owned(),
            message: format!("not a readable tokenizer.json: {e}"),
        })?;
        Ok(Self {
            inner: inner.into_inner(),
        })
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| Error::Input(format!("cannot tokenize the prompt: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// `text`'s ids with the tokens the tokenizer puts around every text (its post-processor:
    /// e.g. Llama 2's `<s>` first), as transformers' `encode` and llama.cpp's `llama_tokenize`
    /// with `add_special` give them.
    pub fn encode_with_special_tokens(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, true)
            .map_err(|e| Error::Input(format!("cannot tokenize the prompt: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, true)
            .map_err(|e| Error::Input(format!("cannot decode token ids: {e}")))
    }

    /// The id of `token` (e.g. `<|endoftext|>`), if the vocabulary has it.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The number of ids, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// A decoder for a stream of ids: `push` returns text once the bytes seen so far form
    /// whole characters (one BPE token can end in the middle of a UTF-8 sequence).
    pub fn stream(&self) -> TextStream<'_> {
        TextStream {
            inner: self.inner.decode_stream(true),
        }
    }
}

/// A tokenizer put together from parts (e.g. from a GGUF file's metadata, `crate::gguf::tokenizer`).
impl From<tokenizers::Tokenizer> for Tokenizer {
    fn from(tk: tokenizers::Tokenizer) -> Self {
        Self {
            inner: tk.into_inner(),
        }
    }
}

pub struct TextStream<'a> {
    inner: tokenizers::tokenizer::DecodeStream<
        'a,
        ModelWrapper,
        NormalizerWrapper,
        PreTokenizerWrapper,
        PostProcessorWrapper,
        DecoderWrapper,
    >,
}

impl TextStream<'_> {
    pub fn push(&mut self, id: u32) -> Result<Option<String>> {
        self.inner
            .step(id)
            .map_err(|e| Error::Input(format!("cannot decode token id {id}: {e}")))
    }
}

/// Writes a byte-level BPE `tokenizer.json` with exactly `vocab_size` ids: the 256 byte
/// symbols, seeded merges of them up to `vocab_size - 1`, and the special token `end` (e.g.
/// GPT-2's `<|endoftext|>`) last, id `vocab_size - 1`. Real BPE machinery, made-up merges: it
/// round-trips any text, but its pieces are not English sub-words.
pub fn write_synthetic(path: &Path, vocab_size: usize, seed: u64, end: &str) -> Result<()> {
    let fail = |message: String| Error::Tokenizer {
        path: path.to_owned(),
        message,
    };
    let mut alphabet: Vec<char> = ByteLevel::alphabet().into_iter().collect();
    alphabet.sort_unstable();
    if vocab_size < alphabet.len() + 1 {
        return Err(fail(format!(
            "a byte-level vocabulary needs at least {} ids, not {vocab_size}",
            alphabet.len() + 1
        )));
    }
    let mut tokens: Vec<String> = alphabet.iter().map(char::to_string).collect();
    let mut seen: HashSet<String> = tokens.iter().cloned().collect();
    // Merges are built from word-like pieces (letters and the byte-level space 'Ġ') so that
    // synthetic text splits into multi-byte tokens much as English does.
    let mut wordy: Vec<usize> = (0..tokens.len())
        .filter(|&i| {
            tokens[i]
                .chars()
                .all(|c| c.is_ascii_alphabetic() || c == 'Ġ')
        })
        .collect();
    let mut merges = Vec::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    while tokens.len() < vocab_size - 1 {
        let a = wordy[rng.random_range(0..wordy.len())];
        let b = wordy[rng.random_range(0..wordy.len())];
        let merged = format!("{}{}", tokens[a], tokens[b]);
        if merged.chars().count() > 10
            || merged.chars().skip(1).any(|c| c == 'Ġ')
            || seen.contains(&merged)
        {
            continue;
        }
        merges.push((tokens[a].clone(), tokens[b].clone()));
        seen.insert(merged.clone());
        wordy.push(tokens.len());
        tokens.push(merged);
    }
    let vocab: tokenizers::models::bpe::Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| fail(format!("cannot build the synthetic BPE: {e}")))?;
    let mut tk = tokenizers::Tokenizer::new(bpe);
    tk.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
    tk.with_decoder(Some(ByteLevelDecoder::default()));
    tk.with_post_processor(Some(ByteLevel::new(false, true, true)));
    tk.add_special_tokens([AddedToken::from(end, true)])
        .map_err(|e| fail(format!("cannot add {end}: {e}")))?;
    tk.save(path, false)
        .map_err(|e| fail(format!("cannot write: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_tokenizer_round_trips_text_and_ends_with_eos() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        write_synthetic(&path, 2000, 7, "<|endoftext|>").unwrap();
        let tk = Tokenizer::from_file(&path).unwrap();
        assert_eq!(tk.token_id("<|endoftext|>"), Some(1999));
        assert_eq!(tk.vocab_size(), 2000);
        let text = "Profiling says why; benchmarking says how. Ünïcödé ✓";
        let ids = tk.encode(text).unwrap();
        assert!(ids.iter().all(|&id| id < 2000));
        assert_eq!(tk.decode(&ids).unwrap(), text);
        let mut stream = tk.stream();
        let streamed: String = ids
            .iter()
            .filter_map(|&id| stream.push(id).unwrap())
            .collect();
        assert_eq!(streamed, text);
    }

    #[test]
    fn a_missing_tokenizer_names_its_file() {
        let err = Tokenizer::from_file(Path::new("/nonexistent/tokenizer.json"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("/nonexistent/tokenizer.json"), "{err}");
    }
}
