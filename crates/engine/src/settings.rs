//! The course's environment variables that steer the engine, read here and nowhere else. Each
//! steers every model family the engine runs (GPT-2 and the Llama family), so each is named for
//! the course (`COURSE_*`, beside `course`'s own COURSE_FEATURES and COURSE_LEARNER_ID). The
//! `GPT2_*` names they had are still read, as aliases: a run that uses one says once, on
//! standard error, which name replaces it.

use std::ffi::OsString;
use std::sync::Mutex;

/// One environment variable: its name, and the name it had before (still read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    /// The deprecated alias.
    pub old_name: &'static str,
}

/// The CPU kernel path every model is built for unless `--kernels` names one: `auto` (the
/// default), `avx512`, `avx2` or `portable` ([`crate::cpu::KernelPath`]).
pub const CPU_KERNELS: Setting = Setting::renamed("COURSE_CPU_KERNELS", "GPT2_CPU_KERNELS");

/// The folder where the course keeps what it makes once (synthetic checkpoints, measured
/// ceilings) ([`crate::cache_dir`]).
pub const CACHE: Setting = Setting::renamed("COURSE_CACHE", "GPT2_COURSE_CACHE");

/// The peak-throughput product's row count for the ceilings (an emulator's shortcut).
pub const CEILINGS_PEAK_ROWS: Setting =
    Setting::renamed("COURSE_CEILINGS_PEAK_ROWS", "GPT2_CEILINGS_PEAK_ROWS");

/// The bandwidth buffer's size in MiB for the ceilings (an emulator's shortcut).
pub const CEILINGS_BUFFER_MIB: Setting =
    Setting::renamed("COURSE_CEILINGS_BUFFER_MIB", "GPT2_CEILINGS_BUFFER_MIB");

impl Setting {
    /// The setting read as `name`, and as `old_name` where only that is set.
    pub const fn renamed(name: &'static str, old_name: &'static str) -> Setting {
        Setting { name, old_name }
    }

    /// The value: the course-wide name's, else the old name's (noted once per process). An
    /// empty value counts as unset.
    pub fn var_os(self) -> Option<OsString> {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let old = set(self.old_name);
        match set(self.name) {
            Some(value) => {
                if old.is_some() {
                    self.note_once(&format!(
                        "note: {} is ignored: {} is set, and replaces it",
                        self.old_name, self.name
                    ));
                }
                Some(value)
            }
            None => {
                if old.is_some() {
                    self.note_once(&format!(
                        "note: {} is now {} (it steers every model the course runs); the old name \
                         still works for now: rename it",
                        self.old_name, self.name
                    ));
                }
                old
            }
        }
    }

    /// [`Setting::var_os`] as text; a value that is not UTF-8 reads as its lossy text, which no
    /// setting accepts, so the reader's own error names it.
    pub fn var(self) -> Option<String> {
        self.var_os().map(|v| {
            v.into_string()
                .unwrap_or_else(|v| v.to_string_lossy().into_owned())
        })
    }

    /// Prints `note` unless this setting has had its note in this process.
    fn note_once(self, note: &str) {
        static NOTED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let Ok(mut noted) = NOTED.lock() else {
            return;
        };
        if !noted.contains(&self.name) {
            noted.push(self.name);
            eprintln!("{note}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A setting of this test's own, so no other test's environment is touched.
    const PROBE: Setting =
        Setting::renamed("COURSE_SETTINGS_TEST_PROBE", "GPT2_SETTINGS_TEST_PROBE");

    #[test]
    fn the_course_name_wins_and_the_old_one_is_still_read() {
        // These two variables are this test's alone: no other code reads or writes them.
        std::env::remove_var(PROBE.name);
        std::env::remove_var(PROBE.old_name);
        assert_eq!(PROBE.var(), None);
        std::env::set_var(PROBE.old_name, "32");
        assert_eq!(PROBE.var().as_deref(), Some("32"));
        std::env::set_var(PROBE.name, "64");
        assert_eq!(PROBE.var().as_deref(), Some("64"));
        std::env::set_var(PROBE.name, "");
        assert_eq!(PROBE.var().as_deref(), Some("32"), "empty counts as unset");
    }

    #[test]
    fn every_setting_has_a_course_name_and_its_gpt2_alias() {
        for s in [CPU_KERNELS, CACHE, CEILINGS_PEAK_ROWS, CEILINGS_BUFFER_MIB] {
            assert!(s.name.starts_with("COURSE_"), "{s:?}");
            assert!(s.old_name.starts_with("GPT2_"), "{s:?}");
        }
    }
}
