//! Profiling a forward pass of any model ([`crate::CausalLm`]): the steps of `gpt2 profile`
//! and of exercises 3 and 8.
//!
//! The profiler's schedule runs warm-up forwards (allocations, thread pools, kernel set-up)
//! that are not counted, then active forwards that are. On CUDA, op times come from CUDA
//! events recorded on candle's stream (or, in sync mode, from synchronising around every
//! op); host clocks around asynchronous launches would time the launches, not the kernels.
//! The profile carries this machine's measured ceilings ([`crate::ceilings`]), so every op
//! that declared its work gets a roofline: what bounds it, how close it came, and the reading
//! the profiler takes from that (memory-bound, compute-bound, slow kernel, launch overhead),
//! with the profiler's documented thresholds: `gpt2 profile` and the exercises grade nothing.

use std::path::{Path, PathBuf};

use profiler::{
    Ceilings, CudaTiming, DeviceKind, Options, Profile, Profiler, Schedule, TableOptions, Timing,
};

use crate::causal_lm::CausalLm;
use crate::error::{Error, Result};
use crate::pass::{Logits, Segment};

/// One profiled forward pass, repeated.
#[derive(Debug, Clone)]
pub struct ForwardProfile {
    pub batch: usize,
    pub seq: usize,
    /// Forwards run and thrown away before recording.
    pub warmup: usize,
    /// Forwards recorded (the table reports totals over them, like PyTorch's).
    pub active: usize,
    pub record_shapes: bool,
    pub with_flops: bool,
    pub cuda_timing: CudaTiming,
}

impl Default for ForwardProfile {
    fn default() -> Self {
        Self {
            batch: 1,
            seq: 8,
            warmup: 2,
            active: 5,
            record_shapes: true,
            with_flops: false,
            cuda_timing: CudaTiming::Events,
        }
    }
}

impl std::fmt::Display for ForwardProfile {
    /// The table's heading: `forward pass B=1 T=8: 5 recorded after 2 warm-up`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "forward pass B={} T={}: {} recorded after {} warm-up",
            self.batch, self.seq, self.active, self.warmup
        )
    }
}

/// The shape and schedule of a profiled forward, as the commands that profile one take them
/// (`gpt2 profile`, exercise 8); the defaults are [`ForwardProfile::default`]'s.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct ScheduleArgs {
    /// Sequences in the batch.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// Tokens per sequence.
    #[arg(long, default_value_t = 8)]
    pub seq: usize,
    /// Forwards run first and not recorded (allocations, thread pools, kernel set-up).
    #[arg(long, default_value_t = 2)]
    pub warmup: usize,
    /// Forwards recorded; the table's times are totals over them.
    #[arg(long, default_value_t = 5)]
    pub active: usize,
}

impl ScheduleArgs {
    /// The profile these flags ask for, with every op's input shapes recorded.
    pub fn profile(&self, with_flops: bool, cuda_timing: CudaTiming) -> ForwardProfile {
        let Self {
            batch,
            seq,
            warmup,
            active,
        } = *self;
        ForwardProfile {
            batch,
            seq,
            warmup,
            active,
            record_shapes: true,
            with_flops,
            cuda_timing,
        }
    }
}

/// Seeded ids inside any vocabulary: the profile does not depend on the text.
pub fn sample_ids(batch: usize, seq: usize, vocab: usize) -> Vec<Vec<u32>> {
    (0..batch)
        .map(|b| {
            (0..seq)
                .map(|t| ((b * 7919 + t * 104_729 + 464) % vocab) as u32)
                .collect()
        })
        .collect()
}

/// Runs `model(ids)` (logits for every position, as in PyTorch's recipe) under the
/// profiler and returns the recorded profile, with this machine's ceilings: read from the
/// cache, or measured once (a note on standard error says so).
pub fn profile_forward(model: &dyn CausalLm, p: &ForwardProfile) -> Result<Profile> {
    let ceilings = machine_ceilings(model, false);
    profile_forward_with(model, p, ceilings)
}

/// This machine's ceilings for `model`'s device and dtype (see [`crate::ceilings`]), notes
/// on standard error. A measurement that fails is one line there too: the profile is still
/// worth having without its roofline columns.
pub fn machine_ceilings(model: &dyn CausalLm, remeasure: bool) -> Option<Ceilings> {
    let mut note = |line: &str| eprintln!("{line}");
    match crate::ceilings::for_device(
        model.device(),
        model.dtype(),
        model.kernel_path(),
        remeasure,
        &mut note,
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("warning: cannot measure this machine's ceilings ({e}); the table has no roofline columns");
            None
        }
    }
}

/// [`profile_forward`] with the ceilings given (`None`: no roofline columns), recorded on the
/// compute pool ([`crate::cpu::on_pool`]) as the benchmark and generation run the model.
pub fn profile_forward_with(
    model: &dyn CausalLm,
    p: &ForwardProfile,
    ceilings: Option<Ceilings>,
) -> Result<Profile> {
    crate::cpu::on_pool(|| record_forward(model, p, ceilings, false))
}

/// [`profile_forward_with`] recording memory too (PyTorch's `profile_memory=True`): every row
/// gets `CPU Mem`, `Self CPU Mem` and its allocations, every step its peak and a memory
/// timeline. Counts only in a program that declares [`profiler::CountingAlloc`] as its global
/// allocator (`gpt2` does; without it the profile carries a warning and no memory columns).
pub fn profile_forward_with_memory(
    model: &dyn CausalLm,
    p: &ForwardProfile,
    ceilings: Option<Ceilings>,
) -> Result<Profile> {
    crate::cpu::on_pool(|| record_forward(model, p, ceilings, true))
}

/// A short generation recorded with memory: a prefill of `p.batch` sequences of `p.seq`
/// tokens, then `new_tokens` decode steps, one profiler step each (no warm-up: the KV cache
/// is allocated at its capacity in the first step, which is what the timeline shows). Returns
/// the profile and the positions each step's caches hold once it ran.
pub fn profile_generation_memory(
    model: &dyn CausalLm,
    p: &ForwardProfile,
    new_tokens: usize,
) -> Result<(Profile, Vec<usize>)> {
    crate::cpu::on_pool(|| {
        let ids = sample_ids(p.batch, p.seq, model.vocab_size());
        let steps = new_tokens + 1;
        let spec = ForwardProfile {
            warmup: 0,
            active: steps,
            ..p.clone()
        };
        let mut prof = recorder(model.device(), &spec)?.with_memory();
        let capacity = p.seq + new_tokens;
        let mut caches = model.new_caches(p.batch, capacity);
        let mut positions = Vec::with_capacity(steps);
        for step in 0..steps {
            let rows: Vec<Vec<u32>> = if step == 0 {
                ids.clone()
            } else {
                // Any token will do: the memory a step takes does not depend on which.
                ids.iter().map(|r| vec![r[step % r.len()]]).collect()
            };
            prof.step(|| {
                model
                    .forward(&mut Segment::rows(
                        &rows,
                        &mut caches,
                        Logits::LastPosition,
                    )?)
                    .map(drop)
            })?;
            positions.push(p.seq + step);
        }
        drop(caches);
        let mut profile = prof.finish();
        profile.environment.dtype = model.dtype().as_str().to_string();
        Ok((profile, positions))
    })
}

/// The KV cache's positions in use as bytes, for the timeline's "computed" series: the cache's
/// measured bytes at its capacity (the KV cache category's rise over the profile) times the
/// positions each step's caches hold over `capacity`, drawn at the step's start and end.
pub fn kv_in_use_series(
    profile: &Profile,
    positions: &[usize],
    capacity: usize,
) -> Vec<(f64, i64)> {
    let Some(timeline) = profile.memory_timeline() else {
        return Vec::new();
    };
    let kv = |p: &profiler::TimelinePoint| p.by_category[1];
    let base = timeline.points.first().map_or(0, kv);
    let at_capacity = timeline.points.iter().map(kv).max().unwrap_or(0) - base;
    let origin = profile.steps.first().map_or(0, |s| s.start_ns);
    let ms = |ns: u64| ns.saturating_sub(origin) as f64 / 1e6;
    let mut series = Vec::new();
    for (step, used) in profile.steps.iter().zip(positions) {
        let bytes = base + at_capacity * *used as i64 / capacity.max(1) as i64;
        series.push((ms(step.start_ns), bytes));
        series.push((ms(step.end_ns), bytes));
    }
    series
}

/// The op rows (the step row left out) of one recorded step that runs every op a model has:
/// a prefill of two 6-token sequences with logits for every position (the mask is built and
/// applied; 12 rows, enough for the products' widest kernels), then a decode step of both for
/// the last position only. Each model's budget test reads these rows against the op list.
pub fn every_op_rows(model: &dyn CausalLm) -> Result<Vec<profiler::Row>> {
    let mut prof = Profiler::new(Options {
        schedule: Schedule::new(0, 0, 1, 1),
        ..Options::default()
    });
    while !prof.is_done() {
        prof.step(|| -> Result<()> {
            let mut caches = model.new_caches(2, 7);
            model.forward(&mut Segment::rows(
                &[vec![5, 6, 7, 8, 9, 10], vec![1, 2, 7, 8, 9, 10]],
                &mut caches,
                Logits::AllPositions,
            )?)?;
            model.forward(&mut Segment::rows(
                &[vec![11], vec![11]],
                &mut caches,
                Logits::LastPosition,
            )?)?;
            Ok(())
        })?;
    }
    let rows = prof
        .finish()
        .key_averages(
            profiler::View::Op,
            false,
            profiler::SortBy::SelfCpuTimeTotal,
        )
        .rows;
    Ok(rows
        .into_iter()
        .filter(|r| r.name != profiler::STEP_ROW)
        .collect())
}

/// The profiler `p` describes, for forwards on `device`: its schedule, shapes and FLOP counts,
/// the compute threads, CUDA events (or sync) where the device is a GPU, and the reading
/// thresholds. Every model's profile is recorded with it, whichever tier made the model.
pub fn recorder(device: &candle_core::Device, p: &ForwardProfile) -> Result<Profiler> {
    let options = Options {
        schedule: Schedule::new(0, p.warmup, p.active.max(1), 1),
        record_shapes: p.record_shapes,
        with_flops: p.with_flops,
        device: if device.is_cuda() {
            DeviceKind::Cuda
        } else {
            DeviceKind::Cpu
        },
        threads: Some(candle_core::utils::get_num_threads()),
    };
    Ok(
        attach_device_timer(Profiler::new(options), device, p.cuda_timing)?
            .with_reading_thresholds(profiler::reading::Thresholds::DEFAULT),
    )
}

fn record_forward(
    model: &dyn CausalLm,
    p: &ForwardProfile,
    ceilings: Option<Ceilings>,
    memory: bool,
) -> Result<Profile> {
    let ids = sample_ids(p.batch, p.seq, model.vocab_size());
    let mut prof = recorder(model.device(), p)?;
    if memory {
        prof = prof.with_memory();
    }
    if let Some(c) = ceilings {
        prof = prof.with_ceilings(c);
    }
    while !prof.is_done() {
        prof.step(|| {
            model
                .forward(&mut Segment::rows(
                    &ids,
                    &mut model.new_caches(p.batch, p.seq),
                    Logits::AllPositions,
                )?)
                .map(drop)
        })?;
    }
    let mut profile = prof.finish();
    // The profiler knows no model; the report's environment names the dtype it ran in.
    profile.environment.dtype = model.dtype().as_str().to_string();
    Ok(profile)
}

#[cfg(feature = "cuda")]
fn attach_device_timer(
    prof: Profiler,
    device: &candle_core::Device,
    timing: CudaTiming,
) -> Result<Profiler> {
    use profiler::cuda_timing::CudaTimer;
    if !device.is_cuda() {
        return Ok(prof);
    }
    Ok(prof.with_device_timer(CudaTimer::new(device, timing)?))
}

#[cfg(not(feature = "cuda"))]
fn attach_device_timer(
    prof: Profiler,
    _device: &candle_core::Device,
    _timing: CudaTiming,
) -> Result<Profiler> {
    Ok(prof)
}

/// An error when a profile of a CUDA run lacks device times for any step (the profiler
/// warned, e.g. an event failed): its table would fall back to host clocks around
/// asynchronous launches, which time the launches, not the kernels. `gpt2 profile` still
/// writes the report (its `warnings` say what failed) and then exits non-zero.
pub fn check_device_timing(profile: &Profile) -> Result<()> {
    if profile.device != DeviceKind::Cuda {
        return Ok(());
    }
    let failed: Vec<&str> = profile
        .warnings
        .iter()
        .filter(|w| w.contains("device timing failed"))
        .map(String::as_str)
        .collect();
    let untimed = profile.timing == Timing::Host || !profile.has_device_times();
    if failed.is_empty() && !untimed {
        return Ok(());
    }
    let why = if failed.is_empty() {
        "no device timer was attached".to_string()
    } else {
        failed.join("; ")
    };
    Err(Error::Device(format!(
        "CUDA device timing failed, so the self CUDA column is missing or partial: {why}. \
         Next step: rerun with `--cuda-timing sync` (host clock after a synchronise around every op), \
         and check the driver with `nvidia-smi`"
    )))
}

/// The profiler's cost on a forward pass: medians of the same forward run with and
/// without recording.
#[derive(Debug, Clone, Copy)]
pub struct Overhead {
    pub plain_ms: f64,
    pub profiled_ms: f64,
    /// Profiled with memory recorded too, when asked ([`measure_overhead_with_memory`]).
    pub with_memory_ms: Option<f64>,
    pub repeats: usize,
}

impl Overhead {
    pub fn percent(&self) -> f64 {
        (self.profiled_ms / self.plain_ms - 1.0) * 100.0
    }

    /// The overhead with memory recorded, percent of the unprofiled forward.
    pub fn with_memory_percent(&self) -> Option<f64> {
        self.with_memory_ms
            .map(|ms| (ms / self.plain_ms - 1.0) * 100.0)
    }
}

/// Alternates unprofiled and profiled forwards `repeats` times each (after `p.warmup`
/// untimed pairs), so drift in the machine's speed hits both sides alike.
pub fn measure_overhead(
    model: &dyn CausalLm,
    p: &ForwardProfile,
    repeats: usize,
) -> Result<Overhead> {
    crate::cpu::on_pool(|| overhead(model, p, repeats, false))
}

/// [`measure_overhead`] with a third forward in each round, profiled with memory recorded
/// (the counting allocator on for that forward only: the other two run with it off). Needs the
/// program to declare [`profiler::CountingAlloc`].
pub fn measure_overhead_with_memory(
    model: &dyn CausalLm,
    p: &ForwardProfile,
    repeats: usize,
) -> Result<Overhead> {
    crate::cpu::on_pool(|| overhead(model, p, repeats, true))
}

fn overhead(
    model: &dyn CausalLm,
    p: &ForwardProfile,
    repeats: usize,
    memory: bool,
) -> Result<Overhead> {
    use std::time::Instant;
    let ids = sample_ids(p.batch, p.seq, model.vocab_size());
    let forward = || {
        model
            .forward(&mut Segment::rows(
                &ids,
                &mut model.new_caches(p.batch, p.seq),
                Logits::AllPositions,
            )?)
            .map(drop)
    };
    let runs = p.warmup + repeats.max(1);
    // One profiler and one device timer for every run: a CUDA timer creates its events on
    // first use and re-records them afterwards, so building it per run would time about
    // 1,100 event creations inside each profiled forward.
    let options = Options {
        schedule: Schedule::new(0, 0, runs, 1),
        record_shapes: p.record_shapes,
        ..Options::default()
    };
    let mut prof = attach_device_timer(
        Profiler::new(options.clone()),
        model.device(),
        p.cuda_timing,
    )?;
    let mut with_memory = if memory {
        let prof = attach_device_timer(Profiler::new(options), model.device(), p.cuda_timing)?
            .with_memory();
        if !prof.records_memory() {
            return Err(Error::Input(
                "this program does not declare profiler::CountingAlloc as its global allocator, \
                 so memory cannot be counted"
                    .to_string(),
            ));
        }
        Some(prof)
    } else {
        None
    };
    profiler::alloc::disable();
    let (mut plain, mut profiled, mut memory_ms) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let start = Instant::now();
        forward()?;
        model.device().synchronize()?;
        let plain_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        prof.step(forward)?;
        model.device().synchronize()?;
        let profiled_ms = start.elapsed().as_secs_f64() * 1e3;
        if let Some(prof) = with_memory.as_mut() {
            profiler::alloc::enable();
            let start = Instant::now();
            prof.step(forward)?;
            model.device().synchronize()?;
            let ms = start.elapsed().as_secs_f64() * 1e3;
            profiler::alloc::disable();
            if i >= p.warmup {
                memory_ms.push(ms);
            }
        }
        if i >= p.warmup {
            plain.push(plain_ms);
            profiled.push(profiled_ms);
        }
    }
    Ok(Overhead {
        plain_ms: crate::model_cases::median(&mut plain),
        profiled_ms: crate::model_cases::median(&mut profiled),
        with_memory_ms: with_memory.map(|_| crate::model_cases::median(&mut memory_ms)),
        repeats: plain.len(),
    })
}

/// The files a profile is exported to.
#[derive(Debug, Clone)]
pub struct Exports {
    pub report: PathBuf,
    pub trace: PathBuf,
    pub folded: PathBuf,
    pub flamegraph: PathBuf,
    /// `memory-timeline.svg`, when the profile recorded memory.
    pub memory_timeline: Option<PathBuf>,
}

impl Exports {
    /// What was written, for the lines after the table; `report_note` says who reads the report.
    pub fn listing(&self, report_note: &str) -> String {
        let mut text = format!(
            "wrote {} ({report_note}),\n      {} (open in https://ui.perfetto.dev), {} and {}",
            self.report.display(),
            self.trace.display(),
            self.folded.display(),
            self.flamegraph.display()
        );
        if let Some(t) = &self.memory_timeline {
            text.push_str(&format!(
                ",\n      {} (live bytes by category)",
                t.display()
            ));
        }
        text
    }
}

/// Writes `report.json` (the grader reads it), `trace.json` (Perfetto, chrome://tracing),
/// `stacks.folded` and `flamegraph.svg` into `dir`.
pub fn write_exports(profile: &Profile, options: TableOptions, dir: &Path) -> Result<Exports> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let out = Exports {
        report: dir.join("report.json"),
        trace: dir.join("trace.json"),
        folded: dir.join("stacks.folded"),
        flamegraph: dir.join("flamegraph.svg"),
        memory_timeline: profile
            .has_memory()
            .then(|| dir.join("memory-timeline.svg")),
    };
    // The profiler's errors already name the file.
    let fail = |e: profiler::ProfilerError| Error::Input(e.to_string());
    profile
        .report_with(options)
        .write_json(&out.report)
        .map_err(|e| Error::Input(e.to_string()))?;
    profile.chrome_trace(&out.trace).map_err(fail)?;
    std::fs::write(&out.folded, profile.folded_stacks()).map_err(|e| Error::io(&out.folded, e))?;
    profile.flamegraph_svg(&out.flamegraph).map_err(fail)?;
    if let Some(path) = &out.memory_timeline {
        let title = format!(
            "Live bytes over {} recorded forward{}",
            profile.active_steps(),
            if profile.active_steps() == 1 { "" } else { "s" }
        );
        profile
            .memory_timeline_svg(path, &title, None)
            .map_err(fail)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        schedule: ScheduleArgs,
    }

    #[test]
    fn the_flags_default_to_the_default_profile_and_set_its_fields() {
        let given = Command::parse_from(["profile"])
            .schedule
            .profile(false, CudaTiming::Events);
        assert_eq!(
            format!("{given:?}"),
            format!("{:?}", ForwardProfile::default())
        );
        let flags = [
            "profile", "--batch", "4", "--seq", "16", "--warmup", "1", "--active", "3",
        ];
        let given = Command::parse_from(flags)
            .schedule
            .profile(true, CudaTiming::Sync);
        assert_eq!(
            (given.batch, given.seq, given.warmup, given.active),
            (4, 16, 1, 3)
        );
        assert!(given.record_shapes && given.with_flops);
        assert_eq!(given.cuda_timing, CudaTiming::Sync);
        assert_eq!(
            given.to_string(),
            "forward pass B=4 T=16: 3 recorded after 1 warm-up"
        );
    }
}
