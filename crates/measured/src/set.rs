//! Loading and writing measured files, and looking a figure up by `NAME.KEY`.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::MeasuredError;
use crate::file::{Figure, MeasuredFile, Source};

/// The files whose figures are not the course's own experiments: recorded by another tool or
/// transcribed by hand. `book-measure` does not write them.
const RECORDED: &[&str] = &["h200", "llama-cpp", "pytorch"];

/// What a reader types to (re)make `book/measured/NAME.json`, said as a next step.
pub fn command_for(name: &str) -> String {
    if RECORDED.contains(&name) {
        format!(
            "book/measured/{name}.json is a recorded file (written by another tool or \
             transcribed by hand, not by book-measure): restore the committed one with \
             `git checkout -- book/measured/{name}.json`"
        )
    } else {
        format!("run `cargo run -p book-measure -- {name}` (it writes book/measured/{name}.json)")
    }
}

/// Reads and checks `DIR/NAME.json`.
pub fn load(dir: &Path, name: &str) -> Result<MeasuredFile, MeasuredError> {
    let path = dir.join(format!("{name}.json"));
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(MeasuredError::MissingFile {
                path,
                name: name.to_string(),
                command: command_for(name),
            })
        }
        Err(source) => return Err(MeasuredError::Read { path, source }),
    };
    let file: MeasuredFile =
        serde_json::from_str(&text).map_err(|source| MeasuredError::Parse {
            path: path.clone(),
            command: command_for(name),
            source,
        })?;
    let mut problems = file.problems();
    if file.name != name {
        problems.push(format!(
            "\"name\" is \"{}\", but the file is {name}.json (they must agree)",
            file.name
        ));
    }
    if !problems.is_empty() {
        return Err(MeasuredError::Invalid {
            path,
            problems,
            command: command_for(name),
        });
    }
    Ok(file)
}

/// Writes `DIR/NAME.json` (NAME from `file.name`) atomically: to a temporary file in the same
/// folder, then renamed over the old one, so a reader never sees half a file. Creates the
/// folder. Refuses a file that [`MeasuredFile::problems`] rejects. Returns the path written.
pub fn write(dir: &Path, file: &MeasuredFile) -> Result<PathBuf, MeasuredError> {
    let path = dir.join(format!("{}.json", file.name));
    let problems = file.problems();
    if !problems.is_empty() {
        return Err(MeasuredError::InvalidWrite { path, problems });
    }
    let mut text = serde_json::to_string_pretty(file).expect("a measured file always serialises");
    text.push('\n');
    let write_err = |source| MeasuredError::Write {
        path: path.clone(),
        source,
    };
    fs::create_dir_all(dir).map_err(write_err)?;
    let tmp = dir.join(format!(".{}.json.tmp-{}", file.name, std::process::id()));
    let result = (|| {
        let mut out = fs::File::create(&tmp)?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        fs::rename(&tmp, &path)
    })();
    if let Err(source) = result {
        let _ = fs::remove_file(&tmp);
        return Err(write_err(source));
    }
    Ok(path)
}

/// A figure found by [`Measured::lookup`], with the file it came from.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub file: &'a MeasuredFile,
    /// The key inside the file (`gelu.share`).
    pub key: &'a str,
    pub figure: &'a Figure,
}

/// The measured files of one folder (`book/measured/`), by name.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    dir: PathBuf,
    files: BTreeMap<String, MeasuredFile>,
}

impl Measured {
    /// No files yet; [`Measured::insert`] adds some (tests, or a writer checking what it wrote).
    pub fn empty(dir: impl Into<PathBuf>) -> Self {
        Measured {
            dir: dir.into(),
            files: BTreeMap::new(),
        }
    }

    /// Loads every `*.json` directly in `dir` (not its subfolders). A folder that does not exist
    /// holds no files: each lookup then says which command makes the file it needs.
    pub fn load_dir(dir: impl Into<PathBuf>) -> Result<Self, MeasuredError> {
        let dir = dir.into();
        let mut measured = Measured::empty(dir.clone());
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(measured),
            Err(source) => return Err(MeasuredError::Read { path: dir, source }),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| MeasuredError::Read {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                    if !stem.starts_with('.') {
                        names.push(stem.to_string());
                    }
                }
            }
        }
        names.sort();
        for name in names {
            let file = load(&dir, &name)?;
            measured.files.insert(name, file);
        }
        Ok(measured)
    }

    /// The folder the files come from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds (or replaces) a file.
    pub fn insert(&mut self, file: MeasuredFile) {
        self.files.insert(file.name.clone(), file);
    }

    /// Every loaded file, by name.
    pub fn files(&self) -> impl Iterator<Item = &MeasuredFile> {
        self.files.values()
    }

    /// The file `name`, or an error saying which command makes it.
    pub fn file(&self, name: &str) -> Result<&MeasuredFile, MeasuredError> {
        self.files
            .get(name)
            .ok_or_else(|| MeasuredError::MissingFile {
                path: self.dir.join(format!("{name}.json")),
                name: name.to_string(),
                command: command_for(name),
            })
    }

    /// The figure `NAME.KEY`: `exercise-3.gelu.share` is figure `gelu.share` of
    /// `exercise-3.json`.
    pub fn lookup<'a>(&'a self, full_key: &str) -> Result<Lookup<'a>, MeasuredError> {
        let (name, key) = split_key(full_key)?;
        let file = self.file(name)?;
        match file.figures.get_key_value(key) {
            Some((key, figure)) => Ok(Lookup { file, key, figure }),
            None => Err(MeasuredError::MissingKey {
                path: self.dir.join(format!("{name}.json")),
                key: key.to_string(),
                known: file.figures.keys().cloned().collect(),
                next: match file.measured_on.source {
                    Source::BookMeasure => format!(
                        "if the key is right, its experiment does not write it yet: list it in \
                         book/measured/wanted/PAGE.tsv (crates/book-measure writes what is \
                         listed there), then {}; if not, fix the key",
                        command_for(name)
                    ),
                    Source::Transcribed | Source::Recorded => format!(
                        "if the key is right, add the figure to this {} file (its note says \
                         where it comes from); if not, fix the key",
                        if file.measured_on.source == Source::Transcribed {
                            "transcribed"
                        } else {
                            "recorded"
                        }
                    ),
                },
            }),
        }
    }

    /// The figure `NAME.KEY` as the book prints it (`14.2%`).
    pub fn render(&self, full_key: &str) -> Result<String, MeasuredError> {
        Ok(self.lookup(full_key)?.figure.render())
    }

    /// The value of the numeric figure `NAME.KEY`.
    pub fn number(&self, full_key: &str) -> Result<f64, MeasuredError> {
        let found = self.lookup(full_key)?;
        found
            .figure
            .value()
            .ok_or_else(|| MeasuredError::NotANumber {
                path: self.dir.join(format!("{}.json", found.file.name)),
                key: found.key.to_string(),
            })
    }
}

/// `exercise-3.gelu.share` → (`exercise-3`, `gelu.share`).
pub fn split_key(full_key: &str) -> Result<(&str, &str), MeasuredError> {
    match full_key.split_once('.') {
        Some((name, key))
            if crate::is_valid_name(name)
                && !key.is_empty()
                && !key.contains(char::is_whitespace) =>
        {
            Ok((name, key))
        }
        _ => Err(MeasuredError::BadKey {
            key: full_key.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::MeasuredOn;

    fn exercise_3() -> MeasuredFile {
        let on = MeasuredOn {
            source: Source::BookMeasure,
            date: "2026-12-05".into(),
            machine: "a test machine".into(),
            device: "cpu".into(),
            kernel_path: None,
            threads: None,
            ceilings: None,
            command: "book-measure exercise-3".into(),
            note: None,
        };
        let mut file = MeasuredFile::new("exercise-3", on);
        file.insert("gelu.share", Figure::number(14.23, "%", 1));
        file.insert("kernel_path", Figure::text("packed-avx512"));
        file
    }

    #[test]
    fn write_then_load_dir_then_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let measured_dir = dir.path().join("measured");
        let path = write(&measured_dir, &exercise_3()).unwrap();
        assert_eq!(path, measured_dir.join("exercise-3.json"));
        // The temporary file is gone and subfolders (wanted/) are not read.
        fs::create_dir(measured_dir.join("wanted")).unwrap();
        let names: Vec<_> = fs::read_dir(&measured_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");

        let measured = Measured::load_dir(&measured_dir).unwrap();
        assert_eq!(measured.render("exercise-3.gelu.share").unwrap(), "14.2%");
        assert_eq!(measured.number("exercise-3.gelu.share").unwrap(), 14.23);
        let found = measured.lookup("exercise-3.kernel_path").unwrap();
        assert_eq!(
            (found.file.name.as_str(), found.key),
            ("exercise-3", "kernel_path")
        );
        let err = measured
            .number("exercise-3.kernel_path")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a text"), "{err}");
    }

    #[test]
    fn a_missing_key_names_the_file_the_keys_it_has_and_the_command() {
        let mut measured = Measured::empty("book/measured");
        measured.insert(exercise_3());
        let err = measured
            .lookup("exercise-3.gelu.shar")
            .unwrap_err()
            .to_string();
        insta::assert_snapshot!(err, @"book/measured/exercise-3.json: no figure `gelu.shar` (nearest: gelu.share; 2 figures in all). Next step: if the key is right, its experiment does not write it yet: list it in book/measured/wanted/PAGE.tsv (crates/book-measure writes what is listed there), then run `cargo run -p book-measure -- exercise-3` (it writes book/measured/exercise-3.json); if not, fix the key");
    }

    #[test]
    fn a_missing_key_among_many_shows_the_nearest_and_a_transcribed_file_says_to_add_it() {
        let mut file = exercise_3();
        for row in [
            "matmul",
            "lm_head",
            "gelu",
            "bias_add",
            "softmax",
            "layer_norm",
        ] {
            for field in ["share", "ms", "reading", "gb_s"] {
                file.insert(format!("stage1.{row}.{field}"), Figure::text("x"));
            }
        }
        file.measured_on.source = Source::Transcribed;
        let mut measured = Measured::empty("m");
        measured.insert(file);
        let err = measured
            .lookup("exercise-3.stage1.fused.share")
            .unwrap_err()
            .to_string();
        insta::assert_snapshot!(err, @"m/exercise-3.json: no figure `stage1.fused.share` (nearest: stage1.bias_add.share, stage1.gelu.share, stage1.layer_norm.share, stage1.lm_head.share, stage1.matmul.share, stage1.softmax.share, stage1.bias_add.gb_s, stage1.bias_add.ms; 26 figures in all). Next step: if the key is right, add the figure to this transcribed file (its note says where it comes from); if not, fix the key");
        let err = measured
            .lookup("exercise-3.nothing_alike")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("(it has: gelu.share, kernel_path, stage1.bias_add.gb_s,"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_file_says_which_command_makes_it() {
        let measured = Measured::load_dir("/nonexistent/measured").unwrap();
        let err = measured
            .lookup("exercise-5.fused.step_ms")
            .unwrap_err()
            .to_string();
        insta::assert_snapshot!(err, @"/nonexistent/measured/exercise-5.json: no such file, so `exercise-5.*` figures cannot be rendered. Next step: run `cargo run -p book-measure -- exercise-5` (it writes book/measured/exercise-5.json)");
        let err = measured.lookup("h200.decode_ms").unwrap_err().to_string();
        assert!(
            err.contains("git checkout -- book/measured/h200.json"),
            "{err}"
        );
        let err = measured.lookup("exercise-3").unwrap_err().to_string();
        assert!(
            err.starts_with("`exercise-3` is not a figure's name"),
            "{err}"
        );
    }

    #[test]
    fn load_rejects_bad_files_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("aa.json"), "{ not json").unwrap();
        let err = load(dir.path(), "aa").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{}: not a measured-figures file",
                dir.path().join("aa.json").display()
            )),
            "{err}"
        );
        assert!(err.contains("cargo run -p book-measure -- aa"), "{err}");

        let mut file = exercise_3();
        file.name = "serving".into();
        fs::write(
            dir.path().join("aa.json"),
            serde_json::to_string(&file).unwrap(),
        )
        .unwrap();
        let err = load(dir.path(), "aa").unwrap_err().to_string();
        assert!(
            err.contains("\"name\" is \"serving\", but the file is aa.json"),
            "{err}"
        );
        // load_dir fails on the bad file too, rather than rendering a book without it.
        assert!(Measured::load_dir(dir.path()).is_err());
    }

    #[test]
    fn write_refuses_an_invalid_file_and_leaves_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &exercise_3()).unwrap();
        let mut bad = exercise_3();
        bad.insert("x", Figure::number(1.0, "furlongs", 0));
        let err = write(dir.path(), &bad).unwrap_err().to_string();
        assert!(
            err.contains("refusing to write") && err.contains("furlongs"),
            "{err}"
        );
        assert_eq!(load(dir.path(), "exercise-3").unwrap(), exercise_3());
    }
}
