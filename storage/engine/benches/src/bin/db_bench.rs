//! db_bench-style comparison of Strata with fjall and RocksDB in one run:
//! fillseq, fillrandom, overwrite, readrandom, readseq, seekrandom over
//! `--num` 16-byte keys with 100-byte values.
//!
//!   db_bench [--num N] [--reads N] [--engines strata,fjall,rocksdb] [--dir D]
//!
//! RocksDB needs `--features rocksdb`. Amplification: write = bytes this
//! process caused to be written (`/proc/self/io` write_bytes, WAL
//! included) per user byte; space = directory size per logical byte.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use strata_engine_bench::engines::{Fjall, Kv, Strata};
use strata_engine_bench::workload::{
    KEY_BYTES, Outcome, VALUE_BYTES, Values, fill, permutation, read_random, read_seq, seek_random,
};

fn open(engine: &str, dir: &Path) -> Result<Box<dyn Kv>> {
    Ok(match engine {
        "strata" => Box::new(Strata::open(dir)?),
        "fjall" => Box::new(Fjall::open(dir)?),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(strata_engine_bench::engines::Rocks::open(dir)?),
        other => bail!("unknown or not compiled-in engine {other}"),
    })
}

fn write_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("write_bytes: ").map(str::to_string))
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

struct Args {
    num: u64,
    reads: u64,
    engines: Vec<String>,
    dir: PathBuf,
}

fn args() -> Result<Args> {
    let mut a = Args {
        num: 1_000_000,
        reads: 1_000_000,
        engines: vec!["strata".into(), "fjall".into()],
        dir: std::env::temp_dir().join("strata-db-bench"),
    };
    if cfg!(feature = "rocksdb") {
        a.engines.push("rocksdb".into());
    }
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--num" => a.num = v.parse()?,
            "--reads" => a.reads = v.parse()?,
            "--engines" => a.engines = v.split(',').map(str::to_string).collect(),
            "--dir" => a.dir = v.into(),
            _ => bail!("unknown flag {flag}"),
        }
    }
    Ok(a)
}

fn run_engine(engine: &str, a: &Args, values: &Values) -> Result<Vec<Outcome>> {
    let mut out = Vec::new();
    let logical = a.num * (KEY_BYTES + VALUE_BYTES) as u64;
    let seq_dir = a.dir.join(format!("{engine}-seq"));
    let _ = std::fs::remove_dir_all(&seq_dir);
    {
        let db = open(engine, &seq_dir)?;
        let order: Vec<u64> = (0..a.num).collect();
        out.push(fill(db.as_ref(), "fillseq", &order, values)?);
    }
    let _ = std::fs::remove_dir_all(&seq_dir);
    let dir = a.dir.join(engine);
    let _ = std::fs::remove_dir_all(&dir);
    let db = open(engine, &dir)?;
    let before = write_bytes();
    out.push(fill(
        db.as_ref(),
        "fillrandom",
        &permutation(a.num, 1),
        values,
    )?);
    out.push(fill(
        db.as_ref(),
        "overwrite",
        &permutation(a.num, 2),
        values,
    )?);
    db.settle()?;
    // Give background compaction a moment, as db_bench's separate runs do.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let written = write_bytes() - before;
    out.push(read_random(db.as_ref(), a.num, a.reads, 3)?);
    out.push(read_seq(db.as_ref(), a.num)?);
    out.push(seek_random(db.as_ref(), a.num, a.reads / 4, 4)?);
    println!(
        "{engine}: write-amp {:.2} (fillrandom+overwrite, {} MiB written for {} MiB of user data), space-amp {:.2} ({} MiB on disk for {} MiB live); {}",
        written as f64 / (2 * logical) as f64,
        written >> 20,
        (2 * logical) >> 20,
        dir_bytes(&dir) as f64 / logical as f64,
        dir_bytes(&dir) >> 20,
        logical >> 20,
        db.report()
    );
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

fn main() -> Result<()> {
    let a = args()?;
    std::fs::create_dir_all(&a.dir)?;
    let values = Values::new(9);
    let mut table: Vec<(String, Vec<Outcome>)> = Vec::new();
    for engine in &a.engines {
        eprintln!("running {engine} ...");
        table.push((engine.clone(), run_engine(engine, &a, &values)?));
    }
    println!(
        "\n{} keys of {KEY_BYTES} B, values of {VALUE_BYTES} B, {} reads\n",
        a.num, a.reads
    );
    print!("{:<12}", "benchmark");
    for (engine, _) in &table {
        print!(" | {engine:>10} ns/op {:>12}", "ops/s");
    }
    if table.len() > 1 {
        for (engine, _) in &table[1..] {
            print!(" | strata/{engine}");
        }
    }
    println!();
    for row in 0..table[0].1.len() {
        print!("{:<12}", table[0].1[row].name);
        for (_, outcomes) in &table {
            let o = &outcomes[row];
            print!(" | {:>16.0} {:>12.0}", o.ns_per_op(), o.ops_per_sec());
        }
        if table[0].0 == "strata" {
            for (_, outcomes) in &table[1..] {
                let ratio = table[0].1[row].ops_per_sec() / outcomes[row].ops_per_sec();
                print!(" | {ratio:>10.2}x");
            }
        }
        println!();
    }
    Ok(())
}
