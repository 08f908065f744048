//! The one checkpoint loader every model family uses: where a `--model` value's files come from
//! and what comes with them.
//!
//! - **The Hub** ([`resolve_hub`]): `config.json` first (so a family can refuse a model that
//!   will not fit before any weight moves), then `model.safetensors` or the index and every
//!   shard it names, then the tokenizer's files when the repository has them
//!   ([`TOKENIZER_FILES`]). Each file comes from the standard Hugging Face cache when it is
//!   there (`HF_HOME`), else is downloaded with a progress bar from `HF_ENDPOINT` (default
//!   huggingface.co, as hf-hub reads it). `HF_HUB_OFFLINE=1` never touches the network.
//! - **A folder**: used as it is ([`Checkpoint`] with its path).
//! - **Synthetic**: seeded random weights with a real model's shapes, written once into the
//!   course's cache ([`synthetic_dir`]). When the family's default model cannot be had (no
//!   network, nothing cached), the family's synthetic checkpoint stands in and the program says
//!   so in one line; any other repository that cannot be had is an error that says what to do.
//! - **GGUF**: a `.gguf` file ([`Source::Gguf`]), read by the engine's GGUF module
//!   (`crate::gguf`: the weights, and the tokenizer from the metadata); from the Hub, a
//!   repository with `.gguf` files and no safetensors weights gives one of them
//!   ([`gguf_from_hub`], chosen by [`pick_gguf`]'s rule).
//!
//! Every checkpoint folder is read the same way afterwards: [`crate::checkpoint`] lists its
//! safetensors files, [`crate::tokenizer::Tokenizer::from_dir`] its tokenizer,
//! [`chat_template`] its chat template and [`eos_ids`] the ids that end a generation.

use std::path::{Path, PathBuf};

use hf_hub::{Repo, RepoType};

use crate::error::{Error, Result};

/// The files beside the weights that turn text into ids and back, and chat messages into a
/// prompt; fetched when the repository has them.
pub const TOKENIZER_FILES: [&str; 3] = [
    "tokenizer.json",
    "tokenizer_config.json",
    "generation_config.json",
];

/// What `--model` named, once read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A checkpoint folder (`config.json` and safetensors weights).
    Dir(PathBuf),
    /// A Hub repository, at a pinned revision or its main branch.
    Hub {
        repo: String,
        revision: Option<String>,
    },
    /// A GGUF file.
    Gguf(PathBuf),
    /// One of the family's synthetic checkpoints, by its name (e.g. `synthetic-llama-tiny`).
    Synthetic(String),
}

impl Source {
    /// A folder, a `.gguf` file, or a Hub repository id (`owner/name`); `None` for anything
    /// else (the family's own names, e.g. `synthetic-…`, are the family's to read first).
    pub fn parse_path_or_repo(arg: &str) -> Option<Source> {
        let path = Path::new(arg);
        if path.is_dir() {
            return Some(Source::Dir(path.to_owned()));
        }
        if arg.ends_with(".gguf") {
            return Some(Source::Gguf(path.to_owned()));
        }
        let parts: Vec<&str> = arg.split('/').collect();
        let repo_like = parts.len() == 2
            && parts
                .iter()
                .all(|p| !p.is_empty() && !p.contains(char::is_whitespace))
            && !arg.starts_with('.');
        repo_like.then(|| Source::Hub {
            repo: arg.to_string(),
            revision: None,
        })
    }
}

/// A checkpoint folder ready to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub dir: PathBuf,
    /// What the learner asked for (a repository id, a folder, `synthetic-…`).
    pub name: String,
    /// Seeded random weights: real timings, meaningless outputs.
    pub synthetic: bool,
}

/// What a family gives [`resolve_hub`] about itself.
pub struct Family<'a> {
    /// The repository `--model` names by default: the only one the synthetic stand-in replaces.
    pub default_repo: &'a str,
    /// How the stand-in is named in the notice, e.g. `synthetic-smollm2-135m (its shapes, seeded
    /// random weights)`.
    pub stand_in: &'a str,
    /// Writes (once) and returns the stand-in.
    pub synthetic: &'a dyn Fn() -> Result<Checkpoint>,
    /// Looks at the repository's `config.json` before any weight is fetched (the memory check);
    /// an error refuses the model.
    pub check_config: &'a dyn Fn(&Path) -> Result<()>,
}

/// Whether `HF_HUB_OFFLINE` asks never to touch the network.
pub fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| {
        matches!(
            v.as_str(),
            "1" | "true" | "TRUE" | "True" | "yes" | "ON" | "on"
        )
    })
}

/// The checkpoint of Hub repository `repo`, from the cache or downloaded. Its default model's
/// stand-in replaces it, with `notice` told why, when the Hub cannot be reached and nothing is
/// cached; another repository is then an error that says what to do.
pub fn resolve_hub(
    repo: &str,
    revision: Option<&str>,
    family: &Family<'_>,
    notice: &mut dyn FnMut(&str),
) -> Result<Checkpoint> {
    match fetch_hub(repo, revision, family.check_config) {
        Ok(dir) => Ok(Checkpoint {
            dir,
            name: repo.to_string(),
            synthetic: false,
        }),
        Err(HubError::Refused(e)) => Err(e),
        Err(HubError::Unreachable(why)) if repo == family.default_repo => {
            notice(&stand_in_notice(repo, &why, family.stand_in));
            (family.synthetic)()
        }
        Err(HubError::Unreachable(why)) => Err(Error::Input(format!(
            "cannot get {repo} from the Hugging Face Hub ({why}) and it is not cached; on a machine that can reach the Hub, \
             run this once (it fills the cache), or download the repository's config.json, *.safetensors and tokenizer \
             files into a folder and pass --model FOLDER"
        ))),
    }
}

/// The one line said when `repo` cannot be had (`why`) and a synthetic checkpoint with its
/// shapes, `stand_in`, runs instead: the same words for every model that has one.
pub fn stand_in_notice(repo: &str, why: &str, stand_in: &str) -> String {
    format!(
        "note: cannot get {repo} from the Hugging Face Hub ({why}) and it is not cached; using {stand_in} instead: \
         timings are real, outputs are not"
    )
}

/// Why [`fetch_hub`] returned no folder.
#[derive(Debug)]
pub enum HubError {
    /// The Hub or the cache answered, and the checkpoint cannot be used.
    Refused(Error),
    /// Neither the Hub nor the cache has it (or the network is off).
    Unreachable(String),
}

/// The repository's config.json, then (once `check_config` accepts it) its weights and its
/// tokenizer's files ([`TOKENIZER_FILES`], each only if the repository has it). Returns the
/// snapshot folder that holds them.
pub fn fetch_hub(
    repo: &str,
    revision: Option<&str>,
    check_config: &dyn Fn(&Path) -> Result<()>,
) -> std::result::Result<PathBuf, HubError> {
    let hub_repo = match revision {
        Some(rev) => Repo::with_revision(repo.to_string(), RepoType::Model, rev.to_string()),
        None => Repo::new(repo.to_string(), RepoType::Model),
    };
    let cache = hf_hub::Cache::from_env().repo(hub_repo.clone());
    let api = match offline() {
        true => None,
        false => Some(
            hf_hub::api::sync::ApiBuilder::from_env()
                .with_progress(true)
                .build()
                .map_err(|e| HubError::Unreachable(e.to_string()))?
                .repo(hub_repo),
        ),
    };
    let get = |file: &str| -> std::result::Result<PathBuf, String> {
        if let Some(path) = cache.get(file) {
            return Ok(path);
        }
        match &api {
            None => Err("HF_HUB_OFFLINE is set".into()),
            Some(api) => api.get(file).map_err(|e| e.to_string()),
        }
    };
    let config_path = get("config.json").map_err(HubError::Unreachable)?;
    check_config(&config_path).map_err(HubError::Refused)?;
    if get("model.safetensors").is_err() {
        let index = get("model.safetensors.index.json").map_err(|why| {
            HubError::Unreachable(format!(
                "no model.safetensors nor an index of shards: {why}"
            ))
        })?;
        for shard in crate::checkpoint::shard_names(&index).map_err(HubError::Refused)? {
            get(&shard).map_err(|why| HubError::Unreachable(format!("{shard}: {why}")))?;
        }
    }
    for file in TOKENIZER_FILES {
        // A repository without a tokenizer still runs on token ids; what needs one says so.
        let _ = get(file);
    }
    config_path
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| HubError::Unreachable(format!("{} has no folder", config_path.display())))
}

/// The folder `name` in the course's cache ([`crate::cache_dir`]), written by `write` (in one
/// step, `output::write_dir`) unless a finished one (holding `model.safetensors`)
/// is there.
pub fn synthetic_dir(name: &str, write: impl FnOnce(&Path) -> Result<()>) -> Result<PathBuf> {
    let dir = crate::cache_dir().join(name);
    if !dir.join("model.safetensors").is_file() {
        output::write_dir(&dir, write)?;
    }
    Ok(dir)
}

/// The file `file` in the folder `name` of the course's cache, written by `write` into a
/// temporary folder renamed into place in one step (`output::write_dir`) unless a finished one
/// is there: a synthetic checkpoint that is one file (a GGUF) rather than a folder of them.
pub fn synthetic_file(
    name: &str,
    file: &str,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let dir = crate::cache_dir().join(name);
    let path = dir.join(file);
    if !path.is_file() {
        output::write_dir(&dir, |tmp| write(&tmp.join(file)))?;
    }
    match path.is_file() {
        true => Ok(path),
        // A folder of that name without the file: left by something else, never by us.
        false => Err(Error::Input(format!(
            "{} exists without {file}; delete the folder and run again",
            dir.display()
        ))),
    }
}

/// Which of a repository's `.gguf` files to use: `wanted` when given (it must be one of them),
/// else the only one, else the only one of type Q8_0 (its name says `Q8_0`: llama.cpp's
/// near-lossless preset, the one the course's quantized rows start from), else none: an error
/// that lists them and says to pick one with `--file`.
pub fn pick_gguf(repo: &str, files: &[String], wanted: Option<&str>) -> Result<String> {
    let ggufs: Vec<&String> = files.iter().filter(|f| f.ends_with(".gguf")).collect();
    let list = || {
        ggufs
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(wanted) = wanted {
        return match ggufs.iter().any(|f| f.as_str() == wanted) {
            true => Ok(wanted.to_string()),
            false => Err(Error::Input(format!(
                "--file {wanted}: {repo} has no such file; its GGUF files are: {}",
                list()
            ))),
        };
    }
    if let [only] = ggufs.as_slice() {
        return Ok(only.to_string());
    }
    let q8: Vec<&&String> = ggufs
        .iter()
        .filter(|f| f.to_ascii_uppercase().contains("Q8_0"))
        .collect();
    if let [only] = q8.as_slice() {
        return Ok(only.to_string());
    }
    Err(Error::Input(format!(
        "{repo} has {} GGUF files and {}; pick one with --file NAME: {}",
        ggufs.len(),
        match q8.len() {
            0 => "none of them is Q8_0".to_string(),
            n => format!("{n} of them are Q8_0"),
        },
        list()
    )))
}

/// What the Hub (or the cache) says of a repository that may hold GGUF files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubGguf {
    /// The file to run, in the Hugging Face cache.
    File(PathBuf),
    /// A safetensors repository, or one without `.gguf` files.
    NotGguf,
    /// Neither the Hub nor the cache could say (why).
    Unreachable(String),
}

/// The GGUF file of Hub repository `repo`, when it is a GGUF repository: `file` when given
/// (from the cache, or downloaded), else the one [`pick_gguf`] picks of the repository's files,
/// if it has `.gguf` files and no safetensors weights. `None` for a safetensors repository, and
/// when the Hub cannot be asked and nothing is cached (offline without `file`): the safetensors
/// path then says what is missing. [`find_gguf_on_hub`] tells those two apart.
pub fn gguf_from_hub(
    repo: &str,
    revision: Option<&str>,
    file: Option<&str>,
) -> Result<Option<PathBuf>> {
    match find_gguf_on_hub(repo, revision, file)? {
        HubGguf::File(path) => Ok(Some(path)),
        HubGguf::NotGguf => Ok(None),
        HubGguf::Unreachable(why) => match file {
            Some(f) => Err(Error::Input(format!(
                "cannot get {f} of {repo} from the Hugging Face Hub ({why}) and it is not cached"
            ))),
            None => Ok(None),
        },
    }
}

/// [`gguf_from_hub`]'s finding: the file, a repository that holds none, or the Hub out of
/// reach with nothing cached. Offline (or with the Hub out of reach), a repository downloaded
/// before is read from the cache: `file`, else the one [`pick_gguf`] picks of its cached
/// `.gguf` files.
pub fn find_gguf_on_hub(repo: &str, revision: Option<&str>, file: Option<&str>) -> Result<HubGguf> {
    let hub_repo = match revision {
        Some(rev) => Repo::with_revision(repo.to_string(), RepoType::Model, rev.to_string()),
        None => Repo::new(repo.to_string(), RepoType::Model),
    };
    let cache = hf_hub::Cache::from_env();
    if let Some(path) = file.and_then(|f| cache.repo(hub_repo.clone()).get(f)) {
        return Ok(HubGguf::File(path));
    }
    let from_cache = |why: String| -> Result<HubGguf> {
        if file.is_none() {
            let cached = cached_ggufs(&cache, &hub_repo);
            if !cached.is_empty() {
                let name = pick_gguf(repo, &cached, None)?;
                if let Some(path) = cache.repo(hub_repo.clone()).get(&name) {
                    return Ok(HubGguf::File(path));
                }
            }
        }
        Ok(HubGguf::Unreachable(why))
    };
    if offline() {
        return from_cache("HF_HUB_OFFLINE is set".into());
    }
    let api = match hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(true)
        .build()
    {
        Ok(api) => api.repo(hub_repo.clone()),
        Err(e) => return from_cache(e.to_string()),
    };
    let name = match file {
        Some(f) => f.to_string(),
        None => {
            let info = match api.info() {
                Ok(info) => info,
                Err(e) => return from_cache(e.to_string()),
            };
            let files: Vec<String> = info.siblings.into_iter().map(|s| s.rfilename).collect();
            let safetensors = files
                .iter()
                .any(|f| f == "model.safetensors" || f == "model.safetensors.index.json");
            if safetensors || !files.iter().any(|f| f.ends_with(".gguf")) {
                return Ok(HubGguf::NotGguf);
            }
            pick_gguf(repo, &files, None)?
        }
    };
    match api.get(&name) {
        Ok(path) => Ok(HubGguf::File(path)),
        Err(e) => Ok(HubGguf::Unreachable(e.to_string())),
    }
}

/// The `.gguf` files of `repo`'s snapshot in the Hugging Face cache (the revision its ref
/// names, as hf-hub lays the cache out: `models--owner--name/refs/REVISION` holds the commit,
/// `snapshots/COMMIT/` the files).
fn cached_ggufs(cache: &hf_hub::Cache, repo: &Repo) -> Vec<String> {
    let dir = cache.path().join(repo.folder_name());
    let Ok(commit) = std::fs::read_to_string(dir.join("refs").join(repo.revision())) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir.join("snapshots").join(commit.trim())) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".gguf"))
        .collect();
    names.sort();
    names
}

/// A checkpoint's chat template and the special tokens it refers to, from its
/// `tokenizer_config.json` (as transformers' `apply_chat_template` reads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTemplate {
    /// The Jinja source.
    pub source: String,
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
    /// The file it came from, for error messages.
    pub path: PathBuf,
}

/// The chat template of checkpoint folder `dir`, when its `tokenizer_config.json` has one. A
/// list of named templates gives the one named `default`.
pub fn chat_template(dir: &Path) -> Result<Option<ChatTemplate>> {
    let path = dir.join("tokenizer_config.json");
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let bad = |message: String| Error::Tokenizer {
        path: path.clone(),
        message,
    };
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    let source = match json.get("chat_template") {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(named)) => named
            .iter()
            .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
            .and_then(|t| t.get("template"))
            .and_then(|t| t.as_str())
            .map(str::to_string)
            .ok_or_else(|| {
                bad("chat_template is a list with no template named \"default\"".into())
            })?,
        Some(_) => {
            return Err(bad(
                "chat_template must be a string or a list of {name, template}".into(),
            ))
        }
    };
    // A special token is written as its text, or as an added-token object with `content`.
    let token = |key: &str| match json.get(key) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(v) => v
            .get("content")
            .and_then(|c| c.as_str())
            .map(str::to_string),
        None => None,
    };
    Ok(Some(ChatTemplate {
        source,
        bos_token: token("bos_token"),
        eos_token: token("eos_token"),
        path,
    }))
}

/// The ids that end a generation: `eos_token_id` of `config.json` and of
/// `generation_config.json` (a number or a list, as Llama 3's several end tokens), each once.
pub fn eos_ids(dir: &Path) -> Result<Vec<u32>> {
    let mut ids = Vec::new();
    for file in ["config.json", "generation_config.json"] {
        let path = dir.join(file);
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Config {
            path: path.clone(),
            message: format!("not JSON: {e}"),
        })?;
        let found: Vec<u64> = match json.get("eos_token_id") {
            Some(serde_json::Value::Number(n)) => n.as_u64().into_iter().collect(),
            Some(serde_json::Value::Array(list)) => {
                list.iter().filter_map(|v| v.as_u64()).collect()
            }
            _ => Vec::new(),
        };
        for id in found {
            let id = u32::try_from(id).map_err(|_| Error::Config {
                path: path.clone(),
                message: format!("eos_token_id {id} is not a token id"),
            })?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_gguf_files_and_repository_ids_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        assert_eq!(
            Source::parse_path_or_repo(d),
            Some(Source::Dir(dir.path().to_owned()))
        );
        assert_eq!(
            Source::parse_path_or_repo("m.Q8_0.gguf"),
            Some(Source::Gguf("m.Q8_0.gguf".into()))
        );
        assert_eq!(
            Source::parse_path_or_repo("HuggingFaceTB/SmolLM2-135M"),
            Some(Source::Hub {
                repo: "HuggingFaceTB/SmolLM2-135M".into(),
                revision: None
            })
        );
        for not_one in ["no such folder", "a/b/c", "./x", "/x"] {
            assert_eq!(Source::parse_path_or_repo(not_one), None, "{not_one}");
        }
    }

    #[test]
    fn a_gguf_is_picked_by_name_else_alone_else_as_the_one_q8_0() {
        let files =
            |names: &[&str]| -> Vec<String> { names.iter().map(|s| s.to_string()).collect() };
        let several = files(&["README.md", "m-Q4_0.gguf", "m-q8_0.gguf", "m-F16.gguf"]);
        assert_eq!(pick_gguf("o/r", &several, None).unwrap(), "m-q8_0.gguf");
        assert_eq!(
            pick_gguf("o/r", &several, Some("m-F16.gguf")).unwrap(),
            "m-F16.gguf"
        );
        let e = pick_gguf("o/r", &several, Some("m-Q2_K.gguf"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--file m-Q2_K.gguf") && e.contains("m-Q4_0.gguf, m-q8_0.gguf, m-F16.gguf"),
            "{e}"
        );
        assert_eq!(
            pick_gguf("o/r", &files(&["config.json", "Bonsai-8B.gguf"]), None).unwrap(),
            "Bonsai-8B.gguf"
        );
        let e = pick_gguf("o/r", &files(&["a-Q4_0.gguf", "a-Q1_0.gguf"]), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("2 GGUF files and none of them is Q8_0")
                && e.contains("--file NAME: a-Q4_0.gguf, a-Q1_0.gguf"),
            "{e}"
        );
        let e = pick_gguf("o/r", &files(&["a-Q8_0.gguf", "b-Q8_0.gguf"]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 of them are Q8_0"), "{e}");
    }

    #[test]
    fn chat_templates_and_end_ids_are_read_as_transformers_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(chat_template(dir.path()).unwrap(), None);
        std::fs::write(
            dir.path().join("tokenizer_config.json"),
            r#"{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}],
                "bos_token": {"content": "<s>", "special": true}, "eos_token": "</s>"}"#,
        )
        .unwrap();
        let t = chat_template(dir.path()).unwrap().unwrap();
        assert_eq!(
            (
                t.source.as_str(),
                t.bos_token.as_deref(),
                t.eos_token.as_deref()
            ),
            ("D", Some("<s>"), Some("</s>"))
        );
        std::fs::write(
            dir.path().join("tokenizer_config.json"),
            "{\"chat_template\": 3",
        )
        .unwrap();
        let e = chat_template(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("tokenizer_config.json") && e.contains("line 1"),
            "{e}"
        );

        std::fs::write(dir.path().join("config.json"), r#"{"eos_token_id": 2}"#).unwrap();
        std::fs::write(
            dir.path().join("generation_config.json"),
            r#"{"eos_token_id": [7, 2, 9]}"#,
        )
        .unwrap();
        assert_eq!(eos_ids(dir.path()).unwrap(), [2, 7, 9]);
    }

    #[test]
    fn offline_a_missing_repository_is_unreachable_and_its_stand_in_is_said() {
        let hub = tempfile::tempdir().unwrap();
        let stand_in_dir = tempfile::tempdir().unwrap();
        // No other test of this crate reads these two variables.
        std::env::set_var("HF_HUB_OFFLINE", "1");
        std::env::set_var("HF_HOME", hub.path());
        let stand_in = || -> Result<Checkpoint> {
            Ok(Checkpoint {
                dir: stand_in_dir.path().to_owned(),
                name: "synthetic-x".into(),
                synthetic: true,
            })
        };
        let family = Family {
            default_repo: "org/default",
            stand_in: "synthetic-x (its shapes)",
            synthetic: &stand_in,
            check_config: &|_| Ok(()),
        };
        let mut said = Vec::new();
        let ckpt = resolve_hub("org/default", None, &family, &mut |m| {
            said.push(m.to_string())
        })
        .unwrap();
        assert!(ckpt.synthetic && ckpt.dir == stand_in_dir.path());
        assert_eq!(said.len(), 1);
        assert!(
            said[0].contains("org/default") && said[0].contains("HF_HUB_OFFLINE is set"),
            "{}",
            said[0]
        );
        let e = resolve_hub("org/other", None, &family, &mut |_| panic!("no notice"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("org/other") && e.contains("--model FOLDER"),
            "{e}"
        );

        // A GGUF repository downloaded before is read from the cache offline, by the same rule
        // as online; one never downloaded is out of reach, said apart from "not a GGUF one".
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo_dir = hub.path().join("hub/models--org--ggufs");
        std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
        std::fs::write(repo_dir.join("refs/main"), commit).unwrap();
        let snapshot = repo_dir.join("snapshots").join(commit);
        std::fs::create_dir_all(&snapshot).unwrap();
        for f in ["m-Q4_0.gguf", "m-Q8_0.gguf", "README.md"] {
            std::fs::write(snapshot.join(f), "x").unwrap();
        }
        assert_eq!(
            find_gguf_on_hub("org/ggufs", None, None).unwrap(),
            HubGguf::File(snapshot.join("m-Q8_0.gguf"))
        );
        assert_eq!(
            gguf_from_hub("org/ggufs", None, Some("m-Q4_0.gguf")).unwrap(),
            Some(snapshot.join("m-Q4_0.gguf"))
        );
        assert_eq!(
            find_gguf_on_hub("org/never", None, None).unwrap(),
            HubGguf::Unreachable("HF_HUB_OFFLINE is set".into())
        );
        assert_eq!(gguf_from_hub("org/never", None, None).unwrap(), None);
        let e = gguf_from_hub("org/never", None, Some("m.gguf"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot get m.gguf of org/never") && e.contains("HF_HUB_OFFLINE"),
            "{e}"
        );
    }
}
