//! The tokenizer the engine builds from a GGUF file's `tokenizer.ggml.*` metadata against the
//! `tokenizer.json` of the same checkpoint (both written by `scripts/make-gguf-fixtures.py`:
//! a SentencePiece BPE in the llama files, converted by transformers for the JSON; a byte-level
//! BPE with Qwen2's pre-tokenizer in the qwen2 and qwen3 files): the same ids for every text, the
//! same text back, and the chat template and end ids the metadata carries.

use std::path::PathBuf;

use engine::gguf::tokenizer::{chat_template, eos_ids, tokenizer};
use engine::gguf::GgufFile;
use engine::tokenizer::Tokenizer;

fn gguf_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf")
}

/// Texts that exercise what each tokenizer does differently: leading and repeated spaces,
/// newlines, digits, contractions, punctuation runs, characters outside the training text
/// (byte fallback, byte-level symbols), and special tokens written in the text. The two with
/// quotes and a full stop before a line break are split otherwise by GPT-2's pre-tokenizer than
/// by Qwen2's, into other ids: they tell the two apart.
const TEXTS: [&str; 12] = [
    "\"Quotes\", (brackets), [lists]",
    "the end.\nThe start",
    "Profiling says why; benchmarking says how.",
    " leading space and  two  spaces",
    "line one\nline two\n\n  indented\ttab",
    "Numbers: 128, 4096 and 151936; 3.14159",
    "It's what they'll say, isn't it? We'd've.",
    "!!!??? ... ---> {[(<>)]}",
    "Ünïcödé ✓ 日本語 🦀",
    "",
    "<|im_start|>user\nHi<|im_end|>",
    "<s>a sentence</s> <unk>",
];

fn pair(gguf: &str, json: &str) -> (Tokenizer, Tokenizer, GgufFile) {
    let file = GgufFile::open(&gguf_dir().join(gguf)).unwrap();
    let ours = tokenizer(&file)
        .unwrap()
        .expect("the fixture carries a tokenizer");
    let reference = Tokenizer::from_file(&gguf_dir().join(json)).unwrap();
    (ours, reference, file)
}

fn same_as_the_reference(ours: &Tokenizer, reference: &Tokenizer, name: &str) {
    assert_eq!(ours.vocab_size(), reference.vocab_size(), "{name}");
    for text in TEXTS {
        let ids = reference.encode(text).unwrap();
        assert_eq!(ours.encode(text).unwrap(), ids, "{name}: {text:?}");
        // With the tokens the tokenizer adds around a text (the llama files' BOS).
        assert_eq!(
            ours.encode_with_special_tokens(text).unwrap(),
            reference.encode_with_special_tokens(text).unwrap(),
            "{name}: {text:?} with special tokens"
        );
        assert_eq!(
            ours.decode(&ids).unwrap(),
            reference.decode(&ids).unwrap(),
            "{name}: {text:?}"
        );
        let mut stream = ours.stream();
        let streamed: String = ids
            .iter()
            .filter_map(|&id| stream.push(id).unwrap())
            .collect();
        assert_eq!(
            streamed,
            reference.decode(&ids).unwrap(),
            "{name}: {text:?}"
        );
    }
}

#[test]
fn sentencepiece_files_encode_and_decode_as_their_tokenizer_json() {
    for gguf in [
        "tiny-llama-q8_0.gguf",
        "tiny-llama-q4_0.gguf",
        "tiny-llama-mixed.gguf",
    ] {
        let (ours, reference, file) = pair(gguf, "tiny-llama-tokenizer.json");
        same_as_the_reference(&ours, &reference, gguf);
        // Byte fallback: a character the training text lacks is its UTF-8 bytes.
        let ids = ours.encode("日").unwrap();
        assert!(ids.len() >= 3, "{ids:?}");
        assert_eq!(ours.decode(&ids).unwrap(), "日");
        assert_eq!(ours.token_id("<s>"), Some(1));
        // add_bos_token is true, as in Llama 2's files: BOS first, and no EOS.
        let with = ours.encode_with_special_tokens("a sentence").unwrap();
        assert_eq!(with[0], 1, "{with:?}");
        assert_eq!(&with[1..], ours.encode("a sentence").unwrap());
        assert_eq!(eos_ids(&file), [2]);
        assert!(chat_template(&file).unwrap().is_none());
    }
}

#[test]
fn byte_level_files_encode_and_decode_as_their_tokenizer_json() {
    for gguf in ["tiny-qwen2-mixed.gguf", "tiny-qwen3-mixed.gguf"] {
        let (ours, reference, file) = pair(gguf, "tiny-qwen-tokenizer.json");
        same_as_the_reference(&ours, &reference, gguf);
        // The turn markers are one id each, and left out of decoded text.
        let ids = ours.encode("<|im_start|>user").unwrap();
        assert_eq!(ids[0], 1, "{ids:?}");
        assert_eq!(ours.decode(&ids).unwrap(), "user");
        // Qwen's files add nothing around a text.
        assert_eq!(
            ours.encode_with_special_tokens("user").unwrap(),
            ours.encode("user").unwrap()
        );
        assert_eq!(eos_ids(&file), [2]);
    }
    let file = GgufFile::open(&gguf_dir().join("tiny-qwen3-mixed.gguf")).unwrap();
    let t = chat_template(&file).unwrap().unwrap();
    assert!(t.source.contains("<|im_start|>") && t.source.contains("add_generation_prompt"));
    assert_eq!(t.eos_token.as_deref(), Some("<|im_end|>"));
    assert_eq!(t.bos_token.as_deref(), Some("<|im_start|>"));
    assert!(t.path.ends_with("tiny-qwen3-mixed.gguf"));
    let qwen2 = GgufFile::open(&gguf_dir().join("tiny-qwen2-mixed.gguf")).unwrap();
    assert!(chat_template(&qwen2).unwrap().is_none());
}

/// The converter always writes a tokenizer, so the file without one is a fixture with its
/// `tokenizer.ggml.model` and `tokenizer.ggml.eos_token_id` keys renamed (same lengths).
#[test]
fn a_file_without_a_tokenizer_gives_none() {
    let mut bytes = std::fs::read(gguf_dir().join("tiny-qwen3-q1_0.gguf")).unwrap();
    for (key, other) in [
        (&b"tokenizer.ggml.model"[..], &b"tokenizer.ggml.mxdel"[..]),
        (
            b"tokenizer.ggml.eos_token_id",
            b"tokenizer.ggml.eos_token_xx",
        ),
    ] {
        let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
        bytes[at..at + key.len()].copy_from_slice(other);
    }
    let path = std::env::temp_dir().join(format!("untokenized-{}.gguf", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let file = GgufFile::open(&path).unwrap();
    let (tk, eos) = (tokenizer(&file).unwrap(), eos_ids(&file));
    drop(file);
    std::fs::remove_file(&path).unwrap();
    assert!(tk.is_none());
    assert!(eos.is_empty());
    // The same file as written has both.
    let file = GgufFile::open(&gguf_dir().join("tiny-qwen3-q1_0.gguf")).unwrap();
    assert!(tokenizer(&file).unwrap().is_some());
    assert_eq!(eos_ids(&file), [2]);
}

/// A pre-tokenizer name the engine does not know is refused, naming it and the known ones,
/// rather than guessed (a wrong split gives other ids without an error).
#[test]
fn an_unknown_pre_tokenizer_is_refused_by_name() {
    let mut bytes = std::fs::read(gguf_dir().join("tiny-qwen2-mixed.gguf")).unwrap();
    // The value of tokenizer.ggml.pre: its key, the string type (8), the length 5, "qwen2".
    let mut key = Vec::new();
    key.extend(b"tokenizer.ggml.pre");
    key.extend(8u32.to_le_bytes());
    key.extend(5u64.to_le_bytes());
    key.extend(b"qwen2");
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    let end = at + key.len();
    bytes[end - 5..end].copy_from_slice(b"qwen9");
    // The crate has no temp-dir helper; the process id keeps parallel runs apart.
    let path = std::env::temp_dir().join(format!("renamed-{}.gguf", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let file = GgufFile::open(&path).unwrap();
    let e = tokenizer(&file).err().unwrap().to_string();
    drop(file);
    std::fs::remove_file(&path).unwrap();
    assert!(
        e.contains("renamed-") && e.contains("tokenizer.ggml.pre is qwen9") && e.contains("qwen2"),
        "{e}"
    );
}

/// `tokenizer.ggml.add_bos_token` decides whether BOS comes first: the llama file with the
/// value false has none, and with the key gone it has one again (llama.cpp's default for a
/// SentencePiece model).
#[test]
fn add_bos_token_decides_whether_bos_comes_first() {
    let original = std::fs::read(gguf_dir().join("tiny-llama-q8_0.gguf")).unwrap();
    let key = b"tokenizer.ggml.add_bos_token";
    let at = original.windows(key.len()).position(|w| w == key).unwrap();
    // After the key: its type (7, bool) and the one byte of its value.
    let value = at + key.len() + 4;
    assert_eq!(original[value - 4..value], 7u32.to_le_bytes());
    assert_eq!(original[value], 1);
    let mut no_bos = original.clone();
    no_bos[value] = 0;
    let mut no_key = original.clone();
    no_key[at + key.len() - 1] = b'x';
    for (bytes, bos) in [(no_bos, false), (no_key, true), (original, true)] {
        let path = std::env::temp_dir().join(format!("bos-{bos}-{}.gguf", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let file = GgufFile::open(&path).unwrap();
        let ours = tokenizer(&file).unwrap().unwrap();
        drop(file);
        std::fs::remove_file(&path).unwrap();
        let ids = ours.encode_with_special_tokens("a sentence").unwrap();
        let plain = ours.encode("a sentence").unwrap();
        match bos {
            true => assert_eq!(ids, [&[1][..], &plain].concat()),
            false => assert_eq!(ids, plain),
        }
    }
}
