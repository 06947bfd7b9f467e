//! The `pondra` command line, for end-to-end tests that run it as a child process.

fn main() -> std::process::ExitCode {
    pondra_server::run_cli()
}
