//! Exercise 8's `[memory]`: the learner's prediction of their own model's memory for a
//! generation at a given batch and context, graded by the course's arithmetic on the model's
//! config, which the run recorded in `results/memory.json`, never by the machine:
//!
//! - weights = parameters × bytes per weight;
//! - KV cache = 2 (K and V) × layers × KV heads × head dim × bytes per element × context × batch;
//! - peak = weights + KV cache + activations: at least the first two (both are live at the
//!   peak), at most the weights twice over (what the arithmetic leaves out of them, such as a
//!   tied head's packed copy, stays below a second copy), the cache, and every tensor a layer's
//!   prefill of the whole context could hold at once (`activations_ceiling` below).
//!
//! A wrong figure is diagnosed when it is the right one times a known slip (the factor 2 of K
//! and V, another dtype's bytes, the query heads for the KV heads, one sequence or one layer).
//! The peak a `--profile-memory` run measured is shown beside the answers in a note, with what
//! explains a gap; it never gives or takes points.
//!
//! Not asked (left out with a note, when the run wrote no record): a second-tier profile
//! (`environment.tier` is `spans`: no config was read) and a GGUF file's (`environment.model`
//! names a `.gguf` file: parameters × bytes per weight does not count quantized blocks).
//!
//! `results/memory.json` is `formats::memory::MemoryRecord` (schema `memory-prediction/1`),
//! written by exercise 8's program with the same type; the arithmetic on it is here.

use formats::memory::{Measured, MemoryRecord, FILE, SCHEMA};

use super::{Ctx, Got, NOT_ANSWERED};
use crate::answers::{Answers, Field, NodeValue};
use crate::key::MemoryKey;
use crate::problem::{Problem, ProblemKind};
use crate::question_types::number::{show, within};
use crate::report::QuestionResult;
use course_model::results::{check_schema, parse_json, tampered};

const ROLE: &str = "memory";
const REGENERATE: &str =
    "regenerate it with `course run 8` (a first-tier model); never edit results by hand";

/// The record, its schema checked before its fields (an old one gets what it lacks), then
/// refused as tampered when its sizes or element types contradict each other.
fn parse(text: &str, file: &str) -> Result<MemoryRecord, Problem> {
    let what = format!("memory record ({SCHEMA})");
    let head: serde_json::Value = parse_json(text, file, &what, REGENERATE)?;
    if let Some(schema) = head.get("schema").and_then(|s| s.as_str()) {
        check_schema(schema, &FILE, file, FILE.rerun, REGENERATE)?;
    }
    let record: MemoryRecord = parse_json(text, file, &what, REGENERATE)?;
    let tampered = |message: String| tampered(file, message, REGENERATE);
    let c = &record.config;
    let sizes = [
        c.parameters,
        c.layers,
        c.kv_heads,
        c.head_dim,
        c.heads,
        record.batch,
        record.context,
    ];
    if sizes.contains(&0) || c.kv_heads > c.heads {
        return Err(tampered(
            "a size is zero, or there are more key/value heads than query heads, which no model loads with"
                .to_string(),
        ));
    }
    for (dtype, bytes) in [
        (&c.weights_dtype, c.weight_bytes),
        (&c.kv_dtype, c.kv_bytes),
    ] {
        if dtype_bytes(dtype) != Some(bytes) {
            return Err(tampered(format!(
                "{dtype} does not take {bytes} bytes an element"
            )));
        }
    }
    Ok(record)
}

/// The course's arithmetic on a record's config.
trait Arithmetic {
    fn weights(&self) -> f64;
    fn kv_cache(&self) -> f64;
    fn activations_ceiling(&self) -> f64;
}

impl Arithmetic for MemoryRecord {
    /// parameters × bytes per weight.
    fn weights(&self) -> f64 {
        // In f64 throughout: a hand-edited record's sizes must not overflow.
        self.config.parameters as f64 * self.config.weight_bytes as f64
    }

    /// 2 × layers × KV heads × head dim × bytes × context × batch.
    fn kv_cache(&self) -> f64 {
        let c = &self.config;
        [
            c.layers,
            c.kv_heads,
            c.head_dim,
            c.kv_bytes,
            self.context,
            self.batch,
        ]
        .iter()
        .fold(2.0, |product, n| product * *n as f64)
    }

    /// The most a generation's activations could hold: every sequence's whole context
    /// prefilled at once, with one layer's tensors all live together — the residual stream,
    /// the norm's output, q, k, v, the repeated k and v and the attention's output (8 × hidden),
    /// the MLP's gate, up and product (3 × intermediate), the attention's scores and their
    /// softmax (2 × heads × context) — in the activations' type, and the last position's f32
    /// logits. An estimate above it counts something twice.
    fn activations_ceiling(&self) -> f64 {
        let c = &self.config;
        let f = |n: u64| n as f64;
        let per_token = 8.0 * f(c.hidden_size)
            + 3.0 * f(c.intermediate_size)
            + 2.0 * f(c.heads) * f(self.context);
        f(self.batch) * f(self.context) * per_token * f(c.kv_bytes)
            + f(self.batch) * f(c.vocab_size) * 4.0
    }
}

fn dtype_bytes(dtype: &str) -> Option<u64> {
    match dtype {
        "f64" | "i64" => Some(8),
        "f32" | "u32" => Some(4),
        "bf16" | "f16" => Some(2),
        "u8" | "f8e4m3" => Some(1),
        _ => None,
    }
}

/// The other element types a learner may have used, with their bytes.
const DTYPES: [(&str, u64); 3] = [("f32", 4), ("bf16 or f16", 2), ("an 8-bit type", 1)];

pub fn check(ctx: &mut Ctx<'_>, key: &MemoryKey) {
    if !ctx.has_result(ROLE) {
        if let Some(note) = not_asked(ctx) {
            ctx.report.notes.push(note.to_string());
            return;
        }
    }
    let record = read(ctx);
    if let Ok(r) = &record {
        batch_and_context(ctx, r);
    }
    let tolerance = key.tolerance_pct / 100.0;

    ask(
        ctx,
        &record,
        QuestionResult::new(
            "memory.weights_bytes",
            "Your model's weights, in bytes",
            key.weights,
        ),
        |given, r| weights(given, r, tolerance),
    );
    ask(
        ctx,
        &record,
        QuestionResult::new(
            "memory.kv_cache_bytes",
            "The KV cache at that batch and context, in bytes",
            key.kv_cache,
        ),
        |given, r| kv_cache(given, r, tolerance),
    );
    ask(
        ctx,
        &record,
        QuestionResult::new(
            "memory.peak_bytes",
            "The generation's peak, in bytes",
            key.peak,
        ),
        |given, r| peak(given, r, tolerance),
    );

    if let Ok(r) = &record {
        let note = measured_note(r);
        ctx.report.notes.push(note);
    }
}

/// The weights answer: parameters × bytes per weight, and the other element types' bytes as
/// the slip that gives a wrong figure.
fn weights(given: f64, r: &MemoryRecord, tolerance: f64) -> Result<String, String> {
    let c = &r.config;
    let arithmetic = format!(
        "{} parameters × {} bytes ({})",
        thousands(c.parameters as f64),
        c.weight_bytes,
        c.weights_dtype
    );
    let expected = r.weights();
    by_arithmetic(arithmetic, expected, given, tolerance, || {
        let loaded = c.weight_bytes as f64;
        let mut others = DTYPES.iter().filter(|(_, b)| *b != c.weight_bytes);
        match others.find(|(_, b)| within(given, expected * *b as f64 / loaded, 0.0, tolerance)) {
            Some((name, b)) => format!(
                ": that is the weights at {b} bytes each ({name}), but this run loaded them in {} \
                 ({} bytes)",
                c.weights_dtype, c.weight_bytes
            ),
            None => String::new(),
        }
    })
}

/// The KV cache answer: the arithmetic, and every known slip that gives a wrong figure.
fn kv_cache(given: f64, r: &MemoryRecord, tolerance: f64) -> Result<String, String> {
    let c = &r.config;
    let arithmetic = format!(
        "2 × {} layers × {} KV heads × {} head dim × {} bytes ({}) × {} positions × {} sequences",
        c.layers, c.kv_heads, c.head_dim, c.kv_bytes, c.kv_dtype, r.context, r.batch
    );
    let expected = r.kv_cache();
    by_arithmetic(arithmetic, expected, given, tolerance, || {
        let near = |factor: f64| within(given, expected * factor, 0.0, tolerance);
        // Slips that give the same figure are all named: on an f32 cache, forgetting the
        // values and counting 2 bytes an element both halve it.
        let mut slips = Vec::new();
        if near(0.5) {
            slips.push(
                "the factor 2 left out: the cache holds two tensors per layer, the keys and the values"
                    .to_string(),
            );
        }
        for (name, b) in DTYPES.iter().filter(|(_, b)| *b != c.kv_bytes) {
            if near(*b as f64 / c.kv_bytes as f64) {
                slips.push(format!(
                    "{b} bytes an element ({name}), but this run's KV cache is {} ({} bytes): the cache is \
                     kept in the activations' type, which on the CPU's packed kernels is f32 whatever the \
                     weights' type",
                    c.kv_dtype, c.kv_bytes
                ));
            }
        }
        if c.heads != c.kv_heads && near(c.heads as f64 / c.kv_heads as f64) {
            slips.push(format!(
                "all {} query heads counted; grouped-query attention caches only the {} key/value heads",
                c.heads, c.kv_heads
            ));
        }
        if r.batch > 1 && near(1.0 / r.batch as f64) {
            slips.push(format!(
                "one sequence's cache; each of the {} has its own",
                r.batch
            ));
        }
        if c.layers > 1 && near(1.0 / c.layers as f64) {
            slips.push(format!(
                "one layer's cache; each of the {} has its own",
                c.layers
            ));
        }
        match slips.is_empty() {
            true => String::new(),
            false => format!(": that is {}", slips.join("; or ")),
        }
    })
}

/// The peak answer: between the weights and the cache alone and the most the config allows.
fn peak(given: f64, r: &MemoryRecord, tolerance: f64) -> Result<String, String> {
    let floor = r.weights() + r.kv_cache();
    let ceiling = r.activations_ceiling();
    if given < floor * (1.0 - tolerance) {
        return Err(format!(
            "below the weights and the KV cache alone ({} + {} = {}), which are both live at the peak: no \
             generation at this batch and context can peak lower",
            shown_bytes(r.weights()),
            shown_bytes(r.kv_cache()),
            shown_bytes(floor)
        ));
    }
    let most = floor + r.weights() + ceiling;
    if given > most * (1.0 + tolerance) {
        return Err(format!(
            "above {}: the weights twice over ({}), the KV cache ({}) and every tensor a layer's prefill of \
             the whole context could hold at once ({}); something is counted more than that, or a unit slipped",
            shown_bytes(most),
            shown_bytes(2.0 * r.weights()),
            shown_bytes(r.kv_cache()),
            shown_bytes(ceiling)
        ));
    }
    Ok(format!(
        "weights + KV cache = {}, so your activations are {} (the config allows up to {})",
        shown_bytes(floor),
        shown_bytes((given - floor).max(0.0)),
        shown_bytes(ceiling)
    ))
}

/// `given` against the arithmetic's `expected`: right within `tolerance`, showing the
/// arithmetic; wrong with the arithmetic, the answer, and what `slip` names of it (empty when
/// no known slip gives that figure; worked out only for a wrong answer).
fn by_arithmetic(
    arithmetic: String,
    expected: f64,
    given: f64,
    tolerance: f64,
    slip: impl FnOnce() -> String,
) -> Result<String, String> {
    if within(given, expected, 0.0, tolerance) {
        return Ok(format!("{arithmetic} = {}", shown_bytes(expected)));
    }
    Err(format!(
        "{arithmetic} = {}, you wrote {}{}",
        shown_bytes(expected),
        shown_bytes(given),
        slip()
    ))
}

/// Grade the bytes answer `q.id` (`judge` says why it is right or wrong) into the report.
fn ask(
    ctx: &mut Ctx<'_>,
    record: &Result<MemoryRecord, String>,
    q: QuestionResult,
    judge: impl FnOnce(f64, &MemoryRecord) -> Result<String, String>,
) {
    let got = bytes(ctx, &q.id);
    ctx.push(grade(got, record, q, judge));
}

/// Why the run asked no memory prediction, when its profile says so: it ran in the second
/// tier (`environment.tier` is `spans`), or its weights came from a GGUF file
/// (`environment.model` names a `.gguf` file), whose quantized blocks parameters × bytes per
/// weight does not count. Either run writes no `results/memory.json`.
fn not_asked(ctx: &mut Ctx<'_>) -> Option<&'static str> {
    let (text, _) = ctx.results_text("profile").ok()?;
    let report = serde_json::from_str::<serde_json::Value>(&text).ok()?;
    let environment = &report["environment"];
    if environment["tier"] == "spans" {
        return Some(
            "The memory prediction ([memory]) is asked of a first-tier model only: results/report.json was \
             profiled through a model's own spans (Phi-3, Gemma, or a GGUF file the engine does not read), \
             whose config the run does not read, so it is not graded. Run a Llama-family checkpoint to answer it.",
        );
    }
    let gguf = environment["model"]
        .as_str()
        .is_some_and(|m| m.to_ascii_lowercase().ends_with(".gguf"));
    gguf.then_some(
        "The memory prediction ([memory]) is asked of a safetensors checkpoint only: results/report.json \
         profiled a GGUF file, whose quantized weights parameters × bytes per weight does not count (each \
         block holds its scale too), so it is not graded. Run a safetensors checkpoint of the Llama family to \
         answer it.",
    )
}

fn read(ctx: &mut Ctx<'_>) -> Result<MemoryRecord, String> {
    let (text, shown) = ctx.results_text(ROLE)?;
    parse(&text, &shown).map_err(|p| ctx.record(p))
}

/// The batch and context answers.toml says, against the ones the run recorded (the program
/// writes both; a difference means the file was edited or another run wrote the record).
fn batch_and_context(ctx: &mut Ctx<'_>, r: &MemoryRecord) {
    let mut differ = Vec::new();
    for (name, recorded) in [("batch", r.batch), ("context", r.context)] {
        if let Got::Answered(v) = ctx.number(&format!("memory.{name}")) {
            if v != recorded as f64 {
                differ.push(format!("{name} {} (the run's: {recorded})", show(v)));
            }
        }
    }
    if !differ.is_empty() {
        ctx.report.notes.push(format!(
            "answers.toml's [memory] says {}: your answers are graded at the batch and context \
             results/memory.json was written with; run the exercise again to predict at yours",
            differ.join(", ")
        ));
    }
}

/// Grade one bytes answer: `judge` says why it is right (`Ok`) or wrong (`Err`).
fn grade(
    got: Got<(f64, String)>,
    record: &Result<MemoryRecord, String>,
    q: QuestionResult,
    judge: impl FnOnce(f64, &MemoryRecord) -> Result<String, String>,
) -> QuestionResult {
    match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered((given, written)) => {
            let q = q.answer(written);
            let r = match record {
                Ok(r) => r,
                Err(reason) => return q.wrong(reason.clone()),
            };
            if given <= 0.0 {
                return q.wrong("no memory holds a model in zero or fewer bytes");
            }
            match judge(given, r) {
                Ok(reason) => q.right(reason),
                Err(reason) => q.wrong(reason),
            }
        }
    }
}

/// The measured peak beside the arithmetic, with what explains the gap.
fn measured_note(r: &MemoryRecord) -> String {
    let run = format!(
        "{} at {} sequences × {} positions",
        r.model, r.batch, r.context
    );
    let m = match &r.measured {
        None => {
            return format!(
                "Measured: nothing yet for {run}. Run `cargo run -p exercise-8 -- --model ID --profile-memory` \
                 to see the peak a generation measures beside your prediction."
            )
        }
        Some(Measured::NotMeasured { not_measured }) => {
            return format!("Measured: not for {run} ({not_measured}).")
        }
        Some(Measured::Peak(m)) => m,
    };
    let c = &m.at_highest_sample;
    let activations = c.activations_bytes + c.temporaries_bytes;
    format!(
        "Measured by --profile-memory ({run}: a prefill of {} tokens, then {} decode steps): peak {} in step {} \
         during `{}`. At the highest sample the weights held {} (arithmetic: {}), the KV cache {} (arithmetic: \
         {}), activations and temporaries {}. A measured figure above the arithmetic is what the arithmetic \
         leaves out: what the load keeps beside the parameters (a tied head's packed copy of the embedding, \
         the rotary tables), each tensor's bookkeeping, the allocator's slack (blocks rounded up, freed a step \
         late) and the temporaries of the op running at the peak.",
        m.prefill_tokens,
        m.new_tokens,
        shown_bytes(m.peak_bytes as f64),
        m.peak_step,
        m.peak_during,
        shown_bytes(c.weights_bytes as f64),
        shown_bytes(r.weights()),
        shown_bytes(c.kv_cache_bytes as f64),
        shown_bytes(r.kv_cache()),
        shown_bytes(activations as f64),
    )
}

/// Bytes in the feedback: the whole number with its thousands marked, and in MiB or GiB where
/// that reads better.
fn shown_bytes(bytes: f64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let mut exact = thousands(bytes.abs());
    if bytes < 0.0 {
        exact.insert(0, '-');
    }
    if bytes.abs() >= 1024.0 * MIB {
        format!("{exact} B ({:.2} GiB)", bytes / (1024.0 * MIB))
    } else if bytes.abs() >= MIB {
        format!("{exact} B ({:.1} MiB)", bytes / MIB)
    } else {
        format!("{exact} B")
    }
}

/// A whole number with its thousands marked: `538,060,032`.
fn thousands(n: f64) -> String {
    let digits = format!("{n:.0}");
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A bytes answer: a number, or a text with a unit (`"1.5 GiB"`, `"538 MB"`, `"2e9"`), with
/// the answer as the feedback shows it (a text as written, a number in bytes).
fn bytes(ctx: &mut Ctx<'_>, path: &str) -> Got<(f64, String)> {
    ctx.field(|a| read_bytes(a, path))
}

fn read_bytes(answers: &Answers, path: &str) -> Field<(f64, String)> {
    let Some(node) = answers.node(path) else {
        return Field::Unanswered;
    };
    let NodeValue::Text(text) = &node.value else {
        return match answers.number(path) {
            Field::Answered(v) => Field::Answered((v, shown_bytes(v))),
            Field::Unanswered => Field::Unanswered,
            Field::Invalid(problem) => Field::Invalid(problem),
        };
    };
    if text.trim().is_empty() {
        return Field::Unanswered;
    }
    match parse_bytes(text) {
        Some(v) => Field::Answered((v, format!("{} = {} B", text.trim(), thousands(v)))),
        None => Field::Invalid(Problem::new(
            ProblemKind::WrongType,
            Some(answers.location(node)),
            format!("`{path}` should be bytes, but {text:?} is not a number of bytes"),
            "write a number (538000000, 5.38e8) or a number and its unit (\"538 MB\", \"513 MiB\", \"0.5 GiB\")",
        )),
    }
}

/// `"538000000"`, `"5.38e8"`, `"538 MB"`, `"513 MiB"`, `"0.5 GiB"`, `"1_024 KiB"`: decimal
/// units are powers of 1000, binary ones powers of 1024; `B` alone is bytes.
pub fn parse_bytes(text: &str) -> Option<f64> {
    let text = text.trim().replace('_', "");
    let split = text
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.trim().parse().ok()?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = value * scale;
    bytes.is_finite().then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn bytes_are_read_with_or_without_a_unit() {
        assert_eq!(parse_bytes("538000000"), Some(538e6));
        assert_eq!(parse_bytes("5.38e8"), Some(538e6));
        assert_eq!(parse_bytes(" 538 MB "), Some(538e6));
        assert_eq!(parse_bytes("0.5 GiB"), Some(512.0 * 1024.0 * 1024.0));
        assert_eq!(parse_bytes("1_024 KiB"), Some(1024.0 * 1024.0));
        assert_eq!(parse_bytes("12 B"), Some(12.0));
        assert_eq!(parse_bytes("half a gig"), None);
        assert_eq!(parse_bytes("5 parsecs"), None);
    }
}
