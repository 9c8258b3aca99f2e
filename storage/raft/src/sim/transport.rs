//! The simulated transport: what the server does around the network. Raft
//! messages go out of a driver's outbox onto the simulated network and are
//! stepped at their target. A snapshot is done the way the server does it:
//! the sender reads the checkpoint the `MsgSnapshot` names from its
//! outgoing directory (`snapshot_send`), the files its manifest lists; the
//! receiver stages the files in a `.partial` directory, checks them against
//! the manifest, stores it, moves the directory to where its driver
//! installs from, and only then steps the message (`snapshot_receive`).
//! Some streams are cut short (files missing at the end, as when a sender
//! fails mid-stream); the receiver must refuse those. The sender learns the
//! outcome through `Shared::report_snapshot`, a failure included (message
//! lost, target down or gone).

use std::io;
use std::path::PathBuf;

use raft::eraftpb::{Message, MessageType};
use rand::Rng;

use super::Sim;
use super::check;
use super::net::Envelope;
use crate::mailbox::Input;
use crate::snapshot::{Manifest, SnapshotDirs};

/// How often a snapshot stream is cut short, unless a test says otherwise.
pub const CUT_SHORT_PROBABILITY: f64 = 0.15;

/// A snapshot's files with their contents, by path relative to it.
type Files = Vec<(PathBuf, Vec<u8>)>;

/// The files of a snapshot in flight, its manifest, and which life of the
/// sender sent them.
pub struct Payload {
    manifest: Manifest,
    files: Files,
    sender_generation: u64,
}

impl Sim {
    /// Puts what node `i` sent onto the network; a snapshot carries its
    /// files, read now as the real transport streams them.
    pub(super) fn send_outbox(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        let Some(live) = &mut n.live else { return };
        for m in n.outbox.take() {
            let to = m.to;
            let snapshot = if m.get_msg_type() == MessageType::MsgSnapshot {
                // A build that finished after raft made the message may have
                // pruned the checkpoint it names: the real send then fails
                // too, and raft retries with the newer one.
                match read_snapshot(&live.shared.snapshot_dirs, &m) {
                    Ok((manifest, mut files)) => {
                        if !files.is_empty() && self.rng.random_bool(self.cut_short) {
                            let keep = self.rng.random_range(0..files.len());
                            files.truncate(keep);
                        }
                        Some(Payload {
                            manifest,
                            files,
                            sender_generation: n.generation,
                        })
                    }
                    Err(_) => {
                        super::note_in(
                            &mut self.trace,
                            self.now,
                            ("snapshot unreadable", n.id, to),
                        );
                        live.shared.report_snapshot(to, false);
                        continue;
                    }
                }
            } else {
                None
            };
            let e = Envelope {
                stamp: live.shared.stamps.to(to),
                message: m,
                snapshot,
            };
            let lost = self.net.send(&mut self.rng, self.now, self.weather, e);
            if lost.is_some_and(|e| e.snapshot.is_some()) {
                live.shared.report_snapshot(to, false);
            }
        }
    }

    /// Hands a message to its target; a snapshot is staged first, and its
    /// sender told whether it arrived.
    pub(super) fn deliver(&mut self, e: Envelope) -> Result<(), String> {
        let m = &e.message;
        if e.snapshot.is_some() {
            check::snapshot_includes_target(m)?;
        }
        let snapshot_index = m.get_snapshot().get_metadata().index;
        let what = (m.from, m.to, m.get_msg_type() as i32, m.term, m.index);
        let more = (m.log_term, m.commit, m.reject, m.entries.len());
        self.note((what, more, snapshot_index));
        let (from, to) = (m.from, m.to);
        let now = self.now;
        let target = self.nodes.iter_mut().find(|n| n.id == to);
        if let Some(until) = target.as_ref().and_then(|n| n.paused_until)
            && now < until
        {
            // It waits in the paused member's inbox until it resumes.
            self.net.deliver_at(until, e);
            return Ok(());
        }
        let target = target.and_then(|n| n.live.as_mut());
        let Some(live) = target else {
            if let Some(p) = e.snapshot {
                self.report_snapshot(from, p.sender_generation, to, false);
            }
            return Ok(());
        };
        if let Some(p) = &e.snapshot {
            match stage(&live.shared.snapshot_dirs, &e.message, p) {
                Ok(()) => {}
                Err(StageError::Refused(why)) => {
                    self.note(("snapshot refused", from, to, why));
                    if let Some(p) = e.snapshot {
                        self.report_snapshot(from, p.sender_generation, to, false);
                    }
                    return Ok(());
                }
                Err(StageError::Io(err)) => {
                    return Err(format!("node {to} cannot stage a snapshot: {err}"));
                }
            }
        }
        live.driver.handle(Input::Step(e.message, e.stamp));
        if let Some(p) = e.snapshot {
            self.report_snapshot(from, p.sender_generation, to, true);
        }
        Ok(())
    }

    /// Tells the sender how a snapshot ended, if the life that sent it is
    /// still running.
    fn report_snapshot(&mut self, from: u64, generation: u64, to: u64, ok: bool) {
        let sender = self
            .nodes
            .iter_mut()
            .find(|n| n.id == from && n.generation == generation)
            .and_then(|n| n.live.as_mut());
        if let Some(live) = sender {
            live.shared.report_snapshot(to, ok);
        }
    }
}

/// The manifest of the checkpoint `m` names and the files it lists,
/// relative to its directory; read under a pin, as the real sender does.
fn read_snapshot(dirs: &SnapshotDirs, m: &Message) -> Result<(Manifest, Files), String> {
    let name = String::from_utf8_lossy(&m.get_snapshot().data).into_owned();
    let pin = dirs
        .pin_outgoing(&name)
        .ok_or_else(|| format!("`{name}` is not a snapshot of ours, or is gone"))?;
    let manifest = Manifest::read(pin.dir())
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("`{name}` has no manifest"))?;
    let mut files = Vec::new();
    for f in &manifest.files {
        let bytes = std::fs::read(pin.dir().join(&f.path)).map_err(|e| e.to_string())?;
        files.push((PathBuf::from(&f.path), bytes));
    }
    Ok((manifest, files))
}

enum StageError {
    /// The snapshot is not whole: refused, as the real receiver does.
    Refused(String),
    /// The receiver's own disk failed.
    Io(io::Error),
}

/// Stages the files `p` carries, verifies them against the manifest and
/// stores it last; a staged copy not whole is removed and refused.
fn stage(dirs: &SnapshotDirs, m: &Message, p: &Payload) -> Result<(), StageError> {
    let meta = m.get_snapshot().get_metadata();
    let dir = dirs.incoming(meta.index, meta.term);
    let partial = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).map_err(StageError::Io)?;
    for (rel, bytes) in &p.files {
        let path = partial.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(StageError::Io)?;
        }
        std::fs::write(path, bytes).map_err(StageError::Io)?;
    }
    if let Err(e) = p.manifest.verify(&partial) {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(StageError::Refused(e.to_string()));
    }
    p.manifest.write(&partial).map_err(StageError::Io)?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&partial, &dir).map_err(StageError::Io)
}
