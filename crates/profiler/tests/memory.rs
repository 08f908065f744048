//! The memory columns and the memory timeline, measured through the counting allocator this
//! test binary declares (a binary that does not declare it counts nothing: see
//! `memory_without_allocator.rs`).

use std::sync::Mutex;

use profiler::{Category, Options, Profile, Profiler, Row, Schedule, SortBy, View, STEP_ROW};

#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

/// The counters are process-wide and one profiler records memory at a time: the tests take
/// turns.
static TURN: Mutex<()> = Mutex::new(());

const MIB: usize = 1 << 20;

fn record(active: usize, mut step: impl FnMut()) -> Profile {
    let mut prof = Profiler::new(Options {
        schedule: Schedule::new(0, 0, active, 1),
        ..Options::default()
    })
    .with_memory();
    assert!(
        prof.records_memory(),
        "the allocator is declared: memory is recorded"
    );
    while !prof.is_done() {
        prof.step(&mut step);
    }
    let profile = prof.finish();
    assert!(profile.warnings.is_empty(), "{:?}", profile.warnings);
    profile
}

fn row<'a>(rows: &'a [Row], name: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name} in {rows:#?}"))
}

fn rows(profile: &Profile, view: View) -> Vec<Row> {
    profile
        .key_averages(view, false, SortBy::SelfCpuMemoryUsage)
        .rows
}

#[test]
fn an_op_that_allocates_a_tensor_reports_its_bytes_as_self_memory() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut kept = Vec::with_capacity(1);
    let profile = record(1, || {
        let _s = profiler::op("alloc_tensor");
        kept.push(std::hint::black_box(vec![1.0f32; MIB / 4]));
    });
    let rows = rows(&profile, View::Op);
    let r = row(&rows, "alloc_tensor");
    assert_eq!(r.self_cpu_mem, Some(MIB as i64), "{r:?}");
    assert_eq!(r.cpu_mem, r.self_cpu_mem);
    assert_eq!(r.self_allocs, Some(1));
    // Sorted by self CPU memory, the op is first.
    assert_eq!(rows[0].name, "alloc_tensor");
}

#[test]
fn a_parent_includes_its_children_and_a_freed_temporary_is_negative() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut outputs = Vec::with_capacity(1);
    let profile = record(1, || {
        let input = vec![0u8; 3 * MIB];
        let _block = profiler::module("block");
        let a = {
            let _s = profiler::op("producer");
            std::hint::black_box(vec![0u8; 2 * MIB])
        };
        {
            let _s = profiler::op("consumer");
            // Frees what the step and the producer made, allocates a smaller output.
            let out = std::hint::black_box(vec![0u8; MIB]);
            drop(std::hint::black_box(a));
            drop(std::hint::black_box(input));
            outputs.push(out);
        }
        // The module's own work, outside both ops: a scratch buffer made and freed.
        drop(std::hint::black_box(vec![0u8; 4096]));
    });
    let all = rows(&profile, View::All);
    let producer = row(&all, "producer");
    let consumer = row(&all, "consumer");
    let block = row(&all, "block");
    assert_eq!(producer.self_cpu_mem, Some(2 * MIB as i64));
    // Allocated 1 MiB, freed 2 + 3 MiB.
    assert_eq!(consumer.self_cpu_mem, Some(MIB as i64 - 5 * MIB as i64));
    assert!(consumer.self_cpu_mem.unwrap() < 0);
    // The module: its children's sum, and its own scratch buffer made and freed (net 0).
    assert_eq!(
        block.cpu_mem,
        Some(producer.cpu_mem.unwrap() + consumer.cpu_mem.unwrap())
    );
    assert_eq!(block.self_cpu_mem, Some(0));
    assert_eq!(block.self_allocs, Some(1));
    assert_eq!(block.allocs, Some(1 + 1 + 1));
    // Self memory adds up to the step's (the 3 MiB input was allocated in the step itself).
    let step = row(&all, STEP_ROW);
    let sum: i64 = all.iter().map(|r| r.self_cpu_mem.unwrap()).sum();
    assert_eq!(sum, step.cpu_mem.unwrap());
    assert_eq!(step.cpu_mem, Some(MIB as i64));
    // The table shows PyTorch's columns, the report carries them and reads back the same.
    let options = profiler::TableOptions {
        sort_by: SortBy::SelfCpuMemoryUsage,
        view: View::All,
        ..Default::default()
    };
    let table = profile.table(options);
    for column in [
        "CPU Mem",
        "Self CPU Mem",
        "Self Allocs",
        "Peak live memory:",
    ] {
        assert!(table.contains(column), "{column}: {table}");
    }
    let consumer_line = table
        .lines()
        .find(|l| l.trim_start().starts_with("consumer"))
        .unwrap();
    assert!(consumer_line.contains("-4.00 Mb"), "{consumer_line}");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("report.json");
    let report = profile.report_with(options);
    report.write_json(&path).expect("written");
    let back = profiler::Report::read_json(&path).expect("read back");
    assert_eq!(back.memory, report.memory);
    let memory_of = |r: &profiler::ReportRow| {
        (
            r.cpu_mem_bytes,
            r.self_cpu_mem_bytes,
            r.allocs,
            r.self_allocs,
        )
    };
    assert!(back
        .rows
        .iter()
        .zip(&report.rows)
        .all(|(a, b)| memory_of(a) == memory_of(b)));
    let row = back.rows.iter().find(|r| r.name == "consumer").unwrap();
    assert_eq!(row.self_cpu_mem_bytes, Some(-4 * MIB as i64));
    assert_eq!(
        back.memory.as_ref().map(|m| m.cpu_mem_bytes),
        Some(MIB as i64)
    );
}

#[test]
fn allocations_on_the_pool_threads_go_to_the_op_and_other_threads_apart() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool of two threads");
    // A first broadcast, unrecorded: the threads' own start-up allocations are not the op's.
    drop(pool.broadcast(|_| vec![0u8; 16]));
    let mut kept: Vec<Vec<Vec<u8>>> = Vec::with_capacity(4);
    let mut other: Vec<Vec<u8>> = Vec::with_capacity(4);
    let profile = record(1, || {
        {
            let _s = profiler::op("parallel");
            // Each of the pool's threads allocates 64 KiB: none on the recording thread.
            let blocks = pool.broadcast(|ctx| {
                assert!(rayon::current_thread_index().is_some());
                std::hint::black_box(vec![ctx.index() as u8; 64 * 1024])
            });
            kept.push(blocks);
        }
        {
            let _s = profiler::op("elsewhere");
            // A thread outside the pool (an HTTP runtime, a logger) allocates meanwhile.
            let v = std::thread::spawn(|| std::hint::black_box(vec![7u8; 512 * 1024]))
                .join()
                .expect("the thread runs");
            other.push(v);
        }
    });
    let rows = rows(&profile, View::Op);
    let parallel = row(&rows, "parallel");
    let got = parallel.self_cpu_mem.unwrap();
    assert!(
        got >= 2 * 64 * 1024,
        "both pool threads' 64 KiB are in the op's row: {got}"
    );
    // The broadcast's own bookkeeping is a few hundred bytes.
    assert!(got < 2 * 64 * 1024 + 4096, "and little else: {got}");
    let elsewhere = row(&rows, "elsewhere");
    assert!(
        elsewhere.self_cpu_mem.unwrap() < 64 * 1024,
        "the other thread's 512 KiB are not in the op: {elsewhere:?}"
    );
    let m = profile.steps[0].memory.as_ref().unwrap();
    assert!(
        m.other_threads.alloc_bytes >= 512 * 1024,
        "counted apart: {:?}",
        m.other_threads
    );
}

#[test]
fn two_runs_of_the_same_step_report_the_same_bytes() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let work = || {
        let _m = profiler::module("layer");
        let x = {
            let _s = profiler::op("matmul");
            std::hint::black_box(vec![0.5f32; 1000])
        };
        let _s = profiler::op("softmax");
        let y: Vec<f32> = x.iter().map(|v| v.exp()).collect();
        std::hint::black_box(y);
    };
    let first = record(3, work);
    let second = record(2, work);
    let per_step = |p: &Profile| -> Vec<Vec<(&'static str, i64, u64)>> {
        p.steps
            .iter()
            .map(|s| {
                s.events
                    .iter()
                    .map(|e| {
                        let m = e.memory.unwrap();
                        (e.name, m.net(), m.alloc_bytes)
                    })
                    .collect()
            })
            .collect()
    };
    let a = per_step(&first);
    let b = per_step(&second);
    assert!(a.iter().all(|s| s == &a[0]), "{a:?}");
    assert_eq!(a[0], b[0]);
    assert_eq!(a[0][1], ("matmul", 4000, 4000));
}

#[test]
fn the_timeline_categories_add_up_to_the_live_bytes_and_its_peak_is_the_footers() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    profiler::alloc::enable();
    let weights = {
        let _c = profiler::alloc::category(Category::Weights);
        let w = vec![1u8; 4 * MIB];
        // A loader's scratch buffer, freed before the load ends: not in the weights.
        drop(std::hint::black_box(vec![0u8; MIB]));
        w
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let profile = record(2, || {
        let mut cache = None;
        for _ in 0..3 {
            let _s = profiler::op("kv_cache");
            if cache.is_none() {
                let _c = profiler::alloc::category(Category::KvCache);
                cache = Some(std::hint::black_box(vec![0u8; 2 * MIB]));
            }
        }
        let h = {
            let _s = profiler::op("matmul");
            let scratch = std::hint::black_box(vec![0u8; 3 * MIB]);
            let out = std::hint::black_box(vec![0u8; MIB]);
            drop(scratch);
            out
        };
        drop(std::hint::black_box(h));
        drop(cache);
    });
    let timeline = profile.memory_timeline().expect("memory was recorded");
    assert!(timeline.points.len() > 10);
    for p in &timeline.points {
        assert_eq!(p.by_category.iter().sum::<i64>(), p.live, "{p:?}");
        let weights_live = p.by_category[0];
        assert!(weights_live >= 4 * MIB as i64, "{p:?}");
    }
    // The cache shows as KV cache while it lives; the matmul's output, once it closed, as an
    // activation.
    // (Against the first sample: earlier tests' blocks may still be live.)
    let first = timeline.points[0];
    let rose = |k: usize, bytes: usize| {
        timeline
            .points
            .iter()
            .any(|p| p.by_category[k] - first.by_category[k] >= bytes as i64)
    };
    assert!(rose(1, 2 * MIB), "the KV cache");
    assert!(rose(2, MIB), "the matmul's output, once the matmul closed");
    // Samples are taken at boundaries: the scratch, freed inside, shows only in the peak.
    assert!(rose(3, MIB), "the matmul's output, as it closes");
    // The peak: inside the matmul, scratch and output live beside the weights and the cache.
    let (bytes, _, during) = profile.memory_peak().expect("a peak");
    assert_eq!(during, "matmul");
    let at_start = timeline.points[0].live;
    assert!(
        bytes >= at_start + (2 + 3 + 1) * MIB as i64,
        "{bytes} {at_start}"
    );
    assert_eq!(timeline.peak.bytes, bytes);
    assert_eq!(timeline.peak.during, "matmul");
    let highest = profile
        .steps
        .iter()
        .flat_map(|s| &s.memory.as_ref().unwrap().samples)
        .map(|s| s.peak_since_previous)
        .max()
        .unwrap();
    assert_eq!(highest, bytes);
    let table = profile.table(profiler::TableOptions {
        sort_by: SortBy::SelfCpuMemoryUsage,
        ..Default::default()
    });
    let footer = format!(
        "Peak live memory: {} (during matmul",
        profiler::format_bytes(bytes)
    );
    assert!(table.contains(&footer), "{table}");
    let report = profile.report();
    assert_eq!(report.memory.as_ref().map(|m| m.peak_bytes), Some(bytes));
    let svg = dir.path().join("memory-timeline.svg");
    profile
        .memory_timeline_svg(&svg, "test", Some(("KV positions in use", &[(0.0, 0)])))
        .expect("drawn");
    let text = std::fs::read_to_string(&svg).expect("written");
    assert!(text.contains("peak") && text.contains("matmul") && text.contains("(computed)"));
    drop(weights);
}
