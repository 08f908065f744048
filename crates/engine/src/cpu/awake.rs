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
use std::time::{Duration, Instant};

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

/// Runs the pool's pending jobs as they come, until `stop`, or until it has found none for
/// [`IDLE_LIMIT`]. On the caller's own thread (it can pick a job of its own scope up while it
/// waits inside `f`) it returns at once: spinning there would wait for `f`, which waits for it.
/// The limit bounds the same wait elsewhere: with three threads or more, a worker waiting inside
/// a product's half for the other half can pick a second spinning job up, and that half's
/// thread cannot go on until it returns; after the limit the worker parks as rayon's own do.
fn spin_for_work(stop: &AtomicBool, caller: Option<usize>) {
    if caller.is_some() && rayon::current_thread_index() == caller {
        return;
    }
    // Idle rounds in a row, and when they began (the clock read once every 64 rounds, to keep
    // the loop that answers new work short).
    let (mut idle, mut since) = (0u32, Instant::now());
    while !stop.load(Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            idle = 0;
            continue;
        }
        if idle == 0 {
            since = Instant::now();
        } else if idle % 64 == 0 && since.elapsed() > IDLE_LIMIT {
            return;
        }
        idle = idle.wrapping_add(1).max(1);
        std::hint::spin_loop();
    }
}

/// How long a spinning worker looks for work before it gives up: far longer than the serial
/// stretches of a forward pass (a decode step's longest, attention, takes about 30 µs on
/// SmolLM2-135M), short beside a step.
const IDLE_LIMIT: Duration = Duration::from_millis(1);

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

    /// Nested parallel loops on four threads, where a worker waiting for half of a loop can
    /// pick a second spinning job up: the pass still ends, with the right sum.
    #[test]
    fn nested_parallel_work_on_four_threads_ends() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        for _ in 0..20 {
            let sum = pool.install(|| {
                awake_through(|| {
                    (0..64u64)
                        .into_par_iter()
                        .map(|i| (0..2_000u64).into_par_iter().map(|x| x ^ i).sum::<u64>())
                        .sum::<u64>()
                })
            });
            let want: u64 = (0..64u64)
                .map(|i| (0..2_000u64).map(|x| x ^ i).sum::<u64>())
                .sum();
            assert_eq!(sum, want);
        }
    }

    /// A worker with nothing to do stops spinning after the limit even while `f` runs on.
    #[test]
    fn an_idle_spinner_gives_up_after_the_limit() {
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        // Outside any pool there is never work to find.
        spin_for_work(&stop, None);
        assert!(start.elapsed() >= IDLE_LIMIT);
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
