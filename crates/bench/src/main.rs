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
    // `bench ... | head`: the reader leaving ends the program quietly, status 0.
    output::pipe::end_quietly_when_closed();
    let cli = Cli::parse();
    match bench::cli::run(cli.args) {
        Ok(code) => code,
        Err(e) if output::pipe::is_broken_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
