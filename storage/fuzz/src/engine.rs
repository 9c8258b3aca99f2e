//! strata-engine's fuzz target bodies: every decoder that reads bytes from
//! disk. They need the engine's private types, so they live in
//! `strata_engine::fuzzing`, together with their seeds.

pub use strata_engine::fuzzing::{
    Target, block, bloom, footer, manifest_edit, manifest_log, seed_corpus, table, wal,
};
