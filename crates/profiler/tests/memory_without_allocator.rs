//! A program that does not declare the counting allocator gets no memory columns, and a
//! warning that says which two lines to add.

use profiler::{Options, Profiler, Schedule};

#[test]
fn without_the_allocator_memory_is_not_measured_and_the_profile_says_so() {
    let mut prof = Profiler::new(Options {
        schedule: Schedule::new(0, 0, 1, 1),
        ..Options::default()
    })
    .with_memory();
    assert!(!prof.records_memory());
    prof.step(|| {
        let _s = profiler::op("alloc");
        std::hint::black_box(vec![0u8; 4096]);
    });
    let profile = prof.finish();
    assert!(!profile.has_memory());
    assert!(profile.memory_timeline().is_none());
    let rows = profile
        .key_averages(
            profiler::View::Op,
            false,
            profiler::SortBy::SelfCpuTimeTotal,
        )
        .rows;
    assert!(rows
        .iter()
        .all(|r| r.cpu_mem.is_none() && r.self_allocs.is_none()));
    assert!(
        profile
            .warnings
            .iter()
            .any(|w| w.contains("memory was not measured") && w.contains("#[global_allocator]")),
        "{:?}",
        profile.warnings
    );
}
