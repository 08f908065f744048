//! Where a `--model` value points: a checkpoint directory, a Hugging Face Hub repository
//! (fetched into the standard HF cache, or read from it offline, by the engine's one loader,
//! [`engine::loader`]), or a synthetic checkpoint with a real model's shapes. Before any weight is read or downloaded, a Llama-family
//! checkpoint's size is held against the memory this machine has free. A checkpoint of another
//! model type is found and fetched the same way; what runs it checks its size.
//!
//! GGUF files ([`gguf_of`]): a path, a Hub repository of them, or a synthetic one by name.
//! Bonsai 8B ([`BONSAI_8B_REPO`]), the 1-bit model the course's article names, has a synthetic
//! stand-in with its exact shapes (`crate::synthetic_gguf`), used with the same notice as the
//! default model's when the Hub cannot be reached and nothing is cached.

use std::path::{Path, PathBuf};

use candle_core::DType;
use engine::loader::HubGguf;
use engine::{Error, Result};

use crate::config::Config;
use crate::synthetic::{Shape, SHAPES, SMOLLM2_135M};
pub use crate::synthetic_gguf::BONSAI_8B_REPO;
use crate::synthetic_gguf::{GgufShape, BONSAI_8B, GGUF_SHAPES};

/// What `--model` names when nothing is given: the smallest model of the family on the Hub.
pub const DEFAULT_MODEL: &str = "HuggingFaceTB/SmolLM2-135M";

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Dir(PathBuf),
    Hub(String),
    Synthetic(Shape),
}

/// A checkpoint directory ready for [`crate::weights::load`] (the engine loader's).
pub use engine::loader::Checkpoint;

impl Source {
    /// Reads `--model`: an existing directory, `synthetic-NAME`, or a Hub repository id
    /// (`owner/name`).
    pub fn parse(arg: &str) -> Result<Self> {
        let path = Path::new(arg);
        if path.is_dir() {
            return Ok(Source::Dir(path.to_owned()));
        }
        if let Some(name) = arg.strip_prefix("synthetic-") {
            return SHAPES
                .iter()
                .find(|s| s.name == name)
                .map(|s| Source::Synthetic(*s))
                .ok_or_else(|| {
                    let names: Vec<String> = SHAPES
                        .iter()
                        .map(|s| format!("synthetic-{}", s.name))
                        .collect();
                    Error::Input(format!(
                        "--model {arg}: no such synthetic checkpoint; there are {}",
                        names.join(", ")
                    ))
                });
        }
        match engine::loader::Source::parse_path_or_repo(arg) {
            Some(engine::loader::Source::Hub { repo, .. }) => return Ok(Source::Hub(repo)),
            Some(engine::loader::Source::Gguf(path)) => {
                return Err(Error::Input(format!(
                    "--model {}: a GGUF file; this command reads safetensors checkpoints (a Hub repository id or a folder \
                     with config.json and model.safetensors); `serve --model FILE.gguf` and exercise 8 run GGUF files",
                    path.display()
                )))
            }
            _ => {}
        }
        Err(Error::Input(format!(
            "--model {arg}: not a directory, a Hub repository id (owner/name, e.g. {DEFAULT_MODEL}) or synthetic-{}",
            SMOLLM2_135M.name
        )))
    }
}

/// The GGUF file `--model` names, if it names one: a `.gguf` path (which must exist), a
/// synthetic GGUF by name (`synthetic-bonsai-8b`), or a Hub repository whose files are GGUF
/// files and no safetensors weights, fetched into the Hugging Face cache: the one `file` names,
/// else its only one, else its one Q8_0 file, else an error listing them
/// ([`engine::loader::find_gguf_on_hub`]). When the Hub cannot be reached and nothing is
/// cached, [`BONSAI_8B_REPO`] is replaced by its synthetic stand-in, said on standard error as
/// the other models' stand-ins are ([`gguf_or_stand_in`]). `None` for anything else (a folder, a
/// safetensors repository, `synthetic-…` of a safetensors shape), which [`Source::parse`]
/// reads; `file` is then an error. Where the answer is a file,
/// [`crate::gguf::load_for_generation`] loads it (its memory check first, from the header).
pub fn gguf_of(model: &str, file: Option<&str>) -> Result<Option<PathBuf>> {
    gguf_or_stand_in(model, file, &mut |notice| eprintln!("{notice}"))
}

/// [`gguf_of`], with `notice` told when a stand-in replaces the model and when it is written.
pub fn gguf_or_stand_in(
    model: &str,
    file: Option<&str>,
    notice: &mut dyn FnMut(&str),
) -> Result<Option<PathBuf>> {
    if let Some(shape) = model
        .strip_prefix("synthetic-")
        .and_then(|name| GGUF_SHAPES.iter().find(|s| s.name == name))
    {
        if let Some(file) = file {
            return Err(Error::Input(format!(
                "--file {file}: --file picks a file of a Hub repository, and --model {model} is a synthetic file"
            )));
        }
        return stand_in(shape, notice).map(Some);
    }
    let found = match engine::loader::Source::parse_path_or_repo(model) {
        Some(engine::loader::Source::Gguf(path)) => {
            if let Some(file) = file {
                return Err(Error::Input(format!(
                    "--file {file}: --file picks a file of a Hub repository, and --model {model} is a file already"
                )));
            }
            if !path.is_file() {
                return Err(Error::Input(format!("--model {model}: no such file")));
            }
            Some(path)
        }
        Some(engine::loader::Source::Hub { repo, revision }) => {
            match engine::loader::find_gguf_on_hub(&repo, revision.as_deref(), file)? {
                HubGguf::File(path) => Some(path),
                HubGguf::NotGguf => None,
                HubGguf::Unreachable(why) if repo == BONSAI_8B_REPO => {
                    let shape = &BONSAI_8B;
                    check_stand_in_memory(shape)?;
                    notice(&engine::loader::stand_in_notice(
                        &repo,
                        &why,
                        &format!(
                            "synthetic-{} (its shapes, every matrix Q1_0 with seeded signs)",
                            shape.name
                        ),
                    ));
                    Some(stand_in(shape, notice)?)
                }
                HubGguf::Unreachable(why) => match file {
                    Some(f) => {
                        return Err(Error::Input(format!(
                            "cannot get {f} of {repo} from the Hugging Face Hub ({why}) and it is not cached"
                        )))
                    }
                    // The safetensors path says what is missing.
                    None => None,
                },
            }
        }
        _ => None,
    };
    match (&found, file) {
        (None, Some(file)) => Err(Error::Input(format!(
            "--file {file}: --model {model} is not a Hub repository of GGUF files"
        ))),
        _ => Ok(found),
    }
}

/// A synthetic GGUF from the course's cache, refused first when this machine's free memory
/// cannot hold it (from its plan: nothing is written then), and written once, said in a line.
fn stand_in(shape: &GgufShape, notice: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    check_stand_in_memory(shape)?;
    let path = engine::cache_dir()
        .join(shape.cache_name())
        .join(shape.file_name());
    if !path.is_file() {
        let bytes = shape.plan().file_bytes().map_err(Error::Input)?;
        notice(&format!(
            "writing synthetic-{} once into {} ({:.2} GB)",
            shape.name,
            path.display(),
            bytes as f64 / 1e9
        ));
    }
    shape.cached()
}

/// What loading a synthetic GGUF of `shape` needs, from its tensor table alone
/// ([`crate::gguf::memory_need`], the sum the check of a real file makes from its header).
pub fn stand_in_need(shape: &GgufShape) -> Result<(u64, String)> {
    let stored = shape
        .tensors()
        .iter()
        .map(|t| t.bytes())
        .sum::<std::result::Result<u64, String>>()
        .map_err(Error::Input)?;
    Ok(crate::gguf::memory_need(
        stored,
        shape.vocab_size,
        shape.hidden_size,
    ))
}

fn check_stand_in_memory(shape: &GgufShape) -> Result<()> {
    let (needed, detail) = stand_in_need(shape)?;
    engine::memory::check_fits(&format!("synthetic-{}", shape.name), needed, &detail)
}

/// Finds or fetches `source`'s checkpoint with the engine's loader
/// ([`engine::loader::resolve_hub`]). `dtype` is the type the weights will be held in, for the
/// memory check (made from config.json, before any weight is read or downloaded). `notice` gets
/// the one line said when the default model cannot be reached and the synthetic one with its
/// shapes stands in.
pub fn resolve(source: &Source, dtype: DType, notice: &mut dyn FnMut(&str)) -> Result<Checkpoint> {
    match source {
        Source::Dir(dir) => {
            check_memory(dir, dtype)?;
            Ok(Checkpoint {
                dir: dir.clone(),
                name: dir.display().to_string(),
                synthetic: false,
            })
        }
        Source::Synthetic(shape) => synthetic(shape, dtype),
        Source::Hub(repo) => {
            let stand_in = || synthetic(&SMOLLM2_135M, dtype);
            let check = |config: &Path| check_config_memory(config, dtype, repo);
            let family = engine::loader::Family {
                default_repo: DEFAULT_MODEL,
                stand_in: &format!(
                    "synthetic-{} (its shapes, seeded random weights)",
                    SMOLLM2_135M.name
                ),
                synthetic: &stand_in,
                check_config: &check,
            };
            engine::loader::resolve_hub(repo, None, &family, notice)
        }
    }
}

fn synthetic(shape: &Shape, dtype: DType) -> Result<Checkpoint> {
    let cfg = Config::from_json(&shape.config_json().to_string()).map_err(Error::Input)?;
    fits_in_memory(&cfg, dtype, &format!("synthetic-{}", shape.name))?;
    Ok(Checkpoint {
        dir: shape.cached()?,
        name: format!("synthetic-{}", shape.name),
        synthetic: true,
    })
}

/// A directory's checkpoint against this machine's free memory, from its config.json.
fn check_memory(dir: &Path, dtype: DType) -> Result<()> {
    let config = dir.join("config.json");
    if !config.is_file() {
        return Err(Error::Weights {
            path: config,
            message: "missing: a checkpoint directory needs config.json".into(),
        });
    }
    check_config_memory(&config, dtype, &dir.display().to_string())
}

/// The memory check of a Llama-family config; another model's is its own runner's (exercise 8's
/// second tier counts its weights from their headers before loading them).
fn check_config_memory(config: &Path, dtype: DType, name: &str) -> Result<()> {
    match crate::config::family_of_file(config)? {
        Some(_) => fits_in_memory(&Config::from_file(config)?, dtype, name),
        None => Ok(()),
    }
}

/// Loading holds the weights twice for a moment (as read, then laid out for the kernels), so a
/// model needs twice its size in free memory.
pub fn fits_in_memory(cfg: &Config, dtype: DType, name: &str) -> Result<()> {
    let (needed, detail) = need(cfg, dtype);
    engine::memory::check_fits(name, needed, &detail)
}

/// The bytes a model of `cfg` needs while loading in `dtype`, and what that figure is.
fn need(cfg: &Config, dtype: DType) -> (u64, String) {
    let size = cfg.parameters() as u64 * dtype.size_in_bytes() as u64;
    (
        2 * size,
        format!(
            "has {:.2} billion parameters: {} in {}",
            cfg.parameters() as f64 / 1e9,
            engine::memory::gib(size),
            dtype.as_str()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_values_parse_to_their_source() {
        assert_eq!(
            Source::parse("HuggingFaceTB/SmolLM2-135M").unwrap(),
            Source::Hub("HuggingFaceTB/SmolLM2-135M".into())
        );
        assert_eq!(
            Source::parse("synthetic-smollm2-135m").unwrap(),
            Source::Synthetic(SMOLLM2_135M)
        );
        assert!(Source::parse("synthetic-gpt5")
            .unwrap_err()
            .to_string()
            .contains("synthetic-smollm2-135m"));
        assert!(Source::parse("model.Q8_0.gguf")
            .unwrap_err()
            .to_string()
            .contains("GGUF"));
        assert!(Source::parse("no such folder")
            .unwrap_err()
            .to_string()
            .contains("not a directory, a Hub repository id"));
    }

    #[test]
    fn a_gguf_path_is_a_gguf_and_file_only_picks_from_a_repository() {
        let gguf =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf/tiny-llama-q8_0.gguf");
        let arg = gguf.to_str().unwrap();
        assert_eq!(gguf_of(arg, None).unwrap(), Some(gguf.clone()));
        let e = gguf_of(arg, Some("x.gguf")).unwrap_err().to_string();
        assert!(
            e.contains("--file x.gguf") && e.contains("is a file already"),
            "{e}"
        );
        let e = gguf_of("missing-Q8_0.gguf", None).unwrap_err().to_string();
        assert!(e.contains("--model missing-Q8_0.gguf: no such file"), "{e}");
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-llama");
        assert_eq!(gguf_of(folder.to_str().unwrap(), None).unwrap(), None);
        assert_eq!(gguf_of("synthetic-llama-tiny", None).unwrap(), None);
        let e = gguf_of("synthetic-llama-tiny", Some("x.gguf"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a Hub repository of GGUF files"), "{e}");
    }

    #[test]
    fn a_model_that_does_not_fit_is_refused_with_its_size_and_the_free_memory() {
        let cfg = Config::from_json(&SMOLLM2_135M.config_json().to_string()).unwrap();
        // 134.5 M parameters: 0.50 GiB in f32, 1.0 GiB while loading; 0.25 GiB in bf16.
        let fits = |dtype, free| {
            let (needed, detail) = need(&cfg, dtype);
            engine::memory::fits("m", needed, &detail, free)
        };
        let e = fits(DType::F32, 800 << 20).unwrap_err().to_string();
        assert!(
            e.contains(
                "m has 0.13 billion parameters: 0.5 GiB in f32: about 1.0 GiB while loading"
            ) && e.contains("0.8 GiB free"),
            "{e}"
        );
        assert!(fits(DType::BF16, 800 << 20).is_ok());
        assert!(fits(DType::F32, 2 << 30).is_ok());
    }
}
