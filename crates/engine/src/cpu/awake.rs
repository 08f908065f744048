//! The compute pool's other threads kept awake through one forward pass.
//!
//! A decode step is over a hundred parallel products (each 10–70 µs on SmolLM2-135M) with
//! serial ops between them (norms, rotary embedding, attention). Idle for a few tens of µs,
//! a rayon worker parks on a futex, and the next product's first half runs on the calling
//! thread alone while the parked one is woken: in a profiled q8_0 step the output projection
//! after attention took 22 µs a call, the time one thread takes, against 10 µs back to back.
//! [`awake_through`] gives each other worker a job that steals work as soon as there is some
//! (`rayon::yield_now`) and spins in between, until the pass ends: the cores stay busy for the
//! length of one forward pass, as llama.cpp's threads spin between its ops.

use std::sync::atomic::{AtomicBool, Ordering};

/// Runs `f` on the calling thread (the profiler records the thread it runs on) with the
/// compute pool's other threads spinning for work until `f` returns (or panics). With one
/// thread it is `f()`. The tools call it from a pool thread ([`super::on_pool`]); from another
/// thread the products' halves still reach the spinning workers, through the pool's queue.
pub fn awake_through<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let threads = rayon::current_num_threads();
    if threads < 2 {
        return f();
    }
    let caller = rayon::current_thread_index();
    let stop = AtomicBool::new(false);
    rayon::in_place_scope(|s| {
        for _ in 1..threads {
            s.spawn(|_| spin_for_work(&stop, caller));
        }
        // Set however `f` ends: the scope waits for the spinning jobs, which end on it.
        let _stop = StopOnDrop(&stop);
        f()
    })
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs the pool's pending jobs as they come, until `stop`. On the caller's own thread (it can
/// pick a job of its own scope up while it waits inside `f`) it returns at once: spinning there
/// would wait for `f`, which waits for it.
fn spin_for_work(stop: &AtomicBool, caller: Option<usize>) {
    if caller.is_some() && rayon::current_thread_index() == caller {
        return;
    }
    while !stop.load(Ordering::Acquire) {
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn returns_what_f_returns_with_parallel_work_inside() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let sum = pool.install(|| {
            awake_through(|| {
                (0..50)
                    .map(|i| (0..10_000u64).into_par_iter().map(|x| x * i).sum::<u64>())
                    .sum::<u64>()
            })
        });
        assert_eq!(sum, (0..50).sum::<u64>() * (0..10_000u64).sum::<u64>());
    }

    #[test]
    fn a_panic_in_f_ends_the_spinning_and_reaches_the_caller() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let r = pool.install(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                awake_through(|| -> u32 { panic!("inside the pass") })
            }))
        });
        assert!(r.is_err());
        // The pool still works: its workers are not stuck spinning.
        assert_eq!(pool.install(|| awake_through(|| 7)), 7);
    }

    #[test]
    fn from_outside_the_pool_f_runs_on_the_calling_thread() {
        let here = std::thread::current().id();
        let (sum, ran_on) = awake_through(|| {
            let sum = (0..10_000u64).into_par_iter().sum::<u64>();
            (sum, std::thread::current().id())
        });
        assert_eq!(sum, (0..10_000u64).sum::<u64>());
        assert_eq!(ran_on, here);
    }

    #[test]
    fn one_thread_runs_f_alone() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| awake_through(|| 5)), 5);
    }
}
