//! Generates the gRPC types from `proto/strata/v1` and a file descriptor set
//! for server reflection.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("PROTOC").is_none() {
        let protoc = protoc_bin_vendored::protoc_bin_path()?;
        // SAFETY: build scripts are single-threaded; nothing else reads the
        // environment concurrently.
        unsafe { std::env::set_var("PROTOC", protoc) };
    }
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let files = ["kv.proto", "cluster.proto", "raft.proto"].map(|f| root.join("strata/v1").join(f));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("strata_descriptor.bin"))
        .bytes(".strata.v1")
        .compile_protos(&files, &[root])?;
    Ok(())
}
