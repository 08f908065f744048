//! ggml's tensor types that the engine reads, with their block sizes (ggml's `type_traits`,
//! the same table as gguf-py's `GGML_QUANT_SIZES`).

/// A tensor type the engine reads: the three dense ones and the quantized ones llama.cpp's
/// common presets write (`Q8_0`, `Q4_0`, the K-quants `Q4_K` and `Q6_K` of `Q4_K_M`), plus
/// `Q1_0`, the Bonsai models' 1-bit type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    /// 32 weights: an f16 scale `d`, then 32 `i8`; each weight is `d · q`. 34 bytes.
    Q8_0,
    /// 32 weights: an f16 scale `d`, then 16 bytes of 4-bit codes, weight `j` in the low
    /// nibble of byte `j` and weight `j + 16` in its high nibble; each weight is `d · (q − 8)`.
    /// 18 bytes.
    Q4_0,
    /// 256 weights in 8 sub-blocks of 32, 6-bit sub-block scales and mins, 4-bit codes.
    /// 144 bytes.
    Q4K,
    /// 256 weights in 16 sub-blocks of 16, 8-bit sub-block scales, 6-bit codes. 210 bytes.
    Q6K,
    /// 128 weights: an f16 scale `d`, then 16 bytes of sign bits, weight `j` in bit `j % 8`
    /// (least significant first) of byte `j / 8`; a set bit is `+d`, a clear one `−d`.
    /// 18 bytes.
    Q1_0,
}

impl GgmlType {
    pub const ALL: [GgmlType; 8] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::Q4K,
        GgmlType::Q6K,
        GgmlType::Q1_0,
    ];

    /// ggml's code for the type (`enum ggml_type`).
    pub fn code(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4K => 12,
            GgmlType::Q6K => 14,
            GgmlType::BF16 => 30,
            GgmlType::Q1_0 => 41,
        }
    }

    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.code() == code)
    }

    /// ggml's name, lower case, as reports and kernel labels write it.
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "f32",
            GgmlType::F16 => "f16",
            GgmlType::BF16 => "bf16",
            GgmlType::Q8_0 => "q8_0",
            GgmlType::Q4_0 => "q4_0",
            GgmlType::Q4K => "q4_k",
            GgmlType::Q6K => "q6_k",
            GgmlType::Q1_0 => "q1_0",
        }
    }

    /// Weights a block holds (1 for the dense types).
    pub fn block_size(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => 1,
            GgmlType::Q8_0 | GgmlType::Q4_0 => 32,
            GgmlType::Q1_0 => 128,
            GgmlType::Q4K | GgmlType::Q6K => 256,
        }
    }

    /// Bytes a block takes, scales included.
    pub fn type_size(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::BF16 => 2,
            GgmlType::Q8_0 => 34,
            GgmlType::Q4_0 | GgmlType::Q1_0 => 18,
            GgmlType::Q4K => 144,
            GgmlType::Q6K => 210,
        }
    }

    pub fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// Bits a weight takes as stored, its block's scales included (Q8_0 8.5, Q4_0 4.5,
    /// Q1_0 1.125).
    pub fn bits_per_weight(self) -> f64 {
        (self.type_size() * 8) as f64 / self.block_size() as f64
    }

    /// Bytes `rows` rows of `k` values take: whole blocks along each row.
    pub fn row_bytes(self, k: usize) -> usize {
        k / self.block_size() * self.type_size()
    }

    /// Bytes a tensor of GGUF dimensions `dims` (innermost first) takes, or why it cannot be
    /// stored in this type (a row that is not whole blocks).
    pub fn bytes_for(self, dims: &[u64]) -> std::result::Result<u64, String> {
        let row = dims.first().copied().unwrap_or(1);
        let block = self.block_size() as u64;
        if !row.is_multiple_of(block) {
            return Err(format!(
                "rows of {row} values are not whole {} blocks of {block}",
                self.name()
            ));
        }
        let elements = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or("its dimensions overflow")?;
        (elements / block)
            .checked_mul(self.type_size() as u64)
            .ok_or_else(|| "its size overflows".to_string())
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// ggml's name for a type code the engine does not read, for messages.
pub fn known_name(code: u32) -> Option<&'static str> {
    Some(match code {
        3 => "q4_1",
        6 => "q5_0",
        7 => "q5_1",
        9 => "q8_1",
        10 => "q2_k",
        11 => "q3_k",
        13 => "q5_k",
        15 => "q8_k",
        16 => "iq2_xxs",
        17 => "iq2_xs",
        18 => "iq3_xxs",
        19 => "iq1_s",
        20 => "iq4_nl",
        21 => "iq3_s",
        22 => "iq2_s",
        23 => "iq4_xs",
        24 => "i8",
        25 => "i16",
        26 => "i32",
        27 => "i64",
        28 => "f64",
        29 => "iq1_m",
        34 => "tq1_0",
        35 => "tq2_0",
        39 => "mxfp4",
        40 => "nvfp4",
        _ => return None,
    })
}
