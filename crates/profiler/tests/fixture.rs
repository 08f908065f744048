//! A fixed profile built with injected clocks, shared by the tests. Every duration is known,
//! so every figure in the tables can be checked by hand.

use profiler::{ManualClock, ManualDeviceTimer, Options, Profile, Profiler, Schedule};

/// Host and device clocks that tests move by hand.
pub struct Clocks {
    pub host: ManualClock,
    pub device: ManualClock,
}

impl Clocks {
    pub fn new() -> Self {
        Clocks { host: ManualClock::new(), device: ManualClock::new() }
    }

    /// Let `host_us` pass on the host and `device_us` on the device.
    pub fn tick(&self, host_us: u64, device_us: u64) {
        self.host.advance_us(host_us);
        self.device.advance_us(device_us);
    }
}

/// One forward of a toy model. Host durations (µs): 5 unscoped, embedding 10, block 70
/// (2 in the module itself, linear 45 = 1 + matmul 40 + bias_add 4, softmax 8, matmul 15),
/// 3 unscoped, lm_head 12: wall 100. Device durations are different on purpose (kernels
/// run asynchronously): see each tick's second number.
pub fn forward(c: &Clocks, scale: u64) {
    c.tick(5 * scale, 1);
    {
        let _e = profiler::op_shapes("embedding", &[&[1, 8]]);
        c.tick(10 * scale, 6);
    }
    {
        let _b = profiler::module("block");
        c.tick(2 * scale, 0);
        {
            let _l = profiler::op("linear");
            c.tick(scale, 0);
            {
                let _m = profiler::op_shapes("matmul", &[&[1, 8, 768], &[768, 2304]])
                    .with_work(2 * 8 * 768 * 2304, 4 * (8 * 768 + 768 * 2304 + 8 * 2304));
                c.tick(40 * scale, 50);
            }
            {
                let _a = profiler::op_shapes("bias_add", &[&[1, 8, 2304], &[2304]])
                    .with_work(8 * 2304, 4 * (2 * 8 * 2304 + 2304));
                c.tick(4 * scale, 2);
            }
        }
        profiler::op!("softmax", c.tick(8 * scale, 3));
        {
            let _m = profiler::op_shapes("matmul", &[&[1, 8, 768], &[768, 768]]);
            c.tick(15 * scale, 20);
        }
    }
    c.tick(3 * scale, 1);
    {
        let _h = profiler::op("lm_head");
        c.tick(12 * scale, 30);
    }
}

/// Schedule 1 wait + 1 warm-up + 2 active steps. Wait and warm-up steps run ten times
/// slower, so counting them by mistake shows in every figure.
pub fn profile(with_device: bool) -> Profile {
    let clocks = Clocks::new();
    let options = Options {
        schedule: Schedule::new(1, 1, 2, 1),
        record_shapes: true,
        with_flops: false,
        threads: Some(2),
        ..Options::default()
    };
    let mut prof = Profiler::new(options).with_clock(clocks.host.clone());
    if with_device {
        prof = prof.with_device_timer(ManualDeviceTimer::new(clocks.device.clone()));
    }
    for step in 0..4 {
        let scale = if step < 2 { 10 } else { 1 };
        prof.step(|| forward(&clocks, scale));
    }
    assert!(prof.is_done());
    prof.finish()
}
