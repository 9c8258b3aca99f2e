//! Every fuzz target of the workspace: its body (a function of arbitrary
//! bytes that must not panic), and the valid inputs its mutations start
//! from. [`TARGETS`] lists them; the stable smoke (`tests/fuzz_smoke.rs`) and the
//! libFuzzer binaries (`fuzz_targets/<name>.rs`) both run exactly these
//! bodies.

#![forbid(unsafe_code)]

pub mod backup;
pub mod engine;
pub mod raft;
pub mod raft_seeds;
pub mod server;
mod targets;

pub use targets::{TARGETS, Target};
