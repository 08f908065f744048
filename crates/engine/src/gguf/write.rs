//! A GGUF writer that streams: the header, the metadata and the tensor table from a [`Plan`],
//! then each tensor's bytes as a generator writes them, one tensor at a time, so that a file of
//! gigabytes (Bonsai 8B's shapes in `Q1_0`) is written without holding its weights, quantized
//! or not, in memory.
//!
//! The layout is the one [`super::GgufFile`] reads (ggml's `docs/gguf.md`, version 3): the magic,
//! the version, the counts, the metadata, the tensor table with each tensor's offset from the
//! start of the data section, padding to the alignment, then the data, each tensor starting at
//! a multiple of the alignment. A plan knows every size before a byte is written
//! ([`Plan::file_bytes`]), so a caller can check memory and disk from it alone.
//!
//! The writer writes where it is told; a cache that must never hold a half-written file writes
//! into a folder made in one step (`output::write_dir`, as the synthetic checkpoints are).

use std::io::Write;
use std::path::Path;

use super::{GgmlType, Value, DEFAULT_ALIGNMENT};
use crate::error::{Error, Result};

/// The GGUF version this writer writes (llama.cpp's current one).
pub const VERSION: u32 = 3;

/// Files at least this large get a progress bar while they are written.
const PROGRESS_FROM: u64 = 64 << 20;

/// One tensor of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorPlan {
    pub name: String,
    /// As GGUF stores them: innermost (the row length) first.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
}

impl TensorPlan {
    /// A tensor of PyTorch shape `shape` (outermost first, `[rows, row length]` for a matrix).
    pub fn new(name: impl Into<String>, shape: &[u64], ty: GgmlType) -> Self {
        Self {
            name: name.into(),
            dims: shape.iter().rev().copied().collect(),
            ty,
        }
    }

    /// The bytes its data takes, or why it cannot be stored in its type.
    pub fn bytes(&self) -> std::result::Result<u64, String> {
        self.ty
            .bytes_for(&self.dims)
            .map_err(|e| format!("tensor {}: {e}", self.name))
    }
}

/// What a file will hold: its metadata (written in this order) and its tensors.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorPlan>,
}

impl Plan {
    /// The alignment the file declares (`general.alignment`), else GGUF's default.
    pub fn alignment(&self) -> u64 {
        self.metadata
            .iter()
            .find(|(k, _)| k == "general.alignment")
            .and_then(|(_, v)| v.as_u64())
            .unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// Every tensor's offset from the start of the data section, and the section's size.
    pub fn offsets(&self) -> std::result::Result<(Vec<u64>, u64), String> {
        let align = self.alignment();
        let mut offsets = Vec::with_capacity(self.tensors.len());
        let mut at = 0u64;
        for t in &self.tensors {
            offsets.push(at);
            at = (at + t.bytes()?).div_ceil(align) * align;
        }
        Ok((offsets, at))
    }

    /// The bytes every tensor's data takes (without padding): what [`super::GgufFile::tensor_bytes`]
    /// will read back from the written file's table.
    pub fn tensor_bytes(&self) -> std::result::Result<u64, String> {
        self.tensors.iter().map(TensorPlan::bytes).sum()
    }

    /// The header (everything before the data section), padding included.
    pub fn header(&self) -> std::result::Result<Vec<u8>, String> {
        let align = self.alignment();
        if align == 0 || !align.is_power_of_two() {
            return Err(format!(
                "general.alignment is {align}: it must be a power of two"
            ));
        }
        let (offsets, _) = self.offsets()?;
        let mut h = Vec::new();
        h.extend(b"GGUF");
        h.extend(VERSION.to_le_bytes());
        h.extend((self.tensors.len() as u64).to_le_bytes());
        h.extend((self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_string(&mut h, key);
            h.extend(type_code(value).to_le_bytes());
            put_value(&mut h, value).map_err(|e| format!("metadata {key}: {e}"))?;
        }
        for (t, offset) in self.tensors.iter().zip(offsets) {
            if t.dims.len() > 4 {
                return Err(format!(
                    "tensor {} has {} dimensions (GGUF allows 4)",
                    t.name,
                    t.dims.len()
                ));
            }
            put_string(&mut h, &t.name);
            h.extend((t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                h.extend(d.to_le_bytes());
            }
            h.extend(t.ty.code().to_le_bytes());
            h.extend(offset.to_le_bytes());
        }
        let padded = (h.len() as u64).div_ceil(align) * align;
        h.resize(padded as usize, 0);
        Ok(h)
    }

    /// The size of the file [`write`] makes of this plan.
    pub fn file_bytes(&self) -> std::result::Result<u64, String> {
        Ok(self.header()?.len() as u64 + self.offsets()?.1)
    }
}

/// Writes `plan` to `out`: the header, then each tensor's data as `fill` writes it (exactly the
/// tensor's size, checked), padded to the alignment. `progress` is told the bytes written.
pub fn write_to(
    out: &mut dyn Write,
    plan: &Plan,
    fill: &mut dyn FnMut(&TensorPlan, &mut dyn Write) -> std::io::Result<()>,
    progress: &mut dyn FnMut(u64),
) -> std::result::Result<(), WriteError> {
    let header = plan.header().map_err(WriteError::Plan)?;
    out.write_all(&header)?;
    progress(header.len() as u64);
    let align = plan.alignment();
    for t in &plan.tensors {
        let size = t.bytes().map_err(WriteError::Plan)?;
        let mut counted = Counted {
            inner: &mut *out,
            written: 0,
            progress: &mut *progress,
        };
        fill(t, &mut counted)?;
        if counted.written != size {
            return Err(WriteError::Plan(format!(
                "the generator wrote {} bytes for tensor {}, whose {} data takes {size}",
                counted.written, t.name, t.ty
            )));
        }
        let pad = (size.div_ceil(align) * align - size) as usize;
        out.write_all(&vec![0u8; pad])?;
        progress(pad as u64);
    }
    out.flush()?;
    Ok(())
}

/// Writes `plan` to the file `path` (created or replaced), with a progress bar on the terminal
/// for a large one. Not atomic by itself: see the module's note.
pub fn write(
    path: &Path,
    plan: &Plan,
    fill: &mut dyn FnMut(&TensorPlan, &mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let total = plan.file_bytes().map_err(|e| Error::Weights {
        path: path.to_owned(),
        message: e,
    })?;
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let bar = (total >= PROGRESS_FROM).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        bar.set_message(format!("writing {name}"));
        bar
    });
    let written = write_to(&mut out, plan, fill, &mut |n| {
        if let Some(bar) = &bar {
            bar.inc(n)
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    match written {
        Ok(()) => out
            .into_inner()
            .map_err(|e| Error::io(path, e.into_error()))?
            .sync_all()
            .map_err(|e| Error::io(path, e)),
        Err(WriteError::Io(e)) => Err(Error::io(path, e)),
        Err(WriteError::Plan(message)) => Err(Error::Weights {
            path: path.to_owned(),
            message,
        }),
    }
}

/// Why [`write_to`] stopped.
#[derive(Debug)]
pub enum WriteError {
    /// The plan or the generator is wrong (a row of partial blocks, a tensor of the wrong size).
    Plan(String),
    Io(std::io::Error),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Plan(m) => f.write_str(m),
            WriteError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Counts what a tensor's generator writes, and reports it.
struct Counted<'a> {
    inner: &'a mut dyn Write,
    written: u64,
    progress: &'a mut dyn FnMut(u64),
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        (self.progress)(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// GGUF's code for the value's type (the reader's `Reader::value` table).
fn type_code(v: &Value) -> u32 {
    match v {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::String(_) => 8,
        Value::Array(_) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

fn put_value(out: &mut Vec<u8>, v: &Value) -> std::result::Result<(), String> {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.extend(x.to_le_bytes()),
        Value::U16(x) => out.extend(x.to_le_bytes()),
        Value::I16(x) => out.extend(x.to_le_bytes()),
        Value::U32(x) => out.extend(x.to_le_bytes()),
        Value::I32(x) => out.extend(x.to_le_bytes()),
        Value::F32(x) => out.extend(x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_string(out, s),
        Value::U64(x) => out.extend(x.to_le_bytes()),
        Value::I64(x) => out.extend(x.to_le_bytes()),
        Value::F64(x) => out.extend(x.to_le_bytes()),
        Value::Array(items) => {
            // GGUF arrays hold one type; an empty one is written as an array of u8.
            let elem = items.first().map(type_code).unwrap_or(0);
            if let Some(other) = items.iter().find(|i| type_code(i) != elem) {
                return Err(format!(
                    "an array of {} holds a {}: GGUF arrays hold one type",
                    items[0].type_name(),
                    other.type_name()
                ));
            }
            out.extend(elem.to_le_bytes());
            out.extend((items.len() as u64).to_le_bytes());
            for item in items {
                put_value(out, item)?;
            }
        }
    }
    Ok(())
}

/// `Q1_0` blocks made on the fly: each block the scale `scale` (as f16) and 16 bytes of sign
/// bits from a seeded generator, so the same seed gives the same bytes on every machine. Writes
/// `rows × k` weights' blocks to `out`, one row at a time.
pub fn write_q1_0_random(
    out: &mut dyn Write,
    rows: u64,
    k: u64,
    scale: f32,
    seed: u64,
) -> std::io::Result<()> {
    let block = GgmlType::Q1_0.block_size() as u64;
    if !k.is_multiple_of(block) {
        return Err(std::io::Error::other(format!(
            "rows of {k} are not whole Q1_0 blocks of {block}"
        )));
    }
    let d = half::f16::from_f32(scale).to_le_bytes();
    let mut bits = SplitMix64(seed);
    let mut row = Vec::with_capacity((k / block) as usize * GgmlType::Q1_0.type_size());
    for _ in 0..rows {
        row.clear();
        for _ in 0..k / block {
            row.extend(d);
            row.extend(bits.next().to_le_bytes());
            row.extend(bits.next().to_le_bytes());
        }
        out.write_all(&row)?;
    }
    Ok(())
}

/// SplitMix64 (Steele, Lea and Flood): a generator written out here rather than taken from
/// `rand`, so that a cached synthetic file's bytes never change with a dependency's version,
/// and fast enough that a gigabyte of sign bits costs less than writing it.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    #[allow(
        clippy::should_implement_trait,
        reason = "a generator of numbers, not an iterator: it never ends"
    )]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgufFile;

    fn tiny_plan() -> Plan {
        Plan {
            metadata: vec![
                ("general.architecture".into(), Value::String("qwen3".into())),
                ("qwen3.block_count".into(), Value::U32(1)),
                ("qwen3.rope.freq_base".into(), Value::F32(1e6)),
                ("general.alignment".into(), Value::U32(64)),
                (
                    "tokenizer.ggml.tokens".into(),
                    Value::Array(vec![Value::String("a".into()), Value::String("b".into())]),
                ),
                (
                    "nested".into(),
                    Value::Array(vec![Value::Array(vec![Value::I32(-1), Value::I32(2)])]),
                ),
                ("flag".into(), Value::Bool(true)),
                ("wide".into(), Value::U64(1 << 40)),
            ],
            tensors: vec![
                TensorPlan::new("blk.0.attn_norm.weight", &[3], GgmlType::F32),
                TensorPlan::new("blk.0.attn_q.weight", &[5, 256], GgmlType::Q1_0),
                TensorPlan::new("output.weight", &[2, 128], GgmlType::Q1_0),
            ],
        }
    }

    fn fill(t: &TensorPlan, out: &mut dyn Write) -> std::io::Result<()> {
        match t.ty {
            GgmlType::F32 => {
                for v in [1.0f32, -2.0, 0.5] {
                    out.write_all(&v.to_le_bytes())?;
                }
                Ok(())
            }
            _ => write_q1_0_random(out, t.dims[1], t.dims[0], 0.25, t.dims[1]),
        }
    }

    #[test]
    fn what_is_written_reads_back_metadata_table_and_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny.gguf");
        let plan = tiny_plan();
        write(&path, &plan, &mut fill).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            plan.file_bytes().unwrap()
        );
        let file = GgufFile::open(&path).unwrap();
        assert_eq!((file.version(), file.alignment()), (3, 64));
        for (k, v) in &plan.metadata {
            assert_eq!(file.metadata().get(k), Some(v), "{k}");
        }
        let (offsets, _) = plan.offsets().unwrap();
        // 12 bytes of f32 padded to 64; then 5 rows of two 18-byte blocks: 64 + 180, padded to 256.
        assert_eq!(offsets, [0, 64, 256], "each tensor at a multiple of 64");
        for (t, offset) in plan.tensors.iter().zip(offsets) {
            let info = file.tensor_info(&t.name).unwrap();
            assert_eq!(
                (&info.dims, info.type_code, info.offset),
                (&t.dims, t.ty.code(), offset)
            );
        }
        assert_eq!(file.tensor_bytes().unwrap(), plan.tensor_bytes().unwrap());
        let (shape, norm) = file.dequantize("blk.0.attn_norm.weight").unwrap();
        assert_eq!((shape, norm), (vec![3], vec![1.0, -2.0, 0.5]));
        // The blocks as generated: the scale, then the seed's bits.
        let (_, _, bytes) = file.tensor("blk.0.attn_q.weight").unwrap();
        let mut expected = Vec::new();
        write_q1_0_random(&mut expected, 5, 256, 0.25, 5).unwrap();
        assert_eq!(bytes, expected.as_slice());
        assert_eq!(bytes.len(), 5 * 2 * 18);
        let (_, q) = file.dequantize("output.weight").unwrap();
        assert!(q.iter().all(|&v| v == 0.25 || v == -0.25));
        let positive = q.iter().filter(|&&v| v > 0.0).count();
        assert!(
            (64..192).contains(&positive),
            "random signs, not all one: {positive} of 256"
        );
    }

    #[test]
    fn a_generator_that_writes_the_wrong_size_or_a_partial_block_is_refused() {
        let plan = tiny_plan();
        let e = write_to(
            &mut Vec::new(),
            &plan,
            &mut |t, out| match t.ty {
                GgmlType::F32 => out.write_all(&[0u8; 8]),
                _ => fill(t, out),
            },
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("wrote 8 bytes for tensor blk.0.attn_norm.weight") && e.contains("takes 12"),
            "{e}"
        );
        let bad = Plan {
            tensors: vec![TensorPlan::new("x", &[2, 100], GgmlType::Q1_0)],
            ..Plan::default()
        };
        let e = bad.file_bytes().unwrap_err();
        assert!(
            e.contains("tensor x") && e.contains("not whole q1_0 blocks"),
            "{e}"
        );
        let mixed = Plan {
            metadata: vec![(
                "k".into(),
                Value::Array(vec![Value::U32(1), Value::String("x".into())]),
            )],
            ..Plan::default()
        };
        assert!(mixed.header().unwrap_err().contains("metadata k"));
    }

    #[test]
    fn the_progress_counts_every_byte_of_the_file() {
        let plan = tiny_plan();
        let mut out = Vec::new();
        let mut told = 0;
        write_to(&mut out, &plan, &mut fill, &mut |n| told += n).unwrap();
        assert_eq!(told, out.len() as u64);
        assert_eq!(told, plan.file_bytes().unwrap());
    }
}
