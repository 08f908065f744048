//! The machine a measured file's figures come from, said as a reader would.

use profiler::Ceilings;

/// This machine, or the one a report's environment names.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub cpu: String,
    pub threads: usize,
    pub os: String,
    pub arch: String,
}

impl Machine {
    /// The machine this program runs on.
    pub fn this() -> Machine {
        Machine {
            cpu: profiler::cpu_model(),
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
        }
    }

    /// The machine a profile or benchmark recorded in its environment.
    pub fn of(env: &profiler::Environment) -> Machine {
        Machine {
            cpu: env.cpu_model.clone(),
            threads: env.threads,
            os: env.os.clone(),
            arch: env.arch.clone(),
        }
    }

    /// One line: "Intel(R) Xeon(R) Processor, 2 threads, Linux x86-64".
    pub fn line(&self) -> String {
        let os = match self.os.as_str() {
            "linux" => "Linux",
            "macos" => "macOS",
            "windows" => "Windows",
            other => other,
        };
        let arch = self.arch.replace('_', "-");
        let threads = if self.threads == 1 {
            "1 thread".to_string()
        } else {
            format!("{} threads", self.threads)
        };
        format!("{}, {threads}, {os} {arch}", self.cpu)
    }
}

/// A warning when other work already keeps this machine busy (Linux's one-minute load average
/// above half a core): its timings would be slower and noisier than an idle machine's.
pub fn busy_warning() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    busy_warning_for(&text, Machine::this().threads)
}

fn busy_warning_for(loadavg: &str, threads: usize) -> Option<String> {
    let load: f64 = loadavg.split_whitespace().next()?.parse().ok()?;
    (load > 0.5).then(|| {
        format!(
            "book-measure: warning: this machine is already busy (load average {load:.1} over the last \
             minute, {threads} threads): its timings come out slower and noisier than an idle \
             machine's; for the book, measure on an otherwise idle machine"
        )
    })
}

/// The ceilings as a measured file records them: the memory rate and the compute peak.
pub fn ceilings_pair(c: &Ceilings) -> (f64, f64) {
    (c.mem_read_gbps, c.peak_gflops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_machine_is_named_before_it_is_measured() {
        let busy = busy_warning_for("2.15 1.22 0.51 3/412 1804", 2).unwrap();
        assert!(
            busy.contains("load average 2.1") && busy.contains("2 threads"),
            "{busy}"
        );
        assert_eq!(busy_warning_for("0.12 0.30 0.40 1/200 99", 2), None);
        assert_eq!(busy_warning_for("", 2), None);
    }

    #[test]
    fn the_machine_line_reads_as_a_reader_would_say_it() {
        let m = Machine {
            cpu: "Intel(R) Xeon(R) Processor".into(),
            threads: 2,
            os: "linux".into(),
            arch: "x86_64".into(),
        };
        assert_eq!(
            m.line(),
            "Intel(R) Xeon(R) Processor, 2 threads, Linux x86-64"
        );
        let one = Machine {
            threads: 1,
            os: "macos".into(),
            arch: "aarch64".into(),
            ..m
        };
        assert_eq!(
            one.line(),
            "Intel(R) Xeon(R) Processor, 1 thread, macOS aarch64"
        );
    }
}
