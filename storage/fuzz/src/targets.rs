//! The registry of fuzz targets: name, body and seeds of each.

use std::path::{Path, PathBuf};

use crate::{backup, engine, raft, raft_seeds, server};

/// Where a target's seeds come from.
enum Seeds {
    /// Built by the engine's own encoders (`strata_engine::fuzzing::seed_corpus`).
    Engine(engine::Target),
    /// Built by a function of this crate.
    Built(fn() -> Vec<Vec<u8>>),
    /// Only the committed files in `corpus/<name>/`.
    Committed,
}

/// One fuzz target. Its name is also the name of its libFuzzer binary and
/// of its corpus directory.
pub struct Target {
    pub name: &'static str,
    pub body: fn(&[u8]),
    seeds: Seeds,
}

/// Every target, grouped by the crate whose code it drives.
pub static TARGETS: [Target; 14] = [
    Target::engine("block", engine::block, engine::Target::Block),
    Target::engine("table", engine::table, engine::Target::Table),
    Target::engine("footer", engine::footer, engine::Target::Footer),
    Target::engine("bloom", engine::bloom, engine::Target::Bloom),
    Target::engine("wal", engine::wal, engine::Target::Wal),
    Target::engine(
        "manifest_edit",
        engine::manifest_edit,
        engine::Target::ManifestEdit,
    ),
    Target::engine(
        "manifest_log",
        engine::manifest_log,
        engine::Target::ManifestLog,
    ),
    Target::built(
        "record_decode",
        raft::record_decode,
        raft_seeds::record_seeds,
    ),
    Target::built(
        "proposal_decode",
        raft::proposal_decode,
        raft_seeds::proposal_seeds,
    ),
    Target::built(
        "message_decode",
        raft::message_decode,
        raft_seeds::message_seeds,
    ),
    Target::committed("rest_request", server::rest_request),
    Target::committed("grpc_request", server::grpc_request),
    Target::committed("raft_batch", server::raft_batch),
    Target::built("backup_read", backup::backup_read, backup::backup_seeds),
];

impl Target {
    const fn engine(name: &'static str, body: fn(&[u8]), target: engine::Target) -> Target {
        Target {
            name,
            body,
            seeds: Seeds::Engine(target),
        }
    }

    const fn built(name: &'static str, body: fn(&[u8]), seeds: fn() -> Vec<Vec<u8>>) -> Target {
        Target {
            name,
            body,
            seeds: Seeds::Built(seeds),
        }
    }

    const fn committed(name: &'static str, body: fn(&[u8])) -> Target {
        Target {
            name,
            body,
            seeds: Seeds::Committed,
        }
    }

    /// The target called `name`.
    pub fn named(name: &str) -> Option<&'static Target> {
        TARGETS.iter().find(|t| t.name == name)
    }

    /// This target's directory in the corpus: cargo-fuzz keeps what it finds
    /// there, and the seeds and regression inputs in it are committed.
    pub fn corpus_dir(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(self.name)
    }

    /// The valid inputs mutations start from, each with a name for reports:
    /// the built seeds, then the committed `seed-*` and `regress-*` files of
    /// the corpus directory (not what a local cargo-fuzz run added, so the
    /// smoke is the same on every machine).
    pub fn seeds(&self) -> Vec<(String, Vec<u8>)> {
        let built = match self.seeds {
            Seeds::Engine(target) => engine::seed_corpus()
                .into_iter()
                .filter(|(t, _)| *t == target)
                .map(|(_, bytes)| bytes)
                .collect(),
            Seeds::Built(seeds) => seeds(),
            Seeds::Committed => Vec::new(),
        };
        let mut seeds: Vec<(String, Vec<u8>)> = built
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| (format!("built seed {i}"), bytes))
            .collect();
        seeds.extend(committed_files(&self.corpus_dir()));
        seeds
    }
}

/// The `seed-*` and `regress-*` files of `dir`, sorted by name; none when
/// the directory does not exist.
fn committed_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.expect("corpus entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            (name.starts_with("seed-") || name.starts_with("regress-")).then(|| {
                (
                    format!("corpus file {name}"),
                    std::fs::read(&p).expect("corpus file"),
                )
            })
        })
        .collect();
    files.sort();
    files
}
