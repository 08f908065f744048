//! Submissions as `.zip` or `.tar.gz` archives, read in memory: nothing is extracted to disk,
//! so no entry can be written outside the grader's folder. Entries that would escape the
//! student's folder (`../`, absolute paths, links pointing out) are still reported, because a
//! tool that did extract the archive would be led astray. Sizes are capped while the archive is
//! read, which defeats archive bombs (huge expansion, or a flood of entries).

use crate::problem::{Location, Problem, ProblemKind};
use crate::submission::{
    choose_base, human_bytes, no_exercises, skipped_folder, Limits, Submission, Wanted,
};
use crate::tree::Tree;
use course_model::manifest::normalize_relative;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

/// Which archive format a file name says it is.
pub fn archive_kind(name: &str) -> Option<ArchiveKind> {
    let lower = name.to_lowercase();
    if lower.ends_with(".zip") {
        Some(ArchiveKind::Zip)
    } else if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") {
        Some(ArchiveKind::TarGz)
    } else {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveKind {
    Zip,
    TarGz,
}

/// What a scan of the archive keeps: every entry's path (to find the exercises folder) and
/// the bytes of the entries that may be wanted.
#[derive(Default)]
struct Scan {
    bases: BTreeMap<Vec<String>, BTreeSet<String>>,
    candidates: BTreeMap<String, Vec<u8>>,
    oversized: BTreeSet<String>,
    links: BTreeSet<String>,
    /// Modification times of the candidates, where the format records them in UTC (tar).
    modified: BTreeMap<String, std::time::SystemTime>,
    problems: Vec<Problem>,
    total: u64,
}

impl Scan {
    /// Note an entry's (normalised) path; say whether its content may be wanted.
    fn note_path(&mut self, components: &[String], wanted: &Wanted, is_dir: bool) -> bool {
        let mut interesting = false;
        for (i, c) in components.iter().enumerate() {
            if skipped_folder(c) && i + 1 < components.len() {
                break;
            }
            if wanted.folders.contains(c) && (i + 1 < components.len() || is_dir) {
                self.bases
                    .entry(components[..i].to_vec())
                    .or_default()
                    .insert(c.clone());
            }
            if !is_dir && wanted.paths.contains(&components[i..].join("/")) {
                interesting = true;
            }
        }
        interesting
    }
}

/// Read an archive into a submission. `display_name` is how the student is shown.
pub fn read_archive(
    path: &Path,
    kind: ArchiveKind,
    display_name: &str,
    wanted: &Wanted,
    limits: &Limits,
) -> Submission {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut scan = Scan::default();
    let outcome = match std::fs::File::open(path) {
        Ok(file) => match kind {
            ArchiveKind::Zip => scan_zip(file, &file_name, wanted, limits, &mut scan),
            ArchiveKind::TarGz => scan_tar_gz(file, &file_name, wanted, limits, &mut scan),
        },
        Err(e) => Err(format!("cannot open the archive: {e}")),
    };
    let mut submission = Submission {
        display_root: file_name.clone(),
        ..Default::default()
    };
    if let Err(message) = outcome {
        scan.problems.push(Problem::new(
            ProblemKind::Archive,
            Some(Location::file(file_name.clone())),
            message,
            "repack the course folder as a plain .zip or .tar.gz and submit it again",
        ));
    }
    submission.problems = std::mem::take(&mut scan.problems);
    let Some(base) = choose_base(&scan.bases, &file_name, &mut submission.problems) else {
        if submission
            .problems
            .iter()
            .all(|p| p.kind != ProblemKind::Archive)
        {
            submission.problems.push(no_exercises(display_name));
        }
        return submission;
    };
    submission.folders = scan.bases.get(&base).cloned().unwrap_or_default();
    submission.base = Some(base.clone());
    let prefix = if base.is_empty() {
        String::new()
    } else {
        format!("{}/", base.join("/"))
    };
    if !base.is_empty() {
        submission.display_root = format!("{file_name}:{}", base.join("/"));
    }
    for rel in &wanted.paths {
        let full = format!("{prefix}{rel}");
        if scan.links.contains(&full) {
            let shown = submission.display(rel);
            submission.insert_problem(
                rel,
                Problem::new(
                    ProblemKind::Escapes,
                    Some(Location::file(shown)),
                    "this archive entry is a link, not a file",
                    "pack the file itself",
                ),
            );
        } else if scan.oversized.contains(&full) {
            let shown = submission.display(rel);
            submission.insert_problem(
                rel,
                crate::submission::too_large(&shown, limits.max_file_bytes),
            );
        } else if let Some(bytes) = scan.candidates.remove(&full) {
            if let Some(at) = scan.modified.get(&full) {
                submission.set_modified(rel, *at);
            }
            submission.insert_bytes(rel, bytes, limits);
        }
    }
    submission.load_progress();
    submission
}

/// Split an entry name into safe components, or say why it escapes.
fn entry_components(name: &str) -> Result<Vec<String>, ()> {
    if name.contains('\0') {
        return Err(());
    }
    let normalized = normalize_relative(name).ok_or(())?;
    Ok(normalized
        .split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect())
}

fn escaping_entry(archive: &str, name: &str, what: &str) -> Problem {
    Problem::new(
        ProblemKind::Escapes,
        Some(Location::file(format!("{archive}:{name}"))),
        format!("{what} points outside the student's folder (not extracted)"),
        "pack the course folder without absolute paths, `..` or links leading out",
    )
}

/// Does a link stored at `entry` (components) with text `target` stay inside the archive root?
fn link_target_inside(entry: &[String], target: &str) -> bool {
    if target.starts_with('/') || target.starts_with('\\') {
        return false;
    }
    let parent = entry[..entry.len().saturating_sub(1)].join("/");
    normalize_relative(&format!("{parent}/{target}")).is_some()
}

fn read_capped(reader: &mut impl Read, cap: u64) -> std::io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    reader.take(cap + 1).read_to_end(&mut bytes)?;
    let over = bytes.len() as u64 > cap;
    Ok((bytes, over))
}

fn bomb(limits: &Limits) -> String {
    format!(
        "the archive expands to more than {} (an archive bomb, or a build folder packed in); it was not read further",
        human_bytes(limits.max_archive_bytes)
    )
}

fn scan_zip(
    file: std::fs::File,
    archive: &str,
    wanted: &Wanted,
    limits: &Limits,
    scan: &mut Scan,
) -> Result<(), String> {
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| format!("this is not a readable zip archive: {e}"))?;
    if zip.len() > limits.max_entries {
        return Err(format!(
            "the archive holds {} entries, more than the cap of {}",
            zip.len(),
            limits.max_entries
        ));
    }
    for index in 0..zip.len() {
        let mut entry = zip
            .by_index(index)
            .map_err(|e| format!("entry {} cannot be read: {e}", index + 1))?;
        let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        let Ok(components) = entry_components(&name) else {
            scan.problems
                .push(escaping_entry(archive, &name, "this entry"));
            continue;
        };
        if components.is_empty() {
            continue;
        }
        if entry.is_symlink() {
            let (target, _) = read_capped(&mut entry, 4096)
                .map_err(|e| format!("entry {name} cannot be read: {e}"))?;
            if !link_target_inside(&components, &String::from_utf8_lossy(&target)) {
                scan.problems
                    .push(escaping_entry(archive, &name, "this link"));
            }
            scan.links.insert(components.join("/"));
            continue;
        }
        let is_dir = entry.is_dir();
        if scan.note_path(&components, wanted, is_dir) {
            read_entry(&mut entry, components.join("/"), limits, scan)
                .map_err(|e| format!("entry {name} cannot be read: {e}"))?;
            if scan.total > limits.max_archive_bytes {
                return Err(bomb(limits));
            }
        }
    }
    Ok(())
}

fn read_entry(
    reader: &mut impl Read,
    key: String,
    limits: &Limits,
    scan: &mut Scan,
) -> std::io::Result<()> {
    let (bytes, over) = read_capped(reader, limits.max_file_bytes)?;
    scan.total += bytes.len() as u64;
    if over {
        scan.oversized.insert(key);
    } else {
        scan.candidates.insert(key, bytes);
    }
    Ok(())
}

/// Counts what the decompressor produces and fails past the cap: a tar.gz must be inflated
/// entry by entry to be read at all, so the cap sits under the whole stream.
struct CappedReader<R> {
    inner: R,
    read: u64,
    cap: u64,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read > self.cap {
            return Err(std::io::Error::other("expansion cap reached"));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

fn scan_tar_gz(
    file: std::fs::File,
    archive: &str,
    wanted: &Wanted,
    limits: &Limits,
    scan: &mut Scan,
) -> Result<(), String> {
    let gz = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
    let capped = CappedReader {
        inner: gz,
        read: 0,
        cap: limits.max_archive_bytes,
    };
    let mut tar = tar::Archive::new(capped);
    let entries = tar
        .entries()
        .map_err(|e| format!("this is not a readable .tar.gz archive: {e}"))?;
    let mut count = 0usize;
    for entry in entries {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(e) if e.to_string().contains("expansion cap") => return Err(bomb(limits)),
            Err(e) => return Err(format!("this is not a readable .tar.gz archive: {e}")),
        };
        count += 1;
        if count > limits.max_entries {
            return Err(format!(
                "the archive holds more than {} entries (the cap)",
                limits.max_entries
            ));
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Ok(components) = entry_components(&name) else {
            scan.problems
                .push(escaping_entry(archive, &name, "this entry"));
            continue;
        };
        if components.is_empty() {
            continue;
        }
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            let target = entry
                .link_name_bytes()
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default();
            // A hard link's target is a path from the archive root, a symlink's from its folder.
            let inside = if kind.is_hard_link() {
                normalize_relative(&target).is_some()
            } else {
                link_target_inside(&components, &target)
            };
            if !inside {
                scan.problems
                    .push(escaping_entry(archive, &name, "this link"));
            }
            scan.links.insert(components.join("/"));
            continue;
        }
        let is_dir = kind.is_dir();
        if !is_dir && !kind.is_file() {
            continue;
        }
        if scan.note_path(&components, wanted, is_dir) {
            // 0 is what tools write when they record no time.
            if let Some(secs) = entry.header().mtime().ok().filter(|s| *s > 0) {
                scan.modified.insert(
                    components.join("/"),
                    std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
                );
            }
            let result = read_entry(&mut entry, components.join("/"), limits, scan);
            if let Err(e) = result {
                return Err(if e.to_string().contains("expansion cap") {
                    bomb(limits)
                } else {
                    format!("entry {name} cannot be read: {e}")
                });
            }
        }
    }
    Ok(())
}

/// The regular files of an archive below `prefix` (path components, e.g. `course`, `exercises`,
/// `exercise-2`, `src`), keyed by their path below it, under the same caps as grading:
/// `course grade --run-tests` writes them into a scratch copy. Links are left out and named in
/// `skipped`; entries that escape were already reported when the submission was graded.
pub fn read_tree(
    path: &Path,
    kind: ArchiveKind,
    prefix: &[String],
    limits: &Limits,
) -> Result<Tree, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open the archive: {e}"))?;
    let mut tree = Tree::default();
    match kind {
        ArchiveKind::Zip => {
            let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
                .map_err(|e| format!("this is not a readable zip archive: {e}"))?;
            if zip.len() > limits.max_entries {
                return Err(format!(
                    "the archive holds {} entries, more than the cap of {}",
                    zip.len(),
                    limits.max_entries
                ));
            }
            for index in 0..zip.len() {
                let mut entry = zip
                    .by_index(index)
                    .map_err(|e| format!("entry {} cannot be read: {e}", index + 1))?;
                let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
                let Some(rel) = entry_components(&name).ok().and_then(|c| below(&c, prefix)) else {
                    continue;
                };
                if entry.is_symlink() {
                    tree.skipped.push(format!("{rel}: a link, not a file"));
                } else if !entry.is_dir() {
                    tree_entry(&mut entry, rel, limits, &mut tree)
                        .map_err(|e| format!("entry {name} cannot be read: {e}"))?;
                }
            }
        }
        ArchiveKind::TarGz => {
            let gz = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
            let mut tar = tar::Archive::new(CappedReader {
                inner: gz,
                read: 0,
                cap: limits.max_archive_bytes,
            });
            let entries = tar
                .entries()
                .map_err(|e| format!("this is not a readable .tar.gz archive: {e}"))?;
            for (count, entry) in entries.enumerate() {
                let mut entry = match entry {
                    Ok(entry) => entry,
                    Err(e) if e.to_string().contains("expansion cap") => return Err(bomb(limits)),
                    Err(e) => return Err(format!("this is not a readable .tar.gz archive: {e}")),
                };
                if count >= limits.max_entries {
                    return Err(format!(
                        "the archive holds more than {} entries (the cap)",
                        limits.max_entries
                    ));
                }
                let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
                let Some(rel) = entry_components(&name).ok().and_then(|c| below(&c, prefix)) else {
                    continue;
                };
                let kind = entry.header().entry_type();
                if kind.is_symlink() || kind.is_hard_link() {
                    tree.skipped.push(format!("{rel}: a link, not a file"));
                } else if kind.is_file() {
                    tree_entry(&mut entry, rel, limits, &mut tree).map_err(|e| {
                        if e.to_string().contains("expansion cap") {
                            bomb(limits)
                        } else {
                            format!("entry {name} cannot be read: {e}")
                        }
                    })?;
                }
            }
        }
    }
    Ok(tree)
}

/// The path of `components` below `prefix`, if it lies strictly below.
fn below(components: &[String], prefix: &[String]) -> Option<String> {
    (components.len() > prefix.len() && components.starts_with(prefix))
        .then(|| components[prefix.len()..].join("/"))
}

fn tree_entry(
    reader: &mut impl Read,
    rel: String,
    limits: &Limits,
    tree: &mut Tree,
) -> std::io::Result<()> {
    let (bytes, over) = read_capped(reader, limits.max_file_bytes)?;
    tree.add(rel, bytes, over, limits)
        .map_err(std::io::Error::other)
}
