//! The engine's own GGUF reader: the header, every metadata value, the tensor table and the
//! tensors' bytes, memory-mapped, as llama.cpp writes them (format version 2 and 3).
//!
//! Why not candle's: candle 0.11's `gguf_file` refuses a whole file when one tensor has a type
//! it does not know ("unknown dtype for tensor 41" for `Q1_0`, the 1-bit type of the Bonsai
//! models), before returning anything. This reader knows the types the engine runs
//! ([`GgmlType`]) and refuses a tensor of another type only when that tensor is asked for,
//! naming it.
//!
//! Layout (ggml's `docs/gguf.md`): the magic `GGUF`, a `u32` version, the tensor count and the
//! metadata count (`u64` each); the metadata as key (a string), value type (`u32`), value; the
//! tensor table as name, number of dimensions (`u32`), the dimensions (`u64` each, innermost
//! first), the type (`u32`) and the offset of its data (`u64`, from the start of the data
//! section); then padding to `general.alignment` (32 when absent) and the data section.
//! Strings are a `u64` length then UTF-8 bytes; everything is little-endian.
//!
//! [`write`] writes that layout, streaming each tensor's data from a generator (the synthetic
//! Bonsai 8B, a gigabyte of `Q1_0` blocks, is written without holding it).

pub mod tokenizer;
pub mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::ggml_type::GgmlType;

/// How a model loaded from a GGUF holds the file's quantized matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// As stored, multiplied by the quantized kernels.
    Quantized,
    /// Dequantized to f32 at load (the same values, dense products): the reference the
    /// quantized products are held to in the parity tests.
    Dequantized,
}

use crate::error::{Error, Result};

/// The alignment of the data section and of every tensor's data when the file names none.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// One metadata value, of any of GGUF's thirteen value types.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    /// Every element of one type (GGUF arrays are homogeneous; nested arrays are allowed).
    Array(Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// The value as an unsigned integer, where it is a non-negative integer of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a float, where it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// GGUF's name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::U8(_) => "uint8",
            Value::I8(_) => "int8",
            Value::U16(_) => "uint16",
            Value::I16(_) => "int16",
            Value::U32(_) => "uint32",
            Value::I32(_) => "int32",
            Value::F32(_) => "float32",
            Value::Bool(_) => "bool",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::U64(_) => "uint64",
            Value::I64(_) => "int64",
            Value::F64(_) => "float64",
        }
    }
}

/// One entry of the tensor table.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// As GGUF stores them: innermost (the row length) first.
    pub dims: Vec<u64>,
    /// The type code; [`TensorInfo::ggml_type`] reads it.
    pub type_code: u32,
    /// From the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    /// The tensor's type, or an error naming the tensor and its code.
    pub fn ggml_type(&self) -> std::result::Result<GgmlType, String> {
        GgmlType::from_code(self.type_code).ok_or_else(|| {
            format!(
                "tensor {} has type {} ({}), which this engine does not read (it reads {})",
                self.name,
                self.type_code,
                crate::ggml_type::known_name(self.type_code).unwrap_or("not a ggml type"),
                GgmlType::ALL.map(|t| t.name()).join(", ")
            )
        })
    }

    /// The number of values.
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// The shape as PyTorch writes it: outermost first (`[rows, row length]` for a matrix).
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }
}

/// An open GGUF file: its metadata and tensor table, and its bytes mapped read-only.
pub struct GgufFile {
    path: PathBuf,
    version: u32,
    metadata: BTreeMap<String, Value>,
    tensors: Vec<TensorInfo>,
    alignment: u64,
    /// Where the data section starts in the file.
    data_start: usize,
    map: memmap2::Mmap,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("tensors", &self.tensors.len())
            .field("metadata", &self.metadata.len())
            .finish()
    }
}

impl GgufFile {
    /// Opens and checks `path`: the header, every metadata value, the tensor table, and that
    /// each tensor's data lies inside the file at an aligned offset. No tensor data is read.
    pub fn open(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: the map is read-only; like every GGUF reader (llama.cpp's, candle's) we assume
        // no other process truncates the file while it is open (a truncated file would fault on
        // access, not give wrong values silently).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        Self::parse(path, map)
    }

    fn parse(path: &Path, map: memmap2::Mmap) -> Result<Self> {
        let bad = |message: String| Error::Weights {
            path: path.to_owned(),
            message,
        };
        let mut r = Reader {
            bytes: &map[..],
            pos: 0,
        };
        let magic = r.take(4).map_err(&bad)?;
        if magic != b"GGUF" {
            return Err(bad(format!(
                "not a GGUF file: it starts with {magic:?}, not the magic bytes \"GGUF\""
            )));
        }
        let version = r.u32().map_err(&bad)?;
        if !(2..=3).contains(&version) {
            return Err(bad(format!(
                "GGUF version {version}; this reader reads versions 2 and 3 (convert the file again with a current llama.cpp)"
            )));
        }
        let tensor_count = r.u64().map_err(&bad)?;
        let kv_count = r.u64().map_err(&bad)?;
        let mut metadata = BTreeMap::new();
        for i in 0..kv_count {
            let key = r
                .string()
                .map_err(|e| bad(format!("metadata entry {i}: key: {e}")))?;
            let ty = r
                .u32()
                .map_err(|e| bad(format!("metadata {key}: type: {e}")))?;
            let value = r
                .value(ty, 0)
                .map_err(|e| bad(format!("metadata {key}: {e}")))?;
            metadata.insert(key, value);
        }
        let mut tensors = Vec::new();
        for i in 0..tensor_count {
            let info = r
                .tensor_info()
                .map_err(|e| bad(format!("tensor table entry {i}: {e}")))?;
            tensors.push(info);
        }
        let alignment = match metadata.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_u64() {
                Some(a) if a > 0 && a.is_power_of_two() => a,
                _ => {
                    return Err(bad(format!(
                        "general.alignment is {v:?}: it must be a power of two"
                    )))
                }
            },
        };
        let data_start = (r.pos as u64).div_ceil(alignment) * alignment;
        let file = Self {
            path: path.to_owned(),
            version,
            metadata,
            tensors,
            alignment,
            data_start: data_start as usize,
            map,
        };
        for t in &file.tensors {
            file.check_tensor(t).map_err(&bad)?;
        }
        Ok(file)
    }

    /// That `t`'s data lies in the file, at an aligned offset, where its type is one we read.
    fn check_tensor(&self, t: &TensorInfo) -> std::result::Result<(), String> {
        if !t.offset.is_multiple_of(self.alignment) {
            return Err(format!(
                "tensor {} starts at offset {}, not a multiple of the alignment {}",
                t.name, t.offset, self.alignment
            ));
        }
        // A tensor of a type we do not read is checked when asked for.
        let Ok(ty) = t.ggml_type() else {
            return Ok(());
        };
        let size = ty
            .bytes_for(&t.dims)
            .map_err(|e| format!("tensor {}: {e}", t.name))?;
        let end = (self.data_start as u64)
            .checked_add(t.offset)
            .and_then(|s| s.checked_add(size));
        match end {
            Some(end) if end <= self.map.len() as u64 => Ok(()),
            _ => Err(format!(
                "tensor {} ({} bytes at offset {}) runs past the end of the file ({} bytes): truncated download?",
                t.name,
                size,
                t.offset,
                self.map.len()
            )),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    pub fn metadata(&self) -> &BTreeMap<String, Value> {
        &self.metadata
    }

    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The types `matrices` (tensors of this file) are stored in, by ggml's lower-case names,
    /// the type holding the most weights first, joined by `+`: `q8_0`, or `q4_0+q8_0` for
    /// llama-quantize's Q4_0 preset of a small model (its head falls back to Q8_0). What a
    /// report names as the weights' dtype, as a quantized row names its own.
    pub fn stored_types<'a>(
        &self,
        matrices: impl IntoIterator<Item = &'a TensorInfo>,
    ) -> Result<String> {
        let mut held: Vec<(GgmlType, u64)> = Vec::new();
        for t in matrices {
            let ty = t.ggml_type().map_err(|e| self.error(e))?;
            match held.iter_mut().find(|(h, _)| *h == ty) {
                Some((_, n)) => *n += t.elements(),
                None => held.push((ty, t.elements())),
            }
        }
        if held.is_empty() {
            return Err(self.error("has no matrix (no tensor of two dimensions)"));
        }
        // Stable: types holding as many weights keep the file's order.
        held.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        let names: Vec<&str> = held.iter().map(|(t, _)| t.name()).collect();
        Ok(names.join("+"))
    }

    /// An error about this file.
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::Weights {
            path: self.path.clone(),
            message: message.into(),
        }
    }

    /// The metadata value under `key`, or an error naming the file and the key.
    pub fn get(&self, key: &str) -> Result<&Value> {
        self.metadata
            .get(key)
            .ok_or_else(|| self.error(format!("no metadata key {key}")))
    }

    /// `key` as an unsigned integer.
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        let v = self.get(key)?;
        v.as_u64().ok_or_else(|| {
            self.error(format!(
                "metadata {key} is a {}, not an integer",
                v.type_name()
            ))
        })
    }

    /// `key` as a number.
    pub fn get_f64(&self, key: &str) -> Result<f64> {
        let v = self.get(key)?;
        v.as_f64().ok_or_else(|| {
            self.error(format!(
                "metadata {key} is a {}, not a number",
                v.type_name()
            ))
        })
    }

    /// `key` as a string.
    pub fn get_str(&self, key: &str) -> Result<&str> {
        let v = self.get(key)?;
        v.as_str().ok_or_else(|| {
            self.error(format!(
                "metadata {key} is a {}, not a string",
                v.type_name()
            ))
        })
    }

    /// The bytes every tensor's data takes, scales included, from the tensor table alone (no
    /// data read): what holding the model's weights as stored needs, for a memory check before
    /// loading. A tensor of a type this engine does not read is an error naming it.
    pub fn tensor_bytes(&self) -> Result<u64> {
        self.tensor_bytes_except(&[])
    }

    /// [`Self::tensor_bytes`] without the tensors named in `lookups`: the tables a forward pass
    /// reads a few rows of (position embeddings, token embeddings not tied to the head), so the
    /// bytes one decode step reads, the numerator of its memory floor.
    pub fn tensor_bytes_except(&self, lookups: &[&str]) -> Result<u64> {
        let mut total = 0u64;
        for t in self
            .tensors
            .iter()
            .filter(|t| !lookups.contains(&t.name.as_str()))
        {
            let ty = t.ggml_type().map_err(|e| self.error(e))?;
            total += ty
                .bytes_for(&t.dims)
                .map_err(|e| self.error(format!("tensor {}: {e}", t.name)))?;
        }
        Ok(total)
    }

    /// The tensor `name`: its entry, its type, and its bytes as stored.
    pub fn tensor(&self, name: &str) -> Result<(&TensorInfo, GgmlType, &[u8])> {
        let info = self
            .tensor_info(name)
            .ok_or_else(|| self.error(format!("no tensor {name}")))?;
        let ty = info.ggml_type().map_err(|e| self.error(e))?;
        let size = ty
            .bytes_for(&info.dims)
            .map_err(|e| self.error(format!("tensor {name}: {e}")))?;
        let start = self.data_start + info.offset as usize;
        Ok((info, ty, &self.map[start..start + size as usize]))
    }

    /// The tensor `name`'s values as f32 (dequantized where stored quantized), outermost
    /// dimension first, with its shape.
    pub fn dequantize(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>)> {
        let (info, ty, bytes) = self.tensor(name)?;
        let values = crate::quant::dequantize(ty, bytes, info.elements() as usize)
            .map_err(|e| self.error(format!("tensor {name}: {e}")))?;
        Ok((info.shape(), values))
    }
}

/// Reads little-endian values off the front of the file, each read bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// Arrays nest; a file that nests them deeper than this is refused rather than recursed into.
const MAX_NESTING: usize = 8;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(format!(
                "the file ends at byte {} inside the header (wanted {n} bytes at {}): truncated?",
                self.bytes.len(),
                self.pos
            )),
        }
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A length that must fit in what is left of the file, `each` bytes an element at least.
    fn length(&mut self, each: usize) -> std::result::Result<usize, String> {
        let n = self.u64()?;
        let left = (self.bytes.len() - self.pos) as u64;
        if n.saturating_mul(each.max(1) as u64) > left {
            return Err(format!(
                "a length of {n} at byte {} is more than the file holds: corrupted or truncated",
                self.pos - 8
            ));
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        let n = self.length(1)?;
        let at = self.pos;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| format!("the string at byte {at} is not UTF-8"))
    }

    fn value(&mut self, ty: u32, depth: usize) -> std::result::Result<Value, String> {
        Ok(match ty {
            0 => Value::U8(self.array::<1>()?[0]),
            1 => Value::I8(self.array::<1>()?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.array()?)),
            3 => Value::I16(i16::from_le_bytes(self.array()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.array()?)),
            6 => Value::F32(f32::from_le_bytes(self.array()?)),
            7 => match self.array::<1>()?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(format!("a bool of {b} (0 or 1 expected)")),
            },
            8 => Value::String(self.string()?),
            9 => {
                if depth >= MAX_NESTING {
                    return Err(format!("arrays nested more than {MAX_NESTING} deep"));
                }
                let elem = self.u32()?;
                let n = self.length(1)?;
                let mut items = Vec::with_capacity(n.min(1 << 20));
                for _ in 0..n {
                    items.push(self.value(elem, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.array()?)),
            12 => Value::F64(f64::from_le_bytes(self.array()?)),
            other => return Err(format!("unknown value type {other} (0 to 12 exist)")),
        })
    }

    fn tensor_info(&mut self) -> std::result::Result<TensorInfo, String> {
        let name = self.string()?;
        let n_dims = self.u32()?;
        if n_dims > 4 {
            return Err(format!(
                "tensor {name} has {n_dims} dimensions (GGUF allows 4)"
            ));
        }
        let dims = (0..n_dims)
            .map(|_| self.u64())
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let type_code = self.u32()?;
        let offset = self.u64()?;
        Ok(TensorInfo {
            name,
            dims,
            type_code,
            offset,
        })
    }
}

#[cfg(test)]
mod tests;
