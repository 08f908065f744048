//! What a scope costs: inactive (no profiler recording, the state of every unprofiled run)
//! and active (recording). Run with `cargo run --release -p profiler --example scope_cost`.
//! A quick measurement, not a benchmark suite: take the median of a few runs.

use std::hint::black_box;
use std::time::Instant;

fn per_iteration_ns(iterations: u64, mut f: impl FnMut(u64)) -> f64 {
    let start = Instant::now();
    for i in 0..iterations {
        f(black_box(i));
    }
    start.elapsed().as_nanos() as f64 / iterations as f64
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    const N: u64 = 20_000_000;
    const RUNS: usize = 5;
    let shape: &[usize] = &[1, 8, 768];
    let baseline = median((0..RUNS).map(|_| per_iteration_ns(N, |i| { black_box(i); })).collect());
    let op = median((0..RUNS).map(|_| per_iteration_ns(N, |_| { drop(black_box(profiler::op("matmul"))); })).collect());
    let op_shapes = median(
        (0..RUNS)
            .map(|_| per_iteration_ns(N, |_| { drop(black_box(profiler::op_shapes("matmul", &[shape, shape]))); }))
            .collect(),
    );
    let module = median((0..RUNS).map(|_| per_iteration_ns(N, |_| { drop(black_box(profiler::module("block"))); })).collect());
    println!("inactive scope, ns per create+drop (loop overhead {baseline:.2} ns subtracted):");
    println!("  op        {:.2}", op - baseline);
    println!("  op_shapes {:.2}", op_shapes - baseline);
    println!("  module    {:.2}", module - baseline);

    // Recording: one step of many scopes (host clock reads, an event pushed per scope).
    const M: u64 = 1_000_000;
    let mut active = Vec::new();
    for _ in 0..RUNS {
        let mut prof = profiler::Profiler::new(profiler::Options::default());
        let ns = prof.step(|| per_iteration_ns(M, |_| { drop(black_box(profiler::op("matmul"))); }));
        active.push(ns);
    }
    let mut shapes = Vec::new();
    for _ in 0..RUNS {
        let options = profiler::Options { record_shapes: true, ..profiler::Options::default() };
        let mut prof = profiler::Profiler::new(options);
        shapes.push(prof.step(|| per_iteration_ns(M, |_| { drop(black_box(profiler::op_shapes("matmul", &[shape, shape]))); })));
    }
    println!("recording scope, ns per create+drop:");
    println!("  op                          {:.1}", median(active));
    println!("  op_shapes (shapes recorded) {:.1}", median(shapes));
}
