//! The `agentlog` command: a thin layer over the library. See `agentlog --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
