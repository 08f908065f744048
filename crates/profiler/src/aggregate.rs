//! Key averages: a profile's events grouped by name (and optionally input shape), with self
//! and total times, as PyTorch's `key_averages()` computes them.
//!
//! Self time is total time minus the total time of the direct children. "Direct" depends on
//! the [`View`]: in the op view modules are transparent (an op's children are the nearest op
//! scopes under it, and time a module spends outside any op belongs to the nearest op above
//! it, or to the step); in the module view ops are folded into their module (an op outside
//! every module stays a row of its own); the full view counts every scope.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::alloc::Totals;
use crate::line::Line;
use crate::recording::{Profile, Step};
use crate::scope::Kind;

/// The name of the row that holds each step's time outside every visible scope.
pub use formats::report::STEP_ROW;

/// Which scopes become rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    /// Op scopes; modules are transparent.
    #[default]
    Op,
    /// Module scopes, with the ops inside them folded in.
    Module,
    /// Every scope, ops and modules, each with its own self time.
    All,
}

impl View {
    pub fn as_str(self) -> &'static str {
        match self {
            View::Op => "op",
            View::Module => "module",
            View::All => "all",
        }
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for View {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "op" => Ok(View::Op),
            "module" => Ok(View::Module),
            "all" => Ok(View::All),
            _ => Err(format!("unknown view `{s}`: expected op, module or all")),
        }
    }
}

/// The sort keys PyTorch's `table(sort_by=…)` accepts. Rows sort in decreasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortBy {
    #[default]
    SelfCpuTimeTotal,
    CpuTimeTotal,
    SelfCudaTimeTotal,
    CudaTimeTotal,
    Count,
    /// PyTorch's `self_cpu_memory_usage`: the row's `Self CPU Mem`.
    SelfCpuMemoryUsage,
    /// PyTorch's `cpu_memory_usage`: the row's `CPU Mem`.
    CpuMemoryUsage,
    /// PyTorch's older spelling of [`SortBy::SelfDeviceMemoryUsage`].
    SelfCudaMemoryUsage,
    /// PyTorch's `self_device_memory_usage`. CUDA memory is not measured (candle has no
    /// allocation hook), so rows sort by `Self CPU Mem` and the table says so.
    SelfDeviceMemoryUsage,
}

impl SortBy {
    pub const ALL: [SortBy; 9] = [
        SortBy::SelfCpuTimeTotal,
        SortBy::CpuTimeTotal,
        SortBy::SelfCudaTimeTotal,
        SortBy::CudaTimeTotal,
        SortBy::Count,
        SortBy::SelfCpuMemoryUsage,
        SortBy::CpuMemoryUsage,
        SortBy::SelfCudaMemoryUsage,
        SortBy::SelfDeviceMemoryUsage,
    ];

    /// Whether the key is a memory column.
    pub fn is_memory(self) -> bool {
        matches!(
            self,
            SortBy::SelfCpuMemoryUsage
                | SortBy::CpuMemoryUsage
                | SortBy::SelfCudaMemoryUsage
                | SortBy::SelfDeviceMemoryUsage
        )
    }

    /// Self time where the work ran: on the device for CUDA, whose kernels run asynchronously
    /// (host time would rank their launches), on the host for a CPU.
    pub fn self_time(on_cuda: bool) -> Self {
        if on_cuda {
            SortBy::SelfCudaTimeTotal
        } else {
            SortBy::SelfCpuTimeTotal
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SortBy::SelfCpuTimeTotal => "self_cpu_time_total",
            SortBy::CpuTimeTotal => "cpu_time_total",
            SortBy::SelfCudaTimeTotal => "self_cuda_time_total",
            SortBy::CudaTimeTotal => "cuda_time_total",
            SortBy::Count => "count",
            SortBy::SelfCpuMemoryUsage => "self_cpu_memory_usage",
            SortBy::CpuMemoryUsage => "cpu_memory_usage",
            SortBy::SelfCudaMemoryUsage => "self_cuda_memory_usage",
            SortBy::SelfDeviceMemoryUsage => "self_device_memory_usage",
        }
    }
}

impl fmt::Display for SortBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SortBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        SortBy::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = SortBy::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "unknown sort key `{s}`: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// One row of key averages. Times are nanoseconds summed over all active steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    /// The budget line of the row's ranges (the first one's, should two disagree).
    pub line: Line,
    pub input_shapes: Option<String>,
    pub calls: u64,
    pub self_cpu_ns: u64,
    pub cpu_total_ns: u64,
    pub self_device_ns: Option<u64>,
    pub device_total_ns: Option<u64>,
    pub flops: Option<u64>,
    pub bytes: Option<u64>,
    /// The kernel labels of the row's ranges ([`crate::Scope::with_kernel`]): one label, or
    /// the distinct labels in sorted order joined by `+` when calls ran on different kernels.
    pub kernel: Option<String>,
    /// The types of the row's ranges ([`crate::Scope::with_dtype`]), joined the same way.
    pub dtype: Option<String>,
    /// Bytes allocated minus bytes freed by the compute threads inside the row's ranges,
    /// children included (PyTorch's `CPU Mem`), summed over the active steps; `None` when
    /// memory was not recorded.
    pub cpu_mem: Option<i64>,
    /// The same without the direct children's (PyTorch's `Self CPU Mem`): negative when the
    /// row freed more than it allocated.
    pub self_cpu_mem: Option<i64>,
    /// Allocations made inside the row's ranges, children included (the course's column).
    pub allocs: Option<u64>,
    /// The same without the direct children's.
    pub self_allocs: Option<u64>,
}

/// Rows plus the totals their percentages are taken of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAverages {
    pub rows: Vec<Row>,
    pub view: View,
    pub sort_by: SortBy,
    pub grouped_by_input_shape: bool,
    pub active_steps: usize,
    /// Σ self CPU over all rows: equals the active steps' wall time.
    pub self_cpu_total_ns: u64,
    /// Σ self device time, when device times were recorded.
    pub self_device_total_ns: Option<u64>,
    pub wall_ns: u64,
}

type Key = (String, Option<String>);

/// The distinct kernel labels and types seen per row while the steps are added.
#[derive(Default)]
struct Labels {
    kernels: BTreeSet<&'static str>,
    dtypes: BTreeSet<&'static str>,
}

/// One label, or the distinct labels in sorted order joined by `+`; `None` for none.
fn joined(labels: BTreeSet<&'static str>) -> Option<String> {
    (!labels.is_empty()).then(|| labels.into_iter().collect::<Vec<_>>().join("+"))
}

impl Profile {
    /// Group events into rows for `view`, sorted by `sort_by` (decreasing; ties by name).
    pub fn key_averages(
        &self,
        view: View,
        group_by_input_shape: bool,
        sort_by: SortBy,
    ) -> KeyAverages {
        let has_device = self.has_device_times();
        let has_memory = self.has_memory();
        let mut rows: HashMap<Key, Row> = HashMap::new();
        let mut labels: HashMap<Key, Labels> = HashMap::new();
        for step in &self.steps {
            add_step(
                step,
                view,
                group_by_input_shape,
                (has_device, has_memory),
                &mut rows,
                &mut labels,
            );
        }
        for (key, Labels { kernels, dtypes }) in labels {
            if let Some(row) = rows.get_mut(&key) {
                row.kernel = joined(kernels);
                row.dtype = joined(dtypes);
            }
        }
        let mut rows: Vec<Row> = rows.into_values().collect();
        sort_rows(&mut rows, sort_by);
        let self_cpu_total_ns = rows.iter().map(|r| r.self_cpu_ns).sum();
        let self_device_total_ns =
            has_device.then(|| rows.iter().filter_map(|r| r.self_device_ns).sum());
        KeyAverages {
            rows,
            view,
            sort_by,
            grouped_by_input_shape: group_by_input_shape,
            active_steps: self.active_steps(),
            self_cpu_total_ns,
            self_device_total_ns,
            wall_ns: self.wall_ns(),
        }
    }
}

fn sort_rows(rows: &mut [Row], sort_by: SortBy) {
    let key = |r: &Row| -> i128 {
        match sort_by {
            SortBy::SelfCpuTimeTotal => r.self_cpu_ns.into(),
            SortBy::CpuTimeTotal => r.cpu_total_ns.into(),
            SortBy::SelfCudaTimeTotal => r.self_device_ns.unwrap_or(r.self_cpu_ns).into(),
            SortBy::CudaTimeTotal => r.device_total_ns.unwrap_or(r.cpu_total_ns).into(),
            SortBy::Count => r.calls.into(),
            SortBy::SelfCpuMemoryUsage
            | SortBy::SelfCudaMemoryUsage
            | SortBy::SelfDeviceMemoryUsage => r.self_cpu_mem.unwrap_or(0).into(),
            SortBy::CpuMemoryUsage => r.cpu_mem.unwrap_or(0).into(),
        }
    };
    rows.sort_by(|a, b| {
        key(b)
            .cmp(&key(a))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.input_shapes.cmp(&b.input_shapes))
    });
}

fn new_row(
    name: &str,
    line: Line,
    shapes: Option<String>,
    (has_device, has_memory): (bool, bool),
) -> Row {
    Row {
        name: name.to_string(),
        line,
        input_shapes: shapes,
        calls: 0,
        self_cpu_ns: 0,
        cpu_total_ns: 0,
        self_device_ns: has_device.then_some(0),
        device_total_ns: has_device.then_some(0),
        flops: None,
        bytes: None,
        kernel: None,
        dtype: None,
        cpu_mem: has_memory.then_some(0),
        self_cpu_mem: has_memory.then_some(0),
        allocs: has_memory.then_some(0),
        self_allocs: has_memory.then_some(0),
    }
}

/// Add one range's memory to a row: `all` its own (children included), `children` its direct
/// visible children's.
fn add_memory(row: &mut Row, all: Totals, children: (i64, u64)) {
    let net = all.net();
    *row.cpu_mem.get_or_insert(0) += net;
    *row.self_cpu_mem.get_or_insert(0) += net - children.0;
    *row.allocs.get_or_insert(0) += all.allocs;
    *row.self_allocs.get_or_insert(0) += all.allocs.saturating_sub(children.1);
}

fn add_work(row: &mut Row, flops: Option<u64>, bytes: Option<u64>) {
    if let Some(f) = flops {
        row.flops = Some(row.flops.unwrap_or(0) + f);
    }
    if let Some(b) = bytes {
        row.bytes = Some(row.bytes.unwrap_or(0) + b);
    }
}

/// Add one step's events to the rows.
fn add_step(
    step: &Step,
    view: View,
    grouped: bool,
    has: (bool, bool),
    rows: &mut HashMap<Key, Row>,
    labels: &mut HashMap<Key, Labels>,
) {
    let has_device = has.0;
    let n = step.events.len();
    // Whether each event is a row in this view, and its nearest visible ancestor
    // (`None`: the step itself). Parents precede children, so one pass suffices.
    let mut visible = vec![false; n];
    let mut under_module = vec![false; n];
    let mut view_parent: Vec<Option<usize>> = vec![None; n];
    for (i, e) in step.events.iter().enumerate() {
        if let Some(p) = e.parent {
            under_module[i] = under_module[p] || step.events[p].kind == Kind::Module;
            view_parent[i] = if visible[p] { Some(p) } else { view_parent[p] };
        }
        visible[i] = match view {
            View::Op => e.kind == Kind::Op,
            View::Module => e.kind == Kind::Module || !under_module[i],
            View::All => true,
        };
    }

    // Σ direct (visible) children's totals, per event and for the step.
    let mut child_host = vec![0u64; n];
    let mut child_device = vec![0u64; n];
    let (mut root_child_host, mut root_child_device) = (0u64, 0u64);
    // Σ direct children's memory: (net bytes, allocations).
    let mut child_mem = vec![(0i64, 0u64); n];
    let mut root_child_mem = (0i64, 0u64);
    for (i, e) in step.events.iter().enumerate() {
        if !visible[i] {
            continue;
        }
        let (h, d) = (e.host_ns(), e.device_duration_ns().unwrap_or(0));
        let m = e.memory.map_or((0, 0), |m| (m.net(), m.allocs));
        let (host, device, mem) = match view_parent[i] {
            Some(p) => (&mut child_host[p], &mut child_device[p], &mut child_mem[p]),
            None => (
                &mut root_child_host,
                &mut root_child_device,
                &mut root_child_mem,
            ),
        };
        *host += h;
        *device += d;
        mem.0 += m.0;
        mem.1 += m.1;
    }

    let key_of = |name: &str, shapes: &Option<String>| -> Key {
        (
            name.to_string(),
            if grouped { shapes.clone() } else { None },
        )
    };
    let root_key: Key = (STEP_ROW.to_string(), None);
    let device_wall = step.device_ns.unwrap_or(0);
    {
        let root = rows
            .entry(root_key.clone())
            .or_insert_with(|| new_row(STEP_ROW, Line::Other, None, has));
        root.calls += 1;
        if let Some(m) = &step.memory {
            add_memory(root, m.totals, root_child_mem);
        }
        root.cpu_total_ns += step.wall_ns();
        root.self_cpu_ns += step.wall_ns().saturating_sub(root_child_host);
        if has_device {
            *root.device_total_ns.get_or_insert(0) += device_wall;
            *root.self_device_ns.get_or_insert(0) += device_wall.saturating_sub(root_child_device);
        }
    }

    for (i, e) in step.events.iter().enumerate() {
        // Work, kernel labels and types belong to the row the event's time is folded into.
        let owner = if visible[i] { Some(i) } else { view_parent[i] };
        if e.flops.is_some() || e.bytes.is_some() || e.kernel.is_some() || e.dtype.is_some() {
            let key = match owner {
                Some(o) => key_of(step.events[o].name, &step.events[o].shapes),
                None => root_key.clone(),
            };
            if e.kernel.is_some() || e.dtype.is_some() {
                let row_labels = labels.entry(key.clone()).or_default();
                row_labels.kernels.extend(e.kernel);
                row_labels.dtypes.extend(e.dtype);
            }
            let shapes = key.1.clone();
            let (name, line) = owner.map_or((STEP_ROW, Line::Other), |o| {
                (step.events[o].name, step.events[o].line)
            });
            let row = rows
                .entry(key)
                .or_insert_with(|| new_row(name, line, shapes, has));
            add_work(row, e.flops, e.bytes);
        }
        if !visible[i] {
            continue;
        }
        let key = key_of(e.name, &e.shapes);
        let shapes = key.1.clone();
        let row = rows
            .entry(key)
            .or_insert_with(|| new_row(e.name, e.line, shapes, has));
        row.calls += 1;
        if let Some(m) = e.memory {
            add_memory(row, m, child_mem[i]);
        }
        row.cpu_total_ns += e.host_ns();
        row.self_cpu_ns += e.host_ns().saturating_sub(child_host[i]);
        if has_device {
            let d = e.device_duration_ns().unwrap_or(0);
            *row.device_total_ns.get_or_insert(0) += d;
            *row.self_device_ns.get_or_insert(0) += d.saturating_sub(child_device[i]);
        }
    }
}

impl KeyAverages {
    /// The row holding time outside every visible scope (`ProfilerStep*`).
    pub fn step_row(&self) -> Option<&Row> {
        self.rows.iter().find(|r| r.name == STEP_ROW)
    }

    /// Share of the wall time spent inside visible scopes, in [0, 1]. Σ self = wall holds
    /// by construction, so this is the real coverage figure: 1 − the step row's self share.
    pub fn scoped_fraction(&self) -> f64 {
        if self.wall_ns == 0 {
            return 0.0;
        }
        let unscoped = self.step_row().map_or(0, |r| r.self_cpu_ns);
        1.0 - unscoped as f64 / self.wall_ns as f64
    }
}

/// How to group, sort and cut the table (and the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableOptions {
    pub sort_by: SortBy,
    /// Show only the first N rows (the report always holds every row).
    pub row_limit: Option<usize>,
    /// One row per (name, input shapes) instead of per name.
    pub group_by_input_shape: bool,
    pub view: View,
    /// Show achieved GFLOP/s and GB/s for rows whose scopes declared their work (also on
    /// when the profiler's `Options::with_flops` was). With ceilings the roofline columns,
    /// which include these two, are always shown.
    pub with_flops: bool,
}

impl TableOptions {
    /// The first `row_limit` rows by `sort_by`: PyTorch's `table(sort_by=…, row_limit=…)`.
    pub fn top(sort_by: SortBy, row_limit: usize) -> Self {
        Self {
            sort_by,
            row_limit: Some(row_limit),
            ..Self::default()
        }
    }
}
