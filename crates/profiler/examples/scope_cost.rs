//! What a scope costs: inactive (no profiler recording, the state of every unprofiled run)
//! and active (recording). Run with `cargo run -p profiler --example scope_cost`.
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
    let baseline = median(
        (0..RUNS)
            .map(|_| {
                per_iteration_ns(N, |i| {
                    black_box(i);
                })
            })
            .collect(),
    );
    let op = median(
        (0..RUNS)
            .map(|_| {
                per_iteration_ns(N, |_| {
                    drop(black_box(profiler::op("matmul")));
                })
            })
            .collect(),
    );
    let op_shapes = median(
        (0..RUNS)
            .map(|_| {
                per_iteration_ns(N, |_| {
                    drop(black_box(profiler::op_shapes("matmul", &[shape, shape])));
                })
            })
            .collect(),
    );
    let module = median(
        (0..RUNS)
            .map(|_| {
                per_iteration_ns(N, |_| {
                    drop(black_box(profiler::module("block")));
                })
            })
            .collect(),
    );
    let labelled = median(
        (0..RUNS)
            .map(|_| {
                per_iteration_ns(N, |i| {
                    drop(black_box(
                        profiler::op("matmul").with_work(i, i).with_kernel("avx512"),
                    ));
                })
            })
            .collect(),
    );
    println!("inactive scope, ns per create+drop (loop overhead {baseline:.2} ns subtracted):");
    println!("  op        {:.2}", op - baseline);
    println!("  op_shapes {:.2}", op_shapes - baseline);
    println!("  module    {:.2}", module - baseline);
    println!("  op + with_work + with_kernel {:.2}", labelled - baseline);

    // Recording: steps of 1,000 scopes (a forward pass has a few hundred), recorded as
    // warm-up steps so that memory is reused as in a real run.
    const PER_STEP: u64 = 1_000;
    const STEPS: usize = 200;
    let recording = |record_shapes: bool, scope: &dyn Fn()| -> f64 {
        let options = profiler::Options {
            schedule: profiler::Schedule::new(0, STEPS, 1, 1),
            record_shapes,
            ..profiler::Options::default()
        };
        let mut prof = profiler::Profiler::new(options);
        let mut per_step = Vec::new();
        for _ in 0..STEPS {
            per_step.push(prof.step(|| per_iteration_ns(PER_STEP, |_| scope())));
        }
        median(per_step)
    };
    let op_active = recording(false, &|| drop(black_box(profiler::op("matmul"))));
    let shapes_active = recording(true, &|| {
        drop(black_box(profiler::op_shapes("matmul", &[shape, shape])))
    });
    let labelled_active = recording(false, &|| {
        drop(black_box(
            profiler::op("matmul").with_work(1, 2).with_kernel("avx512"),
        ))
    });
    println!(
        "recording scope, ns per create+drop (median over {STEPS} steps of {PER_STEP} scopes):"
    );
    println!("  op                          {op_active:.1}");
    println!("  op_shapes (shapes recorded) {shapes_active:.1}");
    println!("  op + with_work + with_kernel {labelled_active:.1}");
}
