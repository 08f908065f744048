use std::path::{Path, PathBuf};

use super::*;

/// The fixtures `scripts/make-gguf-fixtures.py` writes with llama.cpp's converter and
/// `llama-quantize`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../llama/tests/fixtures/gguf")
        .join(name)
}

/// A small GGUF written here, byte by byte, to test what a writer can get wrong.
struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    fn header(version: u32, tensors: u64, kvs: u64) -> Self {
        let mut bytes = b"GGUF".to_vec();
        bytes.extend(version.to_le_bytes());
        bytes.extend(tensors.to_le_bytes());
        bytes.extend(kvs.to_le_bytes());
        Self { bytes }
    }
    fn string(&mut self, s: &str) -> &mut Self {
        self.bytes.extend((s.len() as u64).to_le_bytes());
        self.bytes.extend(s.as_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes.extend(v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend(v.to_le_bytes());
        self
    }
    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> &mut Self {
        self.string(name).u32(dims.len() as u32);
        for &d in dims {
            self.u64(d);
        }
        self.u32(ty).u64(offset)
    }
    fn pad_to(&mut self, align: usize) -> &mut Self {
        while !self.bytes.len().is_multiple_of(align) {
            self.bytes.push(0);
        }
        self
    }
    fn save(&self, dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, &self.bytes).unwrap();
        p
    }
}

/// Every metadata value type, an array of strings and a nested array, and two tensors (f32
/// and Q8_0) after a custom alignment.
fn every_value_type(alignment: u32) -> Writer {
    let mut w = Writer::header(3, 2, 17);
    w.string("general.alignment").u32(4).u32(alignment);
    w.string("u8").u32(0).bytes.push(200);
    w.string("i8").u32(1).bytes.push(0xFE);
    w.string("u16").u32(2).bytes.extend(65000u16.to_le_bytes());
    w.string("i16").u32(3).bytes.extend((-300i16).to_le_bytes());
    w.string("u32").u32(4).u32(4_000_000_000);
    w.string("i32").u32(5).bytes.extend((-7i32).to_le_bytes());
    w.string("f32").u32(6).bytes.extend(1.5f32.to_le_bytes());
    w.string("bool").u32(7).bytes.push(1);
    w.string("string").u32(8).string("héllo");
    w.string("u64").u32(10).u64(u64::MAX);
    w.string("i64").u32(11).bytes.extend((-9i64).to_le_bytes());
    w.string("f64").u32(12).bytes.extend(0.25f64.to_le_bytes());
    w.string("strings")
        .u32(9)
        .u32(8)
        .u64(2)
        .string("a")
        .string("bc");
    w.string("nested").u32(9).u32(9).u64(2);
    w.u32(4).u64(1).u32(1);
    w.u32(4).u64(2).u32(2).u32(3);
    w.string("empty").u32(9).u32(6).u64(0);
    w.string("general.architecture").u32(8).string("llama");
    let align = alignment as u64;
    w.tensor("v", &[3], 0, 0);
    w.tensor("q", &[32, 2], 8, 12u64.div_ceil(align) * align);
    w.pad_to(alignment as usize);
    // v: 3 f32 values, then padding to the alignment.
    for v in [1.0f32, -2.0, 3.5] {
        w.bytes.extend(v.to_le_bytes());
    }
    w.pad_to(alignment as usize);
    // q: two Q8_0 blocks, scales 0.5 and -2.
    for (d, base) in [(0.5f32, 0i8), (-2.0, 10)] {
        w.bytes.extend(half::f16::from_f32(d).to_le_bytes());
        for j in 0..32 {
            w.bytes.push((base + j as i8 - 16) as u8);
        }
    }
    w
}

#[test]
fn reads_every_value_type_arrays_and_a_custom_alignment() {
    let dir = tempfile::tempdir().unwrap();
    for alignment in [32u32, 64, 8] {
        let path = every_value_type(alignment).save(dir.path(), "all.gguf");
        let f = GgufFile::open(&path).unwrap();
        assert_eq!(f.version(), 3);
        assert_eq!(f.alignment(), alignment as u64);
        let m = f.metadata();
        assert_eq!(m["u8"], Value::U8(200));
        assert_eq!(m["i8"], Value::I8(-2));
        assert_eq!(m["u16"], Value::U16(65000));
        assert_eq!(m["i16"], Value::I16(-300));
        assert_eq!(m["u32"], Value::U32(4_000_000_000));
        assert_eq!(m["i32"], Value::I32(-7));
        assert_eq!(m["f32"], Value::F32(1.5));
        assert_eq!(m["bool"], Value::Bool(true));
        assert_eq!(f.get_str("string").unwrap(), "héllo");
        assert_eq!(f.get_u64("u64").unwrap(), u64::MAX);
        assert_eq!(m["i64"], Value::I64(-9));
        assert_eq!(f.get_f64("f64").unwrap(), 0.25);
        assert_eq!(
            m["strings"],
            Value::Array(vec![Value::String("a".into()), Value::String("bc".into())])
        );
        assert_eq!(
            m["nested"],
            Value::Array(vec![
                Value::Array(vec![Value::U32(1)]),
                Value::Array(vec![Value::U32(2), Value::U32(3)])
            ])
        );
        assert_eq!(m["empty"], Value::Array(vec![]));
        let (shape, v) = f.dequantize("v").unwrap();
        assert_eq!((shape, v), (vec![3], vec![1.0, -2.0, 3.5]));
        let (shape, q) = f.dequantize("q").unwrap();
        assert_eq!(shape, vec![2, 32]);
        assert_eq!(q[0], 0.5 * -16.0);
        assert_eq!(q[31], 0.5 * 15.0);
        assert_eq!(q[32], -2.0 * -6.0);
        assert_eq!(q[63], -2.0 * 25.0);
        // The wrong type for a key is named.
        let e = f.get_u64("string").unwrap_err().to_string();
        assert!(
            e.contains("all.gguf") && e.contains("string") && e.contains("not an integer"),
            "{e}"
        );
        let e = f.get("missing.key").unwrap_err().to_string();
        assert!(e.contains("missing.key"), "{e}");
    }
}

#[test]
fn a_broken_file_is_refused_naming_the_file_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let good = every_value_type(32).bytes;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "magic.gguf",
            [b"GGML".as_slice(), &good[4..]].concat(),
            "not a GGUF file",
        ),
        (
            "v1.gguf",
            [b"GGUF".as_slice(), &1u32.to_le_bytes(), &good[8..]].concat(),
            "version 1",
        ),
        ("header.gguf", good[..60].to_vec(), "truncated"),
        (
            "data.gguf",
            good[..good.len() - 10].to_vec(),
            "runs past the end of the file",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let e = GgufFile::open(&p).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(want), "{name}: {e}");
    }
    // A length larger than the file (a corrupt string length) is refused before allocating.
    let mut w = Writer::header(3, 0, 1);
    w.u64(u64::MAX / 2);
    let p = w.save(dir.path(), "length.gguf");
    let e = GgufFile::open(&p).unwrap_err().to_string();
    assert!(e.contains("more than the file holds"), "{e}");
    // A misaligned tensor offset.
    let mut w = Writer::header(3, 1, 0);
    w.tensor("t", &[4], 0, 4).pad_to(32);
    w.bytes.extend([0u8; 64]);
    let e = GgufFile::open(&w.save(dir.path(), "misaligned.gguf"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("tensor t") && e.contains("alignment 32"), "{e}");
    // A type the engine does not read: the file opens, the tensor is refused by name and type.
    let mut w = Writer::header(3, 1, 0);
    w.tensor("iq", &[256], 16, 0).pad_to(32);
    w.bytes.extend([0u8; 128]);
    let f = GgufFile::open(&w.save(dir.path(), "iq.gguf")).unwrap();
    let e = f.tensor("iq").unwrap_err().to_string();
    assert!(
        e.contains("iq.gguf") && e.contains("tensor iq") && e.contains("16 (iq2_xxs)"),
        "{e}"
    );
    // A row that is not whole blocks.
    let mut w = Writer::header(3, 1, 0);
    w.tensor("odd", &[48], 8, 0).pad_to(32);
    w.bytes.extend([0u8; 128]);
    let e = GgufFile::open(&w.save(dir.path(), "odd.gguf"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tensor odd") && e.contains("not whole q8_0 blocks"),
        "{e}"
    );
}

#[test]
fn reads_the_files_llama_cpps_writer_wrote() {
    let f = GgufFile::open(&fixture("tiny-llama-mixed.gguf")).unwrap();
    assert_eq!(f.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(f.get_u64("llama.block_count").unwrap(), 2);
    assert_eq!(f.get_u64("llama.attention.head_count_kv").unwrap(), 2);
    assert_eq!(f.alignment(), DEFAULT_ALIGNMENT);
    let types: Vec<(String, GgmlType)> = [
        "blk.0.attn_norm.weight",
        "blk.0.attn_q.weight",
        "blk.0.attn_k.weight",
        "blk.0.attn_v.weight",
        "blk.0.attn_output.weight",
        "output.weight",
    ]
    .iter()
    .map(|n| (n.to_string(), f.tensor(n).unwrap().1))
    .collect();
    use GgmlType::*;
    assert_eq!(
        types.iter().map(|t| t.1).collect::<Vec<_>>(),
        vec![F32, Q4_0, Q8_0, F16, BF16, F16]
    );
    let (shape, v) = f.dequantize("blk.1.ffn_down.weight").unwrap();
    assert_eq!(shape, vec![64, 160]);
    assert!(v.iter().all(|x| x.is_finite()) && v.iter().any(|&x| x != 0.0));

    // The data section holds exactly the tensors (each padded to the alignment at most); the
    // header before it holds the metadata, the tokenizer's vocabulary included.
    let data = f.tensor_bytes().unwrap();
    let section = std::fs::metadata(f.path()).unwrap().len() - f.data_start as u64;
    assert!(
        data <= section && section - data < 32 * f.tensors().len() as u64,
        "{data} of {section}"
    );

    let q1 = GgufFile::open(&fixture("tiny-qwen3-q1_0.gguf")).unwrap();
    let (info, ty, bytes) = q1.tensor("token_embd.weight").unwrap();
    assert_eq!((ty, info.shape()), (Q1_0, vec![512, 256]));
    assert_eq!(bytes.len(), 512 * 2 * 18);
    // Every matrix 1.125 bits a weight, the norms f32 (the Bonsai recipe at toy size).
    let (mut q1_bytes, mut norm_bytes) = (0u64, 0u64);
    for t in q1.tensors() {
        let b = t.ggml_type().unwrap().bytes_for(&t.dims).unwrap();
        match t.dims.len() {
            2 => q1_bytes += b,
            _ => norm_bytes += b,
        }
    }
    assert_eq!(q1.tensor_bytes().unwrap(), q1_bytes + norm_bytes);
    // A decode step's bytes leave out a lookup table, and only the tables named.
    let embd = Q1_0.bytes_for(&[256, 512]).unwrap();
    let except = |names: &[&str]| q1.tensor_bytes_except(names).unwrap();
    assert_eq!(except(&["token_embd.weight"]), q1_bytes + norm_bytes - embd);
    assert_eq!(except(&["no.such.tensor"]), q1_bytes + norm_bytes);
}

/// Q1_0 against the reference blocks the fixture script writes from ggml's definition (which
/// it checks byte for byte against the blocks llama-quantize wrote into the Q1_0 fixture).
#[test]
fn q1_0_blocks_match_the_reference_blocks() {
    let text = std::fs::read_to_string(fixture("q1_0-reference.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let blocks = json["blocks"].as_array().unwrap();
    assert!(blocks.len() >= 4);
    for b in blocks {
        let hex = b["bytes"].as_str().unwrap();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(bytes.len(), 18);
        let want: Vec<f32> = b["dequantized"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let got = crate::quant::dequantize(GgmlType::Q1_0, &bytes, 128).unwrap();
        assert_eq!(got, want, "{}", b["case"]);
        // The signs are the input's (>= 0 is a set bit, so -0.0 and 0.0 both give +d).
        let input = b["input"].as_array().unwrap();
        for (g, x) in got.iter().zip(input) {
            let x = x.as_f64().unwrap();
            assert_eq!(*g >= 0.0, x >= 0.0, "{}", b["case"]);
        }
    }
}
