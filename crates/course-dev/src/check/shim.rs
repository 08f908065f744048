//! The stand-in for cargo that `course-dev check` gives `course check` and `course run` on a
//! temporary course root.
//!
//! `course` builds, tests and runs an exercise with `cargo build|test|run -p exercise-N` in the
//! course root. A temporary root is no cargo workspace, and building there would compile
//! everything again; so the dev check points `CARGO` at a link named `cargo` to this binary,
//! `course-dev`, which, started under that name with [`CHECKOUT_ENV`] set, does the same thing in the
//! real checkout, on the real package (exercise-N, or solution-N when the root holds the
//! solutions): `build` is the workspace build scripts/test.sh made (a no-op by then), `test` runs
//! the package's own tests with cargo-nextest (a `cargo test -p` would resolve features for the
//! one package and compile gpt2 and its dependencies again), and `run` starts the built binary on
//! the copy's exercise folder. What `course` grades is the copy's own files.

use anyhow::{Context, Result};
use course_model::manifest::{Manifest, MANIFEST_PATH};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The checkout whose packages the stand-in builds, tests and runs. Set only for `course check`
/// and `course run` under the dev check; the stand-in removes it before it starts anything.
pub const CHECKOUT_ENV: &str = "COURSE_DEV_CARGO_CHECKOUT";
/// Which package an `exercise-N` stands for: `exercise` or `solution` ([`Packages`]).
pub const PACKAGES_ENV: &str = "COURSE_DEV_CARGO_PACKAGES";
/// The cargo the stand-in runs (its own `CARGO` names the stand-in).
pub const REAL_CARGO_ENV: &str = "COURSE_DEV_CARGO_REAL";

/// The name of the link the dev check puts on `CARGO`.
pub const NAME: &str = "cargo";

/// What a temporary root's exercise folders hold, so which package its `exercise-N` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packages {
    /// The untouched exercises: `exercise-N` itself.
    Exercises,
    /// The solutions: the `solution_dir`'s package.
    Solutions,
}

impl Packages {
    pub fn env_value(self) -> &'static str {
        match self {
            Packages::Exercises => "exercise",
            Packages::Solutions => "solution",
        }
    }

    fn from_env_value(value: &str) -> Option<Packages> {
        [Packages::Exercises, Packages::Solutions]
            .into_iter()
            .find(|p| p.env_value() == value)
    }
}

/// What one `cargo` command line of `course` becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `cargo build -p P`: the whole workspace with every target, the build test.sh makes.
    Build,
    /// `cargo test -p P`: P's own tests, from that build.
    Test { package: String },
    /// `cargo run -p P -- ARGS`: the built binary, on the copy's exercise folder.
    Run { package: String, args: Vec<String> },
}

/// Reads `cargo SUBCOMMAND -p PACKAGE [--release] [-- ARGS]` (what `crate::cargo::command`
/// writes for a CPU build); anything else is refused, saying what the stand-in takes.
pub fn plan(args: &[String]) -> Result<Plan, String> {
    const TAKES: &str =
        "the dev check's stand-in for cargo takes `build|test|run -p PACKAGE [-- ARGS]`";
    let Some((subcommand, rest)) = args.split_first() else {
        return Err(format!("{TAKES}, and was given nothing"));
    };
    let mut package = None;
    let mut program_args = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        match rest[i].as_str() {
            "-p" | "--package" => {
                package = Some(rest.get(i + 1).ok_or_else(|| format!("{TAKES}: `{}` needs a package name", rest[i]))?.clone());
                i += 1;
            }
            // Only a `cuda` build passes it, and then `--features cuda` too, refused below.
            "--release" => {}
            "--" => {
                program_args = rest[i + 1..].to_vec();
                break;
            }
            other => {
                return Err(format!(
                    "{TAKES}; `{other}` is not one of them (the dev check builds for the CPU: unset COURSE_FEATURES)"
                ))
            }
        }
        i += 1;
    }
    let package =
        package.ok_or_else(|| format!("{TAKES}: no -p PACKAGE in `cargo {}`", args.join(" ")))?;
    match subcommand.as_str() {
        "build" if program_args.is_empty() => Ok(Plan::Build),
        "test" if program_args.is_empty() => Ok(Plan::Test { package }),
        "run" => Ok(Plan::Run {
            package,
            args: program_args,
        }),
        other => Err(format!(
            "{TAKES}; `cargo {other}` with arguments after `--` is not one of them"
        )),
    }
}

/// The package of `dir` in `checkout` (`solutions/exercise-3` holds `solution-3`).
pub fn package_in(checkout: &Path, dir: &str) -> Result<String> {
    let path = checkout.join(dir).join("Cargo.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}: restore it from git", path.display()))?;
    package_name(&text).with_context(|| format!("{} has no [package] name", path.display()))
}

/// Where each planned step runs: the checkout, the real cargo, the folder of the built binaries,
/// and the temporary root `course` started the stand-in in.
pub struct Places {
    pub checkout: PathBuf,
    pub cargo: OsString,
    pub bin: PathBuf,
    pub root: PathBuf,
}

/// The command a plan runs. `package` is the root's `exercise-N`; for the solutions it becomes
/// the solution's package, and `run` gets the root's folder of that exercise.
pub fn command(plan: &Plan, packages: Packages, places: &Places) -> Result<Command> {
    let actual = |package: &str| -> Result<String> {
        let manifest = Manifest::load(&places.root.join(MANIFEST_PATH))?;
        let exercise = manifest
            .exercises
            .iter()
            .find(|e| e.package == package)
            .with_context(|| {
                format!(
                    "{} lists no exercise with package {package}",
                    places.root.join(MANIFEST_PATH).display()
                )
            })?;
        match packages {
            Packages::Exercises => Ok(exercise.package.clone()),
            Packages::Solutions => package_in(&places.checkout, &exercise.solution_dir),
        }
    };
    let mut command = match plan {
        Plan::Build => {
            let mut c = Command::new(&places.cargo);
            c.args(["build", "--workspace", "--all-targets"]);
            c
        }
        Plan::Test { package } => {
            let mut c = Command::new(&places.cargo);
            c.args(["nextest", "run", "--workspace", "--no-fail-fast", "-E"])
                .arg(format!("package({})", actual(package)?));
            c
        }
        Plan::Run { package, args } => {
            let manifest = Manifest::load(&places.root.join(MANIFEST_PATH))?;
            let dir = manifest
                .exercises
                .iter()
                .find(|e| &e.package == package)
                .map(|e| places.root.join(&e.dir));
            let dir = dir.with_context(|| {
                format!(
                    "{} lists no exercise with package {package}",
                    places.root.join(MANIFEST_PATH).display()
                )
            })?;
            let mut c = Command::new(places.bin.join(format!(
                "{}{}",
                actual(package)?,
                std::env::consts::EXE_SUFFIX
            )));
            c.arg("--exercise-dir").arg(dir).args(args);
            c
        }
    };
    command.current_dir(&places.checkout);
    // What runs from here is ordinary again: a `course` it starts is `course`, and cargo finds itself.
    for key in [CHECKOUT_ENV, PACKAGES_ENV, REAL_CARGO_ENV, "CARGO"] {
        command.env_remove(key);
    }
    Ok(command)
}

/// The `name` of a Cargo.toml's `[package]` table (an unreadable file declares none).
fn package_name(manifest: &str) -> Option<String> {
    let table: toml::Table = manifest.parse().ok()?;
    let name = table.get("package")?.get("name")?.as_str()?;
    Some(name.to_string()).filter(|n| !n.is_empty())
}

/// `Some(exit code)` when this process is the stand-in (started as `cargo` by the dev check),
/// after doing what it was asked; `None` for an ordinary `course`.
pub fn intercept() -> Option<ExitCode> {
    let argv0 = std::env::args_os().next()?;
    let name = Path::new(&argv0).file_stem()?.to_str()?.to_string();
    let checkout = std::env::var_os(CHECKOUT_ENV)?;
    if name != NAME {
        return None;
    }
    Some(match stand_in(PathBuf::from(checkout)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("course-dev check's stand-in for cargo: {e:#}");
            ExitCode::from(2)
        }
    })
}

fn stand_in(checkout: PathBuf) -> Result<ExitCode> {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string()
                .map_err(|a| anyhow::anyhow!("the argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_>>()?;
    let plan = plan(&args).map_err(anyhow::Error::msg)?;
    let packages = std::env::var(PACKAGES_ENV)
        .ok()
        .and_then(|v| Packages::from_env_value(&v))
        .unwrap_or(Packages::Exercises);
    let exe = std::env::current_exe().context("cannot tell where the course-dev binary is")?;
    let places = Places {
        checkout,
        cargo: std::env::var_os(REAL_CARGO_ENV).unwrap_or_else(|| "cargo".into()),
        bin: exe.parent().map(Path::to_path_buf).unwrap_or_default(),
        root: std::env::current_dir()
            .context("cannot tell which folder `course` started cargo in")?,
    };
    let mut command = command(&plan, packages, &places)?;
    let status = command
        .status()
        .with_context(|| format!("cannot start {:?}", command.get_program()))?;
    if !status.success() && plan == Plan::Build {
        eprintln!(
            "(the stand-in ran `cargo build --workspace --all-targets` in {})",
            places.checkout.display()
        );
    }
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn course_s_cargo_command_lines_are_understood() {
        assert_eq!(plan(&words("build -p exercise-2")), Ok(Plan::Build));
        assert_eq!(
            plan(&words("test -p exercise-2")),
            Ok(Plan::Test {
                package: "exercise-2".into()
            })
        );
        assert_eq!(
            plan(&words("test --package exercise-4")),
            Ok(Plan::Test {
                package: "exercise-4".into()
            })
        );
        assert_eq!(
            plan(&words("run -p exercise-3 -- --model synthetic -p 3")),
            Ok(Plan::Run {
                package: "exercise-3".into(),
                args: words("--model synthetic -p 3")
            }),
            "what follows -- is the program's, even a -p"
        );
        assert_eq!(
            plan(&words("run --release -p exercise-3")),
            Ok(Plan::Run {
                package: "exercise-3".into(),
                args: vec![]
            })
        );
    }

    #[test]
    fn anything_else_is_refused_saying_what_it_takes() {
        for line in [
            "",
            "build",
            "build -p",
            "build -p exercise-2 --features cuda",
            "bench -p exercise-2",
            "test -p exercise-2 -- x",
        ] {
            let err = plan(&words(line)).unwrap_err();
            assert!(
                err.contains("takes `build|test|run -p PACKAGE [-- ARGS]`"),
                "{line}: {err}"
            );
        }
        assert!(plan(&words("build -p exercise-5 --features cuda"))
            .unwrap_err()
            .contains("unset COURSE_FEATURES"));
    }

    #[test]
    fn a_package_name_is_read_from_its_cargo_toml() {
        let text = "[package]\nname = \"solution-3\"\nversion.workspace = true\n\n[dependencies]\nname = \"nope\"\n";
        assert_eq!(package_name(text).as_deref(), Some("solution-3"));
        assert_eq!(package_name("[workspace]\nname = \"x\"\n"), None);
    }

    /// A checkout with solution 3's Cargo.toml, and a temporary root whose manifest lists exercise 3.
    fn places() -> (tempfile::TempDir, Places) {
        let dir = tempfile::tempdir().unwrap();
        let checkout = dir.path().join("checkout");
        std::fs::create_dir_all(checkout.join("solutions/exercise-3")).unwrap();
        std::fs::write(
            checkout.join("solutions/exercise-3/Cargo.toml"),
            "[package]\nname = \"solution-3\"\n",
        )
        .unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("exercises")).unwrap();
        let real = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(MANIFEST_PATH);
        std::fs::copy(real, root.join(MANIFEST_PATH)).unwrap();
        let places = Places {
            checkout,
            cargo: "/usr/bin/cargo".into(),
            bin: dir.path().join("bin"),
            root,
        };
        (dir, places)
    }

    #[test]
    fn each_plan_runs_in_the_checkout_on_the_package_the_root_stands_for() {
        let (_dir, places) = places();
        let build = command(&Plan::Build, Packages::Solutions, &places).unwrap();
        assert_eq!(build.get_program(), "/usr/bin/cargo");
        assert_eq!(args(&build), words("build --workspace --all-targets"));
        assert_eq!(build.get_current_dir(), Some(places.checkout.as_path()));

        let test = Plan::Test {
            package: "exercise-3".into(),
        };
        assert_eq!(
            args(&command(&test, Packages::Exercises, &places).unwrap()),
            words("nextest run --workspace --no-fail-fast -E package(exercise-3)")
        );
        assert_eq!(
            args(&command(&test, Packages::Solutions, &places).unwrap()),
            words("nextest run --workspace --no-fail-fast -E package(solution-3)")
        );

        let run = Plan::Run {
            package: "exercise-3".into(),
            args: words("--model synthetic"),
        };
        let c = command(&run, Packages::Solutions, &places).unwrap();
        assert_eq!(
            Path::new(c.get_program()),
            places
                .bin
                .join(format!("solution-3{}", std::env::consts::EXE_SUFFIX))
        );
        let folder = places
            .root
            .join("exercises/exercise-3")
            .display()
            .to_string();
        assert_eq!(
            args(&c),
            ["--exercise-dir", folder.as_str(), "--model", "synthetic"]
        );
        // The stand-in's own settings do not reach what it starts.
        let removed: Vec<String> = c
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for key in [CHECKOUT_ENV, PACKAGES_ENV, REAL_CARGO_ENV, "CARGO"] {
            assert!(
                removed.iter().any(|k| k == key),
                "{key} is removed: {removed:?}"
            );
        }
    }

    #[test]
    fn an_exercise_the_root_does_not_list_is_an_error_naming_the_manifest() {
        let (_dir, places) = places();
        let err = command(
            &Plan::Test {
                package: "exercise-9".into(),
            },
            Packages::Solutions,
            &places,
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("lists no exercise with package exercise-9"),
            "{err:#}"
        );
    }

    #[test]
    fn the_packages_setting_reads_back() {
        for p in [Packages::Exercises, Packages::Solutions] {
            assert_eq!(Packages::from_env_value(p.env_value()), Some(p));
        }
        assert_eq!(Packages::from_env_value("other"), None);
    }
}
