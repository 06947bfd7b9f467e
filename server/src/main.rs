//! `pondra`: the SQL shell, `pondra sql`, and more to come.

use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    pondra_server::run_cli()
}
