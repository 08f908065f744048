//! `gpt2 profile --profile-memory` on the committed tiny checkpoint: the rows carry memory and
//! a generation's KV cache shows in the timeline at its capacity's bytes. The counting allocator
//! is declared here, as in every binary that records memory.

mod common;

use engine::profile::{kv_in_use_series, profile_forward_with_memory, profile_generation_memory};
use profiler::{SortBy, View};

#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

#[test]
fn a_generation_holds_its_kv_cache_at_capacity_and_every_row_has_memory() {
    let model = common::tiny_model(common::default_path());
    let p = common::small_profile();
    let forward = profile_forward_with_memory(&model, &p, None).expect("profiled");
    assert!(forward.warnings.is_empty(), "{:?}", forward.warnings);
    let rows = forward
        .key_averages(View::Op, false, SortBy::SelfCpuMemoryUsage)
        .rows;
    assert!(rows.iter().all(|r| r.self_cpu_mem.is_some()));
    let kv = rows
        .iter()
        .find(|r| r.name == "kv_cache")
        .expect("a kv_cache row");
    assert!(
        kv.self_allocs.unwrap() > 0 && kv.self_cpu_mem.unwrap() > 0,
        "{kv:?}"
    );

    let new_tokens = 3;
    let (profile, positions) = profile_generation_memory(&model, &p, new_tokens).expect("profiled");
    assert_eq!(positions, vec![5, 6, 7, 8]);
    let timeline = profile.memory_timeline().expect("memory recorded");
    let kv_bytes = |i: usize| timeline.points[i].by_category[1];
    let rise = (0..timeline.points.len()).map(kv_bytes).max().unwrap() - kv_bytes(0);
    // Keys and values, 2 layers, 2 sequences, 8 positions of 64 f32 each: the tensors' own
    // bytes, plus candle's small handles for them.
    let capacity_bytes = 2 * 2 * 2 * 8 * 64 * 4;
    assert!(
        (capacity_bytes..capacity_bytes + 4096).contains(&rise),
        "{rise} against {capacity_bytes}"
    );
    for point in &timeline.points {
        assert_eq!(point.by_category.iter().sum::<i64>(), point.live);
    }
    let series = kv_in_use_series(&profile, &positions, 8);
    assert_eq!(series.len(), 2 * positions.len());
    assert_eq!(series.last().unwrap().1, kv_bytes(0) + rise);
    assert_eq!(series[0].1, kv_bytes(0) + rise * 5 / 8);
}
