//! `report.json`, the profiler's file (documented field by field in crates/profiler/REPORT.md):
//! its schema, the versions it replaced, and its types. The profiler writes [`Report`]; the
//! grader and `course bench budget` read it; `scripts/gpu-check` reads the JSON Schema these
//! types generate (`schema/report.schema.json`).
//!
//! Where a field goes: a file-wide one on [`Report`], a per-row one on [`ReportRow`] (the
//! profiler fills it in `Report`'s constructor, `profiler::Profile::report_with`). A field that
//! older files lack and readers can do without is `#[serde(default)]`; anything else bumps
//! [`SCHEMA`], adds the old identifier to [`OLD_SCHEMAS`] with what it lacks, and regenerates
//! the fixtures and the JSON Schema (`cargo run -p formats --bin write-schemas`).

use std::fmt;
use std::path::Path;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::environment::Environment;
use crate::line::Line;
use crate::version::{FileSchema, SchemaError};

/// The schema identifier written in every report.
pub const SCHEMA: &str = "profiler-report/7";

/// Earlier identifiers, oldest first, each refused with what it lacks.
pub const OLD_SCHEMAS: &[(&str, &str)] = &[
    ("profiler-report/1", "from before the roofline columns"),
    (
        "profiler-report/2",
        "from before the environment record report.json and bench.json share",
    ),
    (
        "profiler-report/3",
        "from before the table's Reading column",
    ),
    (
        "profiler-report/4",
        "from before each row said its budget line",
    ),
    (
        "profiler-report/5",
        "from before each row said the type of the values it streamed",
    ),
    (
        "profiler-report/6",
        "from before the memory columns (CPU Mem, Self CPU Mem, allocations, the peak)",
    ),
];

/// report.json's schema, for [`FileSchema::check`].
pub const FILE: FileSchema = FileSchema {
    file: "report.json",
    current: SCHEMA,
    old: OLD_SCHEMAS,
    rerun: "Re-run the profile that wrote it (`gpt2 profile --out DIR`, or the exercise's own \
            run, `course run N`) to regenerate it; crates/profiler/REPORT.md, section Changes, \
            says what changed.",
};

/// The name of the row that holds each step's time outside every visible scope.
pub const STEP_ROW: &str = "ProfilerStep*";

/// Which device the profiled program ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    #[default]
    Cpu,
    Cuda,
}

impl DeviceKind {
    /// As the file writes it: `cpu`, `cuda`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
        }
    }

    /// As people say it: `CPU`, `CUDA`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "CPU",
            DeviceKind::Cuda => "CUDA",
        }
    }

    /// The column a run on this device is ranked by, as people say it.
    pub fn column(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "self CPU time",
            DeviceKind::Cuda => "self CUDA time",
        }
    }
}

/// The measured ceilings of the machine a profile ran on (the caller measures them; the
/// profiler stores them). The descriptive fields read as empty when a file lacks them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ceilings {
    /// CPU model or GPU name.
    #[serde(default)]
    pub device: String,
    #[serde(default)]
    pub threads: usize,
    /// The run's kernel path, e.g. "avx512", or "cuda".
    #[serde(default)]
    pub kernels: String,
    /// "release" | "debug".
    #[serde(default)]
    pub build: String,
    /// Measured memory read bandwidth, GB/s (1e9 bytes/s).
    pub mem_read_gbps: f64,
    /// Measured peak matmul throughput the engine reaches, GFLOP/s.
    pub peak_gflops: f64,
    /// One line: how the bandwidth was measured.
    #[serde(default)]
    pub bandwidth_how: String,
    /// One line: which product, which kernel.
    #[serde(default)]
    pub peak_how: String,
}

impl Ceilings {
    /// The intensity (FLOP per byte) at which the memory roof meets the compute roof.
    pub fn ridge_intensity(&self) -> f64 {
        self.peak_gflops / self.mem_read_gbps
    }
}

/// Which time a row's rates divide by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum TimeBasis {
    /// The row's total host time.
    #[default]
    #[serde(rename = "cpu")]
    Cpu,
    /// The row's total time between CUDA events (or synchronises) on the stream: the
    /// stream's time, waits for launches included, not the kernels' own time.
    #[serde(rename = "cuda-stream")]
    CudaStream,
}

impl TimeBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeBasis::Cpu => "cpu",
            TimeBasis::CudaStream => "cuda-stream",
        }
    }
}

/// Which roof limits a row at its intensity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A row's place under the roofline (the formulas are in the profiler's `roofline` module,
/// which alone computes them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RowRoofline {
    /// Which total the rates divide by (`cpu` when a file lacks it).
    #[serde(default)]
    pub time_basis: TimeBasis,
    pub gflops_per_s: f64,
    pub gbytes_per_s: f64,
    /// FLOP per byte: flops / bytes.
    pub intensity: f64,
    /// min(peak, bandwidth × intensity).
    pub roofline_gflops_per_s: f64,
    /// 100 × achieved GFLOP/s / roofline.
    pub pct_of_roofline: f64,
    /// 100 × achieved GB/s / measured read bandwidth.
    pub pct_of_memory_roofline: f64,
    pub bound: Bound,
}

/// Where the reading rule (the profiler's `reading` module) draws its lines: percentages of a
/// row's rooflines, and µs a call. The caller chooses them; [`Thresholds::DEFAULT`] is what a
/// program without an answer key passes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Memory traffic is refuted below this % of the memory roofline...
    pub not_memory_below_pct: f64,
    /// ...and shown above this one; open in between.
    pub memory_above_pct: f64,
    /// A slow kernel is shown below this % of the row's roofline...
    pub slow_kernel_below_pct: f64,
    /// ...and refuted above this one (the row is near what the hardware allows); open in between.
    pub near_roofline_above_pct: f64,
    /// Launch overhead is shown only when a call takes less than this, in µs.
    pub launch_overhead_below_us: f64,
}

impl Thresholds {
    /// The profiler's documented defaults (crates/profiler/REPORT.md). The course's answer key
    /// holds the same values (a grader test compares them).
    pub const DEFAULT: Thresholds = Thresholds {
        not_memory_below_pct: 25.0,
        memory_above_pct: 50.0,
        slow_kernel_below_pct: 25.0,
        near_roofline_above_pct: 50.0,
        launch_overhead_below_us: 20.0,
    };

    /// Why these thresholds cannot be read by, if they cannot: each a finite number, not
    /// negative, each "below" line at or under its "above" line, and the near-roofline line
    /// at or above the not-memory line.
    pub fn problem(&self) -> Option<String> {
        let all = [
            ("not_memory_below_pct", self.not_memory_below_pct),
            ("memory_above_pct", self.memory_above_pct),
            ("slow_kernel_below_pct", self.slow_kernel_below_pct),
            ("near_roofline_above_pct", self.near_roofline_above_pct),
            ("launch_overhead_below_us", self.launch_overhead_below_us),
        ];
        if let Some((name, value)) = all.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
            return Some(format!(
                "{name} is {value}: every threshold is a number, 0 or more"
            ));
        }
        if self.not_memory_below_pct > self.memory_above_pct {
            return Some(format!(
                "not_memory_below_pct ({}) is above memory_above_pct ({}): memory traffic would be both refuted and shown",
                self.not_memory_below_pct, self.memory_above_pct
            ));
        }
        if self.slow_kernel_below_pct > self.near_roofline_above_pct {
            return Some(format!(
                "slow_kernel_below_pct ({}) is above near_roofline_above_pct ({}): a slow kernel would be both shown and refuted",
                self.slow_kernel_below_pct, self.near_roofline_above_pct
            ));
        }
        // On the memory side the two percentages are one number: it cannot be near the roofline
        // and far below the memory roofline at once.
        if self.near_roofline_above_pct < self.not_memory_below_pct {
            return Some(format!(
                "near_roofline_above_pct ({}) is below not_memory_below_pct ({}): a memory-side row between them would be both \
                 near its roofline and far below it",
                self.near_roofline_above_pct, self.not_memory_below_pct
            ));
        }
        None
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::DEFAULT
    }
}

/// What holds a row back, as the table prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Reading {
    MemoryBound,
    ComputeBound,
    SlowKernel,
    LaunchOverhead,
}

impl Reading {
    pub const ALL: [Reading; 4] = [
        Reading::MemoryBound,
        Reading::ComputeBound,
        Reading::SlowKernel,
        Reading::LaunchOverhead,
    ];

    /// As report.json writes it: `memory-bound`, `compute-bound`, `slow-kernel`, `launch-overhead`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reading::MemoryBound => "memory-bound",
            Reading::ComputeBound => "compute-bound",
            Reading::SlowKernel => "slow-kernel",
            Reading::LaunchOverhead => "launch-overhead",
        }
    }

    /// As the table prints it: `memory-bound`, `compute-bound`, `slow kernel`, `launch overhead`.
    pub fn label(self) -> &'static str {
        match self {
            Reading::MemoryBound => "memory-bound",
            Reading::ComputeBound => "compute-bound",
            Reading::SlowKernel => "slow kernel",
            Reading::LaunchOverhead => "launch overhead",
        }
    }
}

impl fmt::Display for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The whole file. `sort_by` and `view` are the profiler's table options (`profiler::SortBy`,
/// `profiler::View`, which it owns and writes by name); a reader that does not link the
/// profiler reads them as strings, the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-old-schemas" = OLD_SCHEMAS.iter().map(|(s, _)| *s).collect::<Vec<_>>()))]
pub struct Report<SortKey = String, ViewKind = String> {
    /// The file's schema identifier; a reader refuses any other value.
    #[schemars(extend("const" = SCHEMA))]
    pub schema: String,
    pub device: DeviceKind,
    /// The sort key of `rows` (`self_cpu_time_total`, `cpu_time_total`, `count`, ...).
    pub sort_by: SortKey,
    /// Which scopes are rows: `op`, `module` or `all`.
    pub view: ViewKind,
    pub grouped_by_input_shape: bool,
    pub active_steps: usize,
    pub environment: Environment,
    pub totals: Totals,
    /// The measured ceilings the rows' rooflines are taken against; null without them.
    pub ceilings: Option<Ceilings>,
    /// The thresholds the rows' `reading`s were taken with.
    pub reading_thresholds: Thresholds,
    /// The profile's warnings (device timing failures, refused nested profilers).
    pub warnings: Vec<String>,
    /// What the profile measured of memory (`profile_memory`); null when it was not recorded.
    #[serde(default)]
    pub memory: Option<ReportMemory>,
    pub rows: Vec<ReportRow>,
}

/// The file-wide memory figures, summed over the active steps where they are totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReportMemory {
    /// The most bytes live at once during any active step: every block the counting allocator
    /// counted (weights and caches allocated before the step included).
    pub peak_bytes: i64,
    /// The step the peak fell in (its number, as in `ProfilerStep#N`).
    pub peak_step: usize,
    /// The range that was innermost when the peak was reached (`ProfilerStep*`: outside
    /// every range).
    pub peak_during: String,
    /// Bytes allocated minus bytes freed by the compute threads over the active steps: the
    /// rows' `self_cpu_mem_bytes` add up to it.
    pub cpu_mem_bytes: i64,
    /// Allocations the compute threads made over the active steps.
    pub allocs: u64,
    /// Bytes other threads (an HTTP runtime, a logger) allocated meanwhile: in no row.
    pub other_threads_alloc_bytes: u64,
    /// Allocations other threads made meanwhile.
    pub other_threads_allocs: u64,
    /// On a CUDA device: why the CUDA memory columns are empty (candle exposes no allocation
    /// hook); null on a CPU.
    pub cuda_not_measured: Option<String>,
}

/// Microseconds summed over the active steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Totals {
    /// Σ self CPU time over the rows; equals `wall_us`.
    pub self_cpu_us: f64,
    /// Σ self CUDA time, or null without device timing.
    pub self_cuda_us: Option<f64>,
    /// What the CUDA times measure, or null without device timing.
    pub cuda_time_basis: Option<CudaTimeBasis>,
    /// Σ of the active steps' wall times.
    pub wall_us: f64,
}

/// What the CUDA columns measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CudaTimeBasis {
    /// The stream's time between two marks (a pair of CUDA events, or two synchronises):
    /// it includes the time the stream sat idle waiting for the host to launch the next
    /// kernel, so it is not kernel time (what CUPTI-based profilers such as PyTorch's sum).
    /// At small batch a GPU mostly waits for launches and this column looks like the CPU's.
    Stream,
}

/// One row; times in microseconds summed over the active steps, percentages of the
/// corresponding total of self times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportRow {
    pub name: String,
    /// The budget line the row is on (declared by the op that opened it, else by its name:
    /// [`Line::of_undeclared`]).
    pub line: Line,
    pub input_shapes: Option<String>,
    pub calls: u64,
    pub self_cpu_us: f64,
    pub cpu_total_us: f64,
    pub self_cpu_pct: f64,
    pub self_cuda_us: Option<f64>,
    pub cuda_total_us: Option<f64>,
    pub self_cuda_pct: Option<f64>,
    pub flops: Option<u64>,
    pub bytes: Option<u64>,
    /// The kernel label(s) of the row's ranges, distinct labels sorted and joined by `+`.
    pub kernel: Option<String>,
    /// The type(s) of the values the row's ranges streamed, joined the same way.
    pub dtype: Option<String>,
    /// Achieved rates against the ceilings; null without ceilings, without declared work,
    /// or without time.
    pub roofline: Option<RowRoofline>,
    /// What holds the row back, read off its roofline with `reading_thresholds`; null without
    /// a roofline.
    pub reading: Option<Reading>,
    /// Bytes allocated minus bytes freed inside the row's ranges by the compute threads,
    /// children included (PyTorch's `CPU Mem`), summed over the active steps; null when memory
    /// was not recorded.
    #[serde(default)]
    pub cpu_mem_bytes: Option<i64>,
    /// The same without the direct children's (PyTorch's `Self CPU Mem`); negative when the
    /// row freed more than it allocated.
    #[serde(default)]
    pub self_cpu_mem_bytes: Option<i64>,
    /// Allocations made inside the row's ranges, children included (the course's own column).
    #[serde(default)]
    pub allocs: Option<u64>,
    /// The same without the direct children's.
    #[serde(default)]
    pub self_allocs: Option<u64>,
}

/// Reading or writing a report.json, each error naming the file and the next step.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {path}: {source}. Check that the folder exists and is writable.")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}. Check the path; a report is written by `gpt2 profile --out DIR`.")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a profiler report: {source} (line {line}, column {column}). Regenerate it with `gpt2 profile`.", line = source.line(), column = source.column())]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

impl<SortKey, ViewKind> Report<SortKey, ViewKind>
where
    SortKey: Serialize + DeserializeOwned,
    ViewKind: Serialize + DeserializeOwned,
{
    /// The first `n` rows in sort order, leaving out the `ProfilerStep*` row: the "top ops"
    /// a learner writes down.
    pub fn top(&self, n: usize) -> Vec<&ReportRow> {
        self.rows
            .iter()
            .filter(|r| r.name != STEP_ROW)
            .take(n)
            .collect()
    }

    /// Whether the rows carry CUDA times.
    pub fn has_device_times(&self) -> bool {
        self.totals.self_cuda_us.is_some()
    }

    pub fn to_json(&self) -> String {
        // A report holds only strings, numbers and options: serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parse a report's text; `path` names it in errors. The schema is checked first, so an
    /// old or foreign file gets the migration message.
    pub fn from_json(text: &str, path: &Path) -> Result<Self, ReportError> {
        let shown = path.display().to_string();
        let parse = |source| ReportError::Parse {
            path: shown.clone(),
            source,
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(parse)?;
        FILE.check_value(&value, &shown)?;
        serde_json::from_value(value).map_err(parse)
    }

    pub fn write_json(&self, path: impl AsRef<Path>) -> Result<(), ReportError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json() + "\n").map_err(|source| ReportError::Write {
            path: path.display().to_string(),
            source,
        })
    }

    pub fn read_json(path: impl AsRef<Path>) -> Result<Self, ReportError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text, path)
    }
}
