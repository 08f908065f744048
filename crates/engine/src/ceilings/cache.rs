//! The ceilings' cache: one JSON file per [`Key`] under the course's cache folder, trusted only
//! when the key stored in it is the run's.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Ceilings, Key};
use crate::error::{Error, Result};

/// Bump when a measurement changes, so files measured the old way are measured again
/// (2: a 1 GiB or larger buffer, best of 5, instead of 512 MiB, best of 3; 3: summed with
/// the CPU's widest vectors; 4: a bf16 peak on AVX-512 through `avx512_bf16`'s dot product,
/// where the CPU has it, about twice the widening kernel's).
const CACHE_VERSION: u32 = 4;

/// The file in the cache: the key is stored whole, so a file copied from another machine
/// (or renamed) is recognised as foreign rather than trusted.
#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    key: Key,
    ceilings: Ceilings,
}

/// `ceilings/` under the course's cache folder (`$COURSE_CACHE`, else
/// `$XDG_CACHE_HOME/gpt2-course`, else `~/.cache/gpt2-course`).
pub fn cache_folder() -> PathBuf {
    crate::cache_dir().join("ceilings")
}

/// The ceilings in `path` when it holds a measurement for `key`; otherwise `measure()`'s,
/// written to `path`. A file that is unreadable, corrupt, of an older version or of another
/// key is measured again, with a one-line note saying why.
pub fn cached_or_measured(
    path: &Path,
    key: &Key,
    remeasure: bool,
    note: &mut dyn FnMut(&str),
    measure: impl FnOnce() -> Result<Ceilings>,
) -> Result<Ceilings> {
    if !remeasure {
        match read_cache(path, key) {
            Ok(Some(c)) => return Ok(c),
            Ok(None) => {}
            Err(why) => note(&format!("note: {} {why}; measuring again", path.display())),
        }
    }
    note(&format!(
        "measuring this machine's ceilings once ({}), cached in {}",
        key.describe(),
        path.display()
    ));
    let ceilings = measure()?;
    // A cache that cannot be written costs a re-measurement next time, not this run.
    if let Err(e) = write_cache(path, key, &ceilings) {
        note(&format!(
            "note: cannot cache the ceilings ({e}); they will be measured again next run"
        ));
    }
    Ok(ceilings)
}

/// `Ok(None)` when there is no file; `Err(why)` when there is one that cannot be used.
fn read_cache(path: &Path, key: &Key) -> std::result::Result<Option<Ceilings>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    let file: CacheFile =
        serde_json::from_str(&text).map_err(|e| format!("is not a ceilings file ({e})"))?;
    if file.version != CACHE_VERSION {
        return Err(format!(
            "was measured by another version of the measurement ({}, this one is {CACHE_VERSION})",
            file.version
        ));
    }
    if file.key != *key || !key.matches(&file.ceilings) {
        return Err(format!(
            "holds another machine's ceilings ({})",
            file.key.describe()
        ));
    }
    let c = file.ceilings;
    if !(c.mem_read_gbps.is_finite()
        && c.mem_read_gbps > 0.0
        && c.peak_gflops.is_finite()
        && c.peak_gflops > 0.0)
    {
        return Err(format!(
            "holds impossible ceilings ({} GB/s, {} GFLOP/s)",
            c.mem_read_gbps, c.peak_gflops
        ));
    }
    Ok(Some(c))
}

/// Written in one step ([`output::write_file`]), so a reader never sees half a file and two
/// concurrent writers leave one whole one; not flushed to the disk first: a lost cache is
/// measured again.
fn write_cache(path: &Path, key: &Key, ceilings: &Ceilings) -> Result<()> {
    let file = CacheFile {
        version: CACHE_VERSION,
        key: key.clone(),
        ceilings: ceilings.clone(),
    };
    let json = serde_json::to_string_pretty(&file).map_err(|e| Error::Input(e.to_string()))?;
    output::write_file(path, json.as_bytes(), output::Flush::Later).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ceilings, key};
    use super::*;

    /// Runs `cached_or_measured` with a measurement that returns `gbps` and counts its calls.
    fn lookup(
        path: &Path,
        key: &Key,
        remeasure: bool,
        gbps: f64,
    ) -> (Ceilings, usize, Vec<String>) {
        let (mut calls, mut notes) = (0, Vec::new());
        let c = cached_or_measured(
            path,
            key,
            remeasure,
            &mut |n| notes.push(n.to_string()),
            || {
                calls += 1;
                Ok(ceilings(key, gbps))
            },
        )
        .unwrap();
        (c, calls, notes)
    }

    #[test]
    fn a_ceilings_cache_hit_does_not_measure_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ceilings").join(key().file_name());
        let (first, calls, notes) = lookup(&path, &key(), false, 20.0);
        assert_eq!((calls, first.mem_read_gbps), (1, 20.0));
        assert!(
            notes.len() == 1 && notes[0].starts_with("measuring this machine's ceilings once"),
            "{notes:?}"
        );
        assert!(notes[0].contains(&path.display().to_string()), "{notes:?}");
        // The second run reads the file: no measurement, no note, the first figures.
        let (second, calls, notes) = lookup(&path, &key(), false, 99.0);
        assert_eq!((calls, second), (0, first.clone()));
        assert!(notes.is_empty(), "{notes:?}");
        // Forced, it measures and replaces the file.
        let (third, calls, _) = lookup(&path, &key(), true, 30.0);
        assert_eq!((calls, third.mem_read_gbps), (1, 30.0));
        assert_eq!(lookup(&path, &key(), false, 99.0).0.mem_read_gbps, 30.0);
        // Nothing but the cache file is left in the folder (the temporary file was renamed).
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_corrupt_ceilings_cache_file_is_measured_again_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(key().file_name());
        for bad in ["{\"version\": 1, \"key\": ", "", "[1, 2, 3]"] {
            std::fs::write(&path, bad).unwrap();
            let (c, calls, notes) = lookup(&path, &key(), false, 21.0);
            assert_eq!((calls, c.mem_read_gbps), (1, 21.0), "{bad:?}");
            assert!(
                notes[0].contains("is not a ceilings file")
                    && notes[0].ends_with("measuring again"),
                "{notes:?}"
            );
            assert_eq!(
                notes.len(),
                2,
                "one line on the bad file, one on measuring: {notes:?}"
            );
            // And the file is whole again.
            assert_eq!(lookup(&path, &key(), false, 99.0).1, 0);
        }
    }

    #[test]
    fn a_foreign_or_impossible_ceilings_file_is_measured_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(key().file_name());
        let other = Key {
            threads: 16,
            ..key()
        };
        let write = |version: u32, k: &Key, c: Ceilings| {
            std::fs::write(
                &path,
                serde_json::to_string(&CacheFile {
                    version,
                    key: k.clone(),
                    ceilings: c,
                })
                .unwrap(),
            )
            .unwrap()
        };
        let cases: [(u32, Key, Ceilings, &str); 4] = [
            (
                CACHE_VERSION,
                other.clone(),
                ceilings(&other, 50.0),
                "another machine's",
            ),
            // The key says this machine, the figures say another: not trusted either.
            (
                CACHE_VERSION,
                key(),
                ceilings(&other, 50.0),
                "another machine's",
            ),
            (
                CACHE_VERSION + 1,
                key(),
                ceilings(&key(), 50.0),
                "another version",
            ),
            (CACHE_VERSION, key(), ceilings(&key(), 0.0), "impossible"),
        ];
        for (version, k, c, why) in cases {
            write(version, &k, c);
            let (c, calls, notes) = lookup(&path, &key(), false, 22.0);
            assert_eq!((calls, c.mem_read_gbps), (1, 22.0), "{why}");
            assert!(notes[0].contains(why), "{why}: {notes:?}");
        }
    }
}
