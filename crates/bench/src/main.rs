//! `bench`: the same load client as `course bench`, as a standalone binary.

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(name = "bench", version)]
struct Cli {
    #[command(flatten)]
    args: bench::cli::BenchArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match bench::cli::run(cli.args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
