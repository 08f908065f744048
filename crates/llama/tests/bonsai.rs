//! The synthetic Bonsai 8B (`llama::synthetic_gguf`), the stand-in for `prism-ml/Bonsai-8B-gguf`:
//! - its header, read back by the engine's GGUF reader from a sparse file of the plan's size
//!   (no gigabyte written): Qwen3-8B's exact shapes, 36 layers, 399 tensors, every matrix Q1_0,
//!   about 1.15 GB for 8.19 billion weights, and the memory check made from that header alone;
//! - its tokenizer: exactly 151,936 ids, every merge's parts and result tokens, Qwen's special
//!   ids, accepted by `engine::gguf::tokenizer` and round-tripping text;
//! - the same recipe at toy size written whole, loaded on the engine with every matrix a Q1_0
//!   row, and run: finite logits through its layers;
//! - the offline stand-in: `prism-ml/Bonsai-8B-gguf` with the Hub out of reach and nothing
//!   cached gives the synthetic file with the notice the other stand-ins give.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use engine::cpu::KernelPath;
use engine::gguf::{GgmlType, GgufFile};
use engine::{CausalLm, Logits};
use llama::synthetic_gguf::{GgufShape, BONSAI_8B, BONSAI_TINY};

/// The plan's header, then zeros to the plan's size as a hole in a sparse file: what the reader
/// and every check made from the header see, without a gigabyte on the disk.
fn header_only(shape: &GgufShape, dir: &Path) -> PathBuf {
    let plan = shape.plan();
    let path = dir.join(shape.file_name());
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&plan.header().unwrap()).unwrap();
    f.set_len(plan.file_bytes().unwrap()).unwrap();
    path
}

#[test]
fn bonsai_8bs_header_has_qwen3_8bs_shapes_every_matrix_q1_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = header_only(&BONSAI_8B, dir.path());
    let file = GgufFile::open(&path).unwrap();
    let cfg = llama::gguf::config(&file).unwrap();
    assert_eq!(cfg.family, llama::Family::Qwen3);
    assert_eq!(
        (
            cfg.num_hidden_layers,
            cfg.hidden_size,
            cfg.intermediate_size,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
            cfg.vocab_size
        ),
        (36, 4096, 12288, 32, 8, 128, 151_936)
    );
    assert_eq!((cfg.rope_theta, cfg.rms_norm_eps as f32), (1e6, 1e-6));
    assert!(
        !cfg.tie_word_embeddings && cfg.qk_norm && !cfg.qkv_bias,
        "{cfg:?}"
    );
    // The embeddings, 36 layers of 7 matrices and 4 norms, the final norm, the head.
    assert_eq!(file.tensors().len(), 1 + 36 * 11 + 2);
    for t in file.tensors() {
        let ty = t.ggml_type().unwrap();
        match t.dims.len() {
            2 => assert_eq!(ty, GgmlType::Q1_0, "{}", t.name),
            _ => assert_eq!(ty, GgmlType::F32, "{}", t.name),
        }
    }
    let shape = |n: &str| file.tensor_info(n).unwrap().shape();
    assert_eq!(shape("token_embd.weight"), [151_936, 4096]);
    assert_eq!(shape("output.weight"), [151_936, 4096]);
    assert_eq!(shape("blk.35.attn_k.weight"), [1024, 4096]);
    assert_eq!(shape("blk.0.ffn_down.weight"), [4096, 12288]);
    assert_eq!(shape("blk.7.attn_q_norm.weight"), [128]);
    // 8.19 billion weights; 18 bytes a block of 128 (1.125 bits a weight), norms f32 beside.
    assert_eq!(cfg.parameters(), 8_190_735_360);
    assert_eq!(BONSAI_8B.parameters(), cfg.parameters() as u64);
    let bytes = file.tensor_bytes().unwrap();
    let matrices = cfg.parameters() as u64 - (36 * (2 * 4096 + 2 * 128) + 4096);
    assert_eq!(
        bytes,
        matrices / 128 * 18 + (36 * (2 * 4096 + 2 * 128) + 4096) * 4
    );
    assert!((1.14e9..1.16e9).contains(&(bytes as f64)), "{bytes}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        BONSAI_8B.plan().file_bytes().unwrap()
    );
    assert_eq!(llama::gguf::stored_types(&path).unwrap(), "q1_0");
    assert!(llama::gguf::runs_on_engine(&path).unwrap());
}

#[test]
fn a_machine_that_cannot_hold_bonsai_8b_is_refused_from_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let file = GgufFile::open(&header_only(&BONSAI_8B, dir.path())).unwrap();
    let cfg = llama::gguf::config(&file).unwrap();
    let (needed, detail) = llama::gguf::memory_need(
        file.tensor_bytes().unwrap(),
        cfg.vocab_size,
        cfg.hidden_size,
    );
    // The stand-in's check, made from its plan before it is written, says the same.
    assert_eq!(
        llama::source::stand_in_need(&BONSAI_8B).unwrap(),
        (needed, detail.clone())
    );
    // 1.07 GiB as stored, twice while laid out, and 2.32 GiB of f32 embeddings for the lookup.
    assert!(
        detail.contains("1.1 GiB of weights as stored")
            && detail.contains("2.3 GiB of f32 token embeddings"),
        "{detail}"
    );
    let e = engine::memory::fits("Bonsai-8B", needed, &detail, 3 << 30)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("about 4.5 GiB while loading") && e.contains("3.0 GiB free"),
        "{e}"
    );
    assert!(engine::memory::fits("Bonsai-8B", needed, &detail, 5 << 30).is_ok());
}

#[test]
fn bonsai_8bs_tokenizer_has_151936_ids_valid_merges_and_qwens_special_tokens() {
    let vocab = BONSAI_8B.vocabulary();
    assert_eq!((vocab.tokens.len(), vocab.types.len()), (151_936, 151_936));
    let ids: HashSet<&str> = vocab.tokens.iter().map(String::as_str).collect();
    assert_eq!(ids.len(), 151_936, "every token once");
    assert_eq!(vocab.merges.len(), 151_643 - 256);
    for m in &vocab.merges {
        let (a, b) = m.split_once(' ').unwrap();
        assert!(
            ids.contains(a) && ids.contains(b) && ids.contains(format!("{a}{b}").as_str()),
            "{m}"
        );
    }
    assert_eq!(vocab.tokens[0], "!");
    assert_eq!(vocab.tokens[151_643], "<|endoftext|>");
    assert_eq!(vocab.tokens[151_645], "<|im_end|>");
    assert_eq!(vocab.tokens[151_668], "</think>");
    assert_eq!(vocab.tokens[151_935], "[PAD151935]");

    let dir = tempfile::tempdir().unwrap();
    let file = GgufFile::open(&header_only(&BONSAI_8B, dir.path())).unwrap();
    let tk = engine::gguf::tokenizer::tokenizer(&file).unwrap().unwrap();
    assert_eq!(tk.vocab_size(), 151_936);
    assert_eq!(tk.token_id("<|im_start|>"), Some(151_644));
    let text = "Profiling says why; benchmarking says how. Ünïcödé ✓";
    let ids = tk.encode(text).unwrap();
    assert!(ids.len() < text.len(), "merged tokens, not bytes: {ids:?}");
    assert_eq!(tk.decode(&ids).unwrap(), text);
    let chat = tk.encode("<|im_start|>user\nhi<|im_end|>").unwrap();
    assert_eq!((chat[0], *chat.last().unwrap()), (151_644, 151_645));
    assert_eq!(engine::gguf::tokenizer::eos_ids(&file), [151_645]);
    let template = engine::gguf::tokenizer::chat_template(&file)
        .unwrap()
        .unwrap();
    assert!(template.source.contains("<|im_start|>"));
    assert_eq!(template.eos_token.as_deref(), Some("<|im_end|>"));
}

#[test]
fn the_recipe_at_toy_size_loads_with_q1_0_rows_and_runs_finite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    BONSAI_TINY.write(&path).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        BONSAI_TINY.plan().file_bytes().unwrap()
    );
    // Written twice, the same bytes: the signs are seeded.
    let again = dir.path().join("again.gguf");
    BONSAI_TINY.write(&again).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(&again).unwrap()
    );

    let file = GgufFile::open(&path).unwrap();
    let (_, q) = file.dequantize("blk.0.ffn_down.weight").unwrap();
    // One scale, 1/√256 (exact in f16), and both signs.
    assert!(q.iter().all(|&v| v.abs() == 1.0 / 16.0), "±1/√k");
    assert!(q.iter().any(|&v| v > 0.0) && q.iter().any(|&v| v < 0.0));
    let loaded = llama::gguf::load_for_generation(
        &path,
        &candle_core::Device::Cpu,
        KernelPath::resolve(None).unwrap(),
    )
    .unwrap();
    assert_eq!(loaded.tokenizer.unwrap().vocab_size(), 1024);
    let model = loaded.model;
    let mut cache = model.new_cache(8);
    let logits = model
        .forward_one(&[1, 2, 3, 4], &mut cache, Logits::AllPositions)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    assert_eq!(logits.len(), 4 * 1024);
    assert!(logits.iter().all(|v| v.is_finite()));
    let largest = logits.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(
        (0.1..20.0).contains(&largest),
        "logits of size about 1, not vanishing or exploding: {largest}"
    );
}

#[test]
fn offline_bonsai_8b_is_replaced_by_its_stand_in_with_a_notice() {
    let hf = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    // Each test of this file runs in its own process under nextest; no other test here reads
    // these variables.
    std::env::set_var("HF_HUB_OFFLINE", "1");
    std::env::set_var("HF_HOME", hf.path());
    std::env::set_var("COURSE_CACHE", cache.path());
    // The stand-in as if written before (its header in a sparse file of its size), so that
    // this test does not write a gigabyte: found in the cache, not written again.
    let folder = cache.path().join(BONSAI_8B.cache_name());
    std::fs::create_dir_all(&folder).unwrap();
    let cached = header_only(&BONSAI_8B, &folder);
    let mut said = Vec::new();
    let got = llama::source::gguf_or_stand_in(llama::source::BONSAI_8B_REPO, None, &mut |n| {
        said.push(n.to_string())
    });
    match got {
        Ok(path) => {
            assert_eq!(path, Some(cached));
            assert_eq!(said.len(), 1, "{said:?}");
            assert!(
                said[0].contains("cannot get prism-ml/Bonsai-8B-gguf from the Hugging Face Hub (HF_HUB_OFFLINE is set)")
                    && said[0].contains("using synthetic-bonsai-8b")
                    && said[0].contains("timings are real, outputs are not"),
                "{}",
                said[0]
            );
        }
        // A machine with less than about 4.5 GiB free refuses it, before anything is written.
        Err(e) => assert!(e.to_string().contains("synthetic-bonsai-8b holds"), "{e}"),
    }
    // Another repository out of reach is not replaced: the safetensors path says what is missing.
    let mut said: Vec<String> = Vec::new();
    assert_eq!(
        llama::source::gguf_or_stand_in("org/other-gguf", None, &mut |n| said.push(n.into()))
            .unwrap(),
        None
    );
    assert!(said.is_empty());
}

#[test]
fn a_synthetic_gguf_is_named_on_the_command_line_and_written_once_into_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("COURSE_CACHE", cache.path());
    let mut said = Vec::new();
    let path = llama::source::gguf_or_stand_in("synthetic-bonsai-tiny", None, &mut |n| {
        said.push(n.to_string())
    })
    .unwrap()
    .unwrap();
    assert!(
        path.starts_with(cache.path().join(BONSAI_TINY.cache_name())),
        "{}",
        path.display()
    );
    assert!(
        BONSAI_TINY
            .cache_name()
            .contains("l2-e128-f256-h4-kv2-v1024-q1_0"),
        "the shape in the name"
    );
    assert_eq!(said.len(), 1);
    assert!(
        said[0].starts_with("writing synthetic-bonsai-tiny once into"),
        "{said:?}"
    );
    let mut said = Vec::new();
    let again = llama::source::gguf_or_stand_in("synthetic-bonsai-tiny", None, &mut |n| {
        said.push(n.to_string())
    })
    .unwrap();
    assert_eq!((again, said.len()), (Some(path), 0), "read from the cache");
    let e = llama::source::gguf_or_stand_in("synthetic-bonsai-tiny", Some("x.gguf"), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("--file x.gguf"), "{e}");
}
