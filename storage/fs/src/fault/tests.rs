use std::io;
use std::path::Path;

use super::*;
use crate::FileSystem;

/// A fresh file system with `/db` created and durable.
fn with_db() -> (FaultFs, &'static Path) {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    fs.create_dir_durable(dir).expect("mkdir");
    (fs, dir)
}

// Proves that a crash keeps synced bytes of durable entries only.
#[test]
fn crash_keeps_only_synced_data_of_durable_entries() {
    let (fs, dir) = with_db();
    let a = fs.create(&dir.join("a")).expect("create a");
    a.append(b"synced").expect("append");
    a.sync().expect("sync");
    a.append(b"-lost").expect("append");
    fs.sync_dir(dir).expect("sync dir");
    let b = fs.create(&dir.join("b")).expect("create b");
    b.append(b"never durable").expect("append");
    b.sync().expect("sync");

    let after = fs.crash();
    assert!(
        fs.exists(&dir.join("a")).is_err(),
        "old instance must refuse calls"
    );
    assert_eq!(
        after.read_all(&dir.join("a")).expect("a survives"),
        b"synced"
    );
    assert!(
        !after.exists(&dir.join("b")).expect("exists"),
        "entry without dir sync must vanish"
    );
}

// Proves that injected failures fire once and that renames need a dir sync.
#[test]
fn injected_failures_fire_once_and_renames_need_dir_sync() {
    let (fs, dir) = with_db();
    let f = fs.create(&dir.join("x")).expect("create");
    fs.fail_next_write(io::ErrorKind::Other);
    assert!(f.append(b"1").is_err());
    f.append(b"1").expect("second append works");
    fs.fail_next_sync(io::ErrorKind::Other);
    assert!(f.sync().is_err());
    f.sync().expect("second sync works");
    fs.sync_dir(dir).expect("sync dir");
    fs.rename(&dir.join("x"), &dir.join("y")).expect("rename");
    let after = fs.crash();
    assert!(after.exists(&dir.join("x")).expect("exists"));
    assert!(!after.exists(&dir.join("y")).expect("exists"));
}

// Proves that a directory whose entry was never synced in its parent
// vanishes at a crash with every file in it, even files that were synced
// in it, and that syncing the parent keeps it.
#[test]
fn directory_without_parent_sync_vanishes_with_its_files() {
    let fs = FaultFs::new();
    let dir = Path::new("/data/log");
    fs.create_dir_all(dir).expect("mkdir");
    let f = fs.create(&dir.join("f")).expect("create");
    f.append(b"synced").expect("append");
    f.sync().expect("sync");
    fs.sync_dir(dir).expect("sync dir");

    let lost = fs.durable_copy();
    assert!(!lost.exists(dir).expect("exists"), "unsynced directory");
    assert!(!lost.exists(&dir.join("f")).expect("exists"));
    assert!(lost.list_dir(Path::new("/")).expect("root").is_empty());

    // Syncing only the directory's own parent is not enough while the
    // parent's entry is itself not durable.
    fs.sync_dir(Path::new("/data")).expect("sync /data");
    assert!(!fs.durable_copy().exists(dir).expect("exists"));
    fs.sync_dir(Path::new("/")).expect("sync /");
    let kept = fs.crash();
    assert_eq!(
        kept.read_all(&dir.join("f")).expect("f survives"),
        b"synced"
    );
}

// Proves that create_dir_durable makes a new directory chain survive a
// crash without further syncs.
#[test]
fn create_dir_durable_survives_crash() {
    let fs = FaultFs::new();
    let dir = Path::new("/a/b/c");
    fs.create_dir_durable(dir).expect("mkdir");
    let after = fs.crash();
    assert!(after.exists(dir).expect("exists"));
    assert_eq!(after.list_dir(Path::new("/a")).expect("list"), vec!["b"]);
}

// Proves that a truncation below the synced length is undone by a crash
// before the next sync, kept after it, and that appends follow the cut.
#[test]
fn truncation_is_durable_only_after_sync() {
    let (fs, dir) = with_db();
    let path = dir.join("seg");
    let f = fs.create(&path).expect("create");
    f.append(b"intact+torn").expect("append");
    f.sync().expect("sync");
    fs.sync_dir(dir).expect("sync dir");

    f.truncate(6).expect("truncate");
    assert_eq!(fs.contents(&path).expect("live"), b"intact");
    assert_eq!(
        fs.durable_copy().read_all(&path).expect("read"),
        b"intact+torn",
        "an unsynced truncation is lost at a crash"
    );
    f.append(b"-next").expect("append");
    let fs = fs.crash_keeping(|_, unsynced| unsynced);
    assert_eq!(
        fs.read_all(&path).expect("read"),
        b"intact+torn",
        "until the cut is synced, the old durable bytes come back"
    );

    let file = fs.open_append(&path).expect("open_append");
    file.truncate(6).expect("truncate");
    file.sync().expect("sync");
    file.append(b"-next").expect("append");
    assert_eq!(
        fs.crash_keeping(|_, unsynced| unsynced)
            .read_all(&path)
            .expect("read"),
        b"intact-next"
    );
}

// Proves that truncation cannot extend a file and that open_append needs
// an existing file and continues after its end.
#[test]
fn open_append_continues_existing_file() {
    let (fs, dir) = with_db();
    let path = dir.join("f");
    assert!(fs.open_append(&path).is_err(), "missing file");
    let f = fs.create(&path).expect("create");
    f.append(b"one").expect("append");
    assert!(f.truncate(4).is_err(), "truncate must not extend");
    let again = fs.open_append(&path).expect("open_append");
    again.append(b"two").expect("append");
    assert_eq!(fs.contents(&path).expect("live"), b"onetwo");
}

// Proves that fail_sync_after lets the given number of syncs (of files or
// directories) through and fails the one after, once.
#[test]
fn sync_failure_can_be_aimed_past_earlier_syncs() {
    let (fs, dir) = with_db();
    let f = fs.create(&dir.join("x")).expect("create");
    fs.fail_sync_after(2, io::ErrorKind::Other);
    f.sync().expect("first passes");
    fs.sync_dir(dir).expect("second passes");
    assert!(f.sync().is_err(), "third fails");
    f.sync().expect("and only that one");
    assert_eq!(
        fs.sync_count(),
        1 + 3,
        "the mkdir's sync, then the three that passed"
    );
}

/// A coin that replays `draws` in a loop.
fn coin(draws: &[u64]) -> impl FnMut() -> u64 + '_ {
    let mut i = 0;
    move || {
        i += 1;
        draws[(i - 1) % draws.len()]
    }
}

// Proves that a reordered crash keeps synced bytes whole, keeps the
// unsynced length the coin draws, and zeroes exactly the dirty pages the
// coin loses, the first of them only from the synced length on.
#[test]
fn reordered_crash_loses_any_subset_of_unsynced_pages() {
    let (fs, dir) = with_db();
    let a = fs.create(&dir.join("a")).expect("create");
    fs.sync_dir(dir).expect("sync dir");
    a.append(&[1; 6]).expect("append");
    a.sync().expect("sync");
    a.append(&[2; 14]).expect("append");
    // Length: 6 + 13 % 15 = 19 bytes. Pages of 4 from byte 4: [4, 8) lost
    // (only [6, 8) was dirty), [8, 12) kept, [12, 16) lost, [16, 19) kept.
    let after = fs.crash_reordered(4, coin(&[13, 0, 1, 0, 1]));
    let mut want = vec![1; 6];
    want.extend([0, 0, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2]);
    assert_eq!(after.read_all(&dir.join("a")).expect("a survives"), want);
}

// Proves that each file draws its own fate: one file's unsynced bytes may
// all survive while another's are all lost.
#[test]
fn reordered_crash_treats_files_independently() {
    let (fs, dir) = with_db();
    for name in ["a", "b"] {
        let f = fs.create(&dir.join(name)).expect("create");
        f.append(b"unsynced").expect("append");
    }
    fs.sync_dir(dir).expect("sync dir");
    // "a": length 8 % 9 = 8, its one page kept; "b": length 0.
    let after = fs.crash_reordered(4096, coin(&[8, 1, 0]));
    assert_eq!(after.read_all(&dir.join("a")).expect("a"), b"unsynced");
    assert_eq!(after.read_all(&dir.join("b")).expect("b"), b"");
}

// Proves that a held sync makes nothing durable until it is released, and
// that a released one covers what it covered when it was made, of a file
// and of a directory.
#[test]
fn held_syncs_are_durable_only_once_released() {
    let (fs, dir) = with_db();
    fs.hold_syncs();
    let a = fs.create(&dir.join("a")).expect("create");
    a.append(b"first").expect("append");
    a.sync().expect("a held sync succeeds");
    fs.sync_dir(dir).expect("a held directory sync succeeds");
    a.append(b"-second").expect("append");
    assert_eq!(fs.held_syncs(), 2);
    let crashed = fs.durable_copy();
    assert!(
        !crashed.exists(&dir.join("a")).expect("exists"),
        "a crash before the release loses the directory entry"
    );
    fs.release_syncs();
    assert_eq!(fs.held_syncs(), 0);
    let after = fs.crash();
    assert_eq!(
        after.read_all(&dir.join("a")).expect("a survives"),
        b"first",
        "the release covers the length at the sync, not what came after"
    );
}

// Proves that truncating while syncs are held is refused rather than
// modelled wrongly.
#[test]
fn truncating_while_syncs_are_held_is_refused() {
    let (fs, dir) = with_db();
    let a = fs.create(&dir.join("a")).expect("create");
    a.append(b"bytes").expect("append");
    fs.hold_syncs();
    let err = a.truncate(2).expect_err("refused");
    assert_eq!(err.kind(), io::ErrorKind::Unsupported);
}

// Proves that what is written while syncs are held comes after the slow
// fsync: a crash before the release finds a file as it was when the hold
// began, its bytes unsynced then surviving as a crash may keep them, and
// nothing written since, even with every page written back.
#[test]
fn crash_while_syncs_are_held_loses_what_was_written_since() {
    let (fs, dir) = with_db();
    let b = fs.create(&dir.join("b")).expect("create");
    fs.sync_dir(dir).expect("sync dir");
    b.append(b"synced").expect("append");
    b.sync().expect("sync");
    b.append(b"-before").expect("append");
    fs.hold_syncs();
    b.append(b"-during").expect("append");
    b.sync().expect("a held sync");
    // Every length and every page kept: u64::MAX % 8 == 7, all of "-before".
    let after = fs.crash_reordered(4096, || u64::MAX);
    assert_eq!(
        after.read_all(&dir.join("b")).expect("b survives"),
        b"synced-before"
    );
}

// Proves that held syncs hold every thread's syncs but count only the
// holding thread's: another thread's sync (an engine's background work) is
// durable only at the release, and does not count as the holder's fsync.
#[test]
fn held_syncs_hold_every_thread_but_count_the_holders() {
    let (fs, dir) = with_db();
    let a = fs.create(&dir.join("a")).expect("create");
    fs.sync_dir(dir).expect("sync dir");
    a.append(b"bytes").expect("append");
    fs.hold_syncs();
    std::thread::scope(|s| {
        s.spawn(|| a.sync().expect("another thread's sync"));
    });
    assert_eq!(fs.held_syncs(), 0, "not the holder's");
    let crashed = fs.durable_copy();
    assert_eq!(crashed.read_all(&dir.join("a")).expect("a"), b"");
    fs.release_syncs();
    let after = fs.durable_copy();
    assert_eq!(after.read_all(&dir.join("a")).expect("a"), b"bytes");
}

// Proves that releasing held directory syncs applies each as it found the
// directory: a later sync's new entry is not undone by an earlier one.
#[test]
fn released_directory_sync_keeps_newer_entries_of_other_threads() {
    let (fs, dir) = with_db();
    fs.hold_syncs();
    fs.sync_dir(dir).expect("a held directory sync");
    std::thread::scope(|s| {
        s.spawn(|| {
            fs.create(&dir.join("b")).expect("create b");
            fs.sync_dir(dir).expect("another thread's directory sync");
        });
    });
    fs.release_syncs();
    let after = fs.crash();
    assert!(
        after.exists(&dir.join("b")).expect("exists"),
        "b stays durable"
    );
}

// Proves the model of allocated space: the file reads as its appended bytes
// then zeros up to the allocated length, appends go after the appended
// bytes, and a crash leaves the synced bytes and zeros where unsynced
// appends were, up to the allocated length the last sync made durable.
#[test]
fn allocated_space_reads_as_zeros_and_survives_a_crash_as_zeros() {
    let (fs, dir) = with_db();
    let path = dir.join("seg");
    let f = fs.create(&path).expect("create");
    fs.sync_dir(dir).expect("sync dir");
    f.append(b"abc").expect("append");
    f.preallocate(8).expect("preallocate");
    assert_eq!(fs.read_all(&path).expect("read"), b"abc\0\0\0\0\0");
    f.append(b"de").expect("append");
    assert_eq!(fs.read_all(&path).expect("read"), b"abcde\0\0\0");
    f.sync().expect("sync");
    f.append(b"fg").expect("append, unsynced");
    let after = fs.crash();
    assert_eq!(after.read_all(&path).expect("survives"), b"abcde\0\0\0");
}

// Proves that truncating into allocated space only shortens the file, and
// that a truncation below the appended bytes drops the allocation too.
#[test]
fn truncation_shortens_allocated_space() {
    let (fs, dir) = with_db();
    let path = dir.join("seg");
    let f = fs.create(&path).expect("create");
    f.append(b"abcd").expect("append");
    f.preallocate(10).expect("preallocate");
    f.truncate(6).expect("truncate into the zeros");
    assert_eq!(fs.read_all(&path).expect("read"), b"abcd\0\0");
    f.append(b"e").expect("append after the cut");
    assert_eq!(fs.read_all(&path).expect("read"), b"abcd\0\0e");
    f.truncate(2).expect("truncate into the data");
    assert_eq!(fs.read_all(&path).expect("read"), b"ab");
    f.append(b"x").expect("append after the cut");
    assert_eq!(fs.read_all(&path).expect("read"), b"abx");
    assert!(f.truncate(4).is_err(), "past the end");
}
