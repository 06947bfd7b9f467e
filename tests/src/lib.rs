//! End-to-end tests of Pondra across crates; the tests live in `tests/`.
