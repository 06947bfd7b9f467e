//! The `pondra` command line, for end-to-end tests that run it as a child process. It uses the
//! product's allocator, so that what the tests measure of its memory is the product's.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    pondra_server::run_cli()
}
