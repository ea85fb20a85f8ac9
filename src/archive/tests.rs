//! The archive's behaviour: round trips, versions, healing after a cut at every byte, damage.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::log::{FaultKind, FaultPlan, Faults};

/// A Claude Code-looking line.
fn line(i: usize) -> String {
    format!(
        "{{\"type\":\"assistant\",\"sessionId\":\"s\",\"uuid\":\"u{i}\",\"parentUuid\":null,\"timestamp\":\"2026-01-0{}T00:00:00Z\",\"message\":{{\"id\":\"m{i}\",\"usage\":{{\"input_tokens\":{i}}}}}}}\n",
        1 + i % 9
    )
}

fn lines(range: std::ops::Range<usize>) -> String {
    range.map(line).collect()
}

struct Setup {
    _root: tempfile::TempDir,
    src: PathBuf,
    archive: PathBuf,
}

fn setup() -> Setup {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("projects").join("proj");
    std::fs::create_dir_all(&src).unwrap();
    let archive = root.path().join("data").join("archive");
    Setup {
        src: std::fs::canonicalize(&src).unwrap(),
        archive,
        _root: root,
    }
}

impl Setup {
    fn options(&self) -> ArchiveOptions {
        ArchiveOptions {
            dir: Some(self.archive.clone()),
            faults: None,
        }
    }

    fn run(&self) -> ArchiveReport {
        archive(std::slice::from_ref(&self.src), &self.options(), &|_, _| {}).unwrap()
    }

    fn run_with(&self, faults: &Arc<Faults>) -> Result<ArchiveReport, ArchiveError> {
        let options = ArchiveOptions {
            faults: Some(faults.clone()),
            ..self.options()
        };
        archive(std::slice::from_ref(&self.src), &options, &|_, _| {})
    }

    fn open(&self) -> Archive {
        Archive::open(&self.archive).unwrap()
    }

    /// Restores the latest version of `what` under the directory `name` beside the archive;
    /// that directory, and what the restore answered.
    fn restore_under(&self, what: &str, name: &str) -> (PathBuf, Result<Restored, ArchiveError>) {
        let to = self.archive.parent().unwrap().join(name);
        let options = RestoreOptions {
            to: Some(to.clone()),
            version: None,
        };
        (to, restore(&self.open(), what, &options))
    }

    /// [`Setup::restore_under`], asserting the files written there: each relative path and
    /// the lines it holds. That directory.
    fn assert_restored(
        &self,
        what: &str,
        name: &str,
        want: &[(&str, std::ops::Range<usize>)],
    ) -> PathBuf {
        let (to, done) = self.restore_under(what, name);
        assert_eq!(done.unwrap().files.len(), want.len());
        for (file, range) in want {
            let bytes = std::fs::read(to.join(file)).unwrap();
            assert_eq!(bytes, lines(range.clone()).as_bytes(), "{file}");
        }
        to
    }

    fn read(&self, path: &Path, version: Option<u32>) -> Vec<u8> {
        let read = self.open().read(path, version).unwrap();
        assert!(read.damage.is_empty(), "{:?}", read.damage);
        read.bytes
    }
}

#[test]
fn archive_appends_only_new_complete_lines_and_restores_them() {
    let s = setup();
    let a = s.src.join("a.jsonl");
    std::fs::write(&a, lines(0..5)).unwrap();
    let first = s.run();
    assert_eq!((first.new_sources, first.lines), (1, 5));
    assert_eq!(s.read(&a, None), lines(0..5).as_bytes());
    // A torn last line is left out until it is complete.
    let torn = format!("{}{}", lines(0..8), &line(8)[..30]);
    std::fs::write(&a, &torn).unwrap();
    let second = s.run();
    assert_eq!((second.appended, second.lines), (1, 3));
    assert_eq!(s.read(&a, None), lines(0..8).as_bytes());
    std::fs::write(&a, lines(0..9)).unwrap();
    assert_eq!(s.run().lines, 1);
    assert_eq!(s.read(&a, None), lines(0..9).as_bytes());
    assert_eq!(s.open().versions(&a), [1]);
    let listing = s.open().list();
    assert_eq!(listing.sources.len(), 1);
    let src = &listing.sources[0];
    assert_eq!(
        (src.agent.as_str(), src.session.as_str()),
        ("claude-code", "a")
    );
    assert_eq!(src.bytes, lines(0..9).len() as u64);
    assert_eq!(src.first_time.as_deref(), Some("2026-01-01T00:00:00Z"));
    assert_eq!(src.last_time.as_deref(), Some("2026-01-09T00:00:00Z"));
    assert!(src.original_exists);
    // Restoring never overwrites; under --to it writes the bytes back.
    let err = restore(&s.open(), "a", &RestoreOptions::default()).unwrap_err();
    assert!(matches!(err, ArchiveError::Exists { .. }), "{err}");
    s.assert_restored("a", "restored", &[("a.jsonl", 0..9)]);
    // Deleted, it comes back at its original path.
    std::fs::remove_file(&a).unwrap();
    restore(&s.open(), a.to_str().unwrap(), &RestoreOptions::default()).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), lines(0..9).as_bytes());
    let v = verify(&s.archive).unwrap();
    assert!(
        v.ok && v.torn_index_bytes == 0 && v.unnamed_frame_bytes == 0,
        "{v:?}"
    );
    assert_eq!(v.bytes, lines(0..9).len() as u64);
}

#[test]
fn a_nothing_new_run_writes_nothing() {
    let s = setup();
    for i in 0..5 {
        std::fs::write(s.src.join(format!("{i}.jsonl")), lines(0..3)).unwrap();
    }
    s.run();
    let before = (
        std::fs::read(s.archive.join("index")).unwrap(),
        std::fs::read(s.archive.join("frames")).unwrap(),
    );
    let again = s.run();
    assert_eq!((again.files, again.unchanged, again.lines), (5, 5, 0));
    let after = (
        std::fs::read(s.archive.join("index")).unwrap(),
        std::fs::read(s.archive.join("frames")).unwrap(),
    );
    assert_eq!(before, after);
}

#[test]
fn rewritten_sources_keep_every_version() {
    let s = setup();
    let a = s.src.join("a.jsonl");
    let mut expected: Vec<Vec<u8>> = Vec::new();
    let mut step = |content: String, new_version: bool| {
        std::fs::write(&a, &content).unwrap();
        let r = s.run();
        assert_eq!(
            r.new_versions + r.new_sources == 1,
            new_version,
            "{content}"
        );
        if new_version {
            expected.push(content.into_bytes());
        } else if let Some(last) = expected.last_mut() {
            *last = content.into_bytes();
        }
    };
    step(lines(0..6), true);
    step(lines(0..3), true); // truncated
    step(format!("{}{}", line(99), lines(1..3)), true); // head changed
    let mut tail_changed = format!("{}{}", line(99), lines(1..3)).into_bytes();
    let n = tail_changed.len();
    tail_changed[n - 3] = b'0';
    step(String::from_utf8(tail_changed).unwrap(), true); // archived tail changed
    step(lines(50..60), true); // replaced by another file of the same name
    step(format!("{}{}", lines(50..60), lines(60..62)), false); // appended
    assert_eq!(s.open().versions(&a), [1, 2, 3, 4, 5]);
    for (i, want) in expected.iter().enumerate() {
        let v = u32::try_from(i + 1).unwrap();
        assert_eq!(&s.read(&a, Some(v)), want, "version {v}");
    }
    assert!(verify(&s.archive).unwrap().ok);
}

/// Bytes the archive files hold.
fn archive_bytes(dir: &Path) -> u64 {
    ["frames", "index"]
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len()))
        .sum()
}

#[test]
fn a_run_cut_at_any_byte_is_healed_by_the_next() {
    // The run to cut: one source appended to, one new, one rewritten; writes measured first.
    let prepare = |s: &Setup| {
        std::fs::write(s.src.join("a.jsonl"), lines(0..3)).unwrap();
        std::fs::write(s.src.join("c.jsonl"), lines(20..23)).unwrap();
        s.run();
        std::fs::write(s.src.join("a.jsonl"), lines(0..6)).unwrap();
        std::fs::write(s.src.join("b.jsonl"), lines(10..12)).unwrap();
        std::fs::write(s.src.join("c.jsonl"), lines(30..31)).unwrap();
    };
    let s = setup();
    prepare(&s);
    // The archive as the run to cut finds it, put back before each trial (the run never
    // changes the transcripts).
    let saved: Vec<(PathBuf, Vec<u8>)> = ["frames", "index", "lock"]
        .iter()
        .map(|f| (s.archive.join(f), std::fs::read(s.archive.join(f)).unwrap()))
        .collect();
    let before = archive_bytes(&s.archive);
    s.run();
    let total = archive_bytes(&s.archive) - before;
    assert!(total > 100);
    // Every 8th byte with ENOSPC, every 29th with EIO, and the run's last bytes: each trial
    // syncs a dozen times, so every byte of ~1,500 takes minutes on a shared disk (it passed
    // when run so, by hand).
    let budgets = |step: u64| (0..=total).filter(move |b| b % step == 0 || *b >= total - 1);
    for (kind, step) in [(FaultKind::NoSpace, 8), (FaultKind::Io, 29)] {
        for budget in budgets(step) {
            for (path, bytes) in &saved {
                std::fs::write(path, bytes).unwrap();
            }
            let faults = Arc::new(Faults::new(FaultPlan {
                log_write_budget: Some(budget),
                kind,
                ..FaultPlan::default()
            }));
            let cut = s.run_with(&faults);
            assert_eq!(cut.is_err(), budget < total, "budget {budget} of {total}");
            // Whatever was committed verifies; what was cut is at most a torn end.
            let v = verify(&s.archive).unwrap();
            assert!(v.ok, "budget {budget}: {v:?}");
            s.run();
            let v = verify(&s.archive).unwrap();
            assert!(
                v.ok && v.torn_index_bytes == 0 && v.unnamed_frame_bytes == 0,
                "{v:?}"
            );
            assert_eq!(s.read(&s.src.join("a.jsonl"), None), lines(0..6).as_bytes());
            assert_eq!(
                s.read(&s.src.join("b.jsonl"), None),
                lines(10..12).as_bytes()
            );
            assert_eq!(
                s.read(&s.src.join("c.jsonl"), Some(1)),
                lines(20..23).as_bytes()
            );
            assert_eq!(
                s.read(&s.src.join("c.jsonl"), None),
                lines(30..31).as_bytes()
            );
            assert_eq!(
                s.open().versions(&s.src.join("c.jsonl")),
                [1, 2],
                "budget {budget}"
            );
            // No line archived twice: every version's records are contiguous (verify) and the
            // archive holds exactly the files' bytes.
            assert_eq!(
                v.bytes,
                (lines(0..6).len()
                    + lines(10..12).len()
                    + lines(20..23).len()
                    + lines(30..31).len()) as u64
            );
        }
    }
}

#[test]
fn failed_syncs_and_truncates_fail_cleanly_and_the_next_run_completes() {
    let s = setup();
    std::fs::write(s.src.join("a.jsonl"), lines(0..3)).unwrap();
    let faults = Arc::new(Faults::new(FaultPlan {
        log_sync_fails: true,
        ..FaultPlan::default()
    }));
    let err = s.run_with(&faults).unwrap_err();
    assert!(err.to_string().contains("No space left"), "{err}");
    assert!(verify(&s.archive).unwrap().ok);
    s.run();
    assert_eq!(s.read(&s.src.join("a.jsonl"), None), lines(0..3).as_bytes());
    // A torn end whose removal fails: the run fails before writing; then heals.
    let index = s.archive.join("index");
    let mut bytes = std::fs::read(&index).unwrap();
    bytes.extend_from_slice(b"ALIR\x05");
    std::fs::write(&index, &bytes).unwrap();
    std::fs::write(s.src.join("a.jsonl"), lines(0..4)).unwrap();
    let faults = Arc::new(Faults::new(FaultPlan {
        log_truncate_fails: true,
        ..FaultPlan::default()
    }));
    assert!(s.run_with(&faults).is_err());
    s.run();
    let v = verify(&s.archive).unwrap();
    assert!(v.ok && v.torn_index_bytes == 0, "{v:?}");
    assert_eq!(s.read(&s.src.join("a.jsonl"), None), lines(0..4).as_bytes());
}

#[test]
fn damage_is_named_skipped_and_never_read_as_bytes() {
    let s = setup();
    for (name, range) in [("a", 0..40), ("b", 40..80)] {
        std::fs::write(s.src.join(format!("{name}.jsonl")), lines(range)).unwrap();
    }
    s.run();
    let frames = s.archive.join("frames");
    let good = std::fs::read(&frames).unwrap();
    let a = s.src.join("a.jsonl");
    let b = s.src.join("b.jsonl");
    let a_first = s
        .open()
        .catalog
        .latest(a.as_os_str().as_encoded_bytes())
        .unwrap()
        .1
        .frame_offset;
    // Flip a byte inside a's frame.
    let mut bad = good.clone();
    bad[usize::try_from(a_first).unwrap() + 40] ^= 0x10;
    std::fs::write(&frames, &bad).unwrap();
    let v = verify(&s.archive).unwrap();
    assert!(!v.ok);
    assert_eq!(v.damaged_frames.len(), 1);
    assert_eq!(v.damaged_frames[0].path, a);
    let read = s.open().read(&a, None).unwrap();
    assert!(read.bytes.is_empty() && read.damage.len() == 1);
    assert_eq!(s.read(&b, None), lines(40..80).as_bytes());
    let (to, err) = s.restore_under("a", "out");
    assert!(matches!(err, Err(ArchiveError::Incomplete { .. })));
    assert!(!to.exists(), "a failed restore writes nothing");
    // A truncated frames file: the frames past the end are named missing.
    std::fs::write(&frames, &good[..good.len() - 10]).unwrap();
    let v = verify(&s.archive).unwrap();
    assert_eq!(v.damaged_frames.len(), 1);
    assert_eq!(v.damaged_frames[0].path, b);
    // A damaged index record: the other source still reads.
    std::fs::write(&frames, &good).unwrap();
    let index = s.archive.join("index");
    let mut idx = std::fs::read(&index).unwrap();
    idx[8 + 20] ^= 0x01;
    std::fs::write(&index, &idx).unwrap();
    let v = verify(&s.archive).unwrap();
    assert!(!v.ok && v.damaged_records.len() == 1, "{v:?}");
    assert_eq!(s.read(&b, None), lines(40..80).as_bytes());
}

#[test]
fn nothing_is_written_beside_the_transcripts() {
    let s = setup();
    let a = s.src.join("a.jsonl");
    std::fs::write(&a, lines(0..4)).unwrap();
    let listing = |dir: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = (listing(&s.src), std::fs::read(&a).unwrap());
    s.run();
    verify(&s.archive).unwrap();
    let _ = s.open().list();
    assert_eq!(before, (listing(&s.src), std::fs::read(&a).unwrap()));
    for f in ["frames", "index", "lock"] {
        let mode = std::fs::metadata(s.archive.join(f))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
    let mode = std::fs::metadata(&s.archive).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn a_fifo_given_as_a_path_is_skipped_not_waited_on() {
    let s = setup();
    let a = s.src.join("a.jsonl");
    std::fs::write(&a, lines(0..2)).unwrap();
    let fifo = s.src.join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Opened like a file, the FIFO would block this run until a writer came.
    let report = archive(&[fifo.clone(), a.clone()], &s.options(), &|_, _| {}).unwrap();
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].path, fifo);
    assert!(
        report.skipped[0].error.contains("is a FIFO"),
        "{:?}",
        report.skipped
    );
    assert_eq!(s.read(&a, None), lines(0..2).as_bytes());
}

#[test]
fn a_session_is_restored_with_its_subagents_under_to() {
    let s = setup();
    let main = s.src.join("sess.jsonl");
    let sub_dir = s.src.join("sess").join("subagents");
    std::fs::create_dir_all(&sub_dir).unwrap();
    let sub = sub_dir.join("agent-1.jsonl");
    std::fs::write(&main, lines(0..3)).unwrap();
    std::fs::write(&sub, lines(3..5)).unwrap();
    s.run();
    let to = s.assert_restored(
        "sess",
        "back",
        &[("sess.jsonl", 0..3), ("sess/subagents/agent-1.jsonl", 3..5)],
    );
    // Asked again, nothing is overwritten and the files are untouched.
    std::fs::write(to.join("sess.jsonl"), b"mine\n").unwrap();
    assert!(matches!(
        s.restore_under("sess", "back").1,
        Err(ArchiveError::Exists { .. })
    ));
    assert_eq!(std::fs::read(to.join("sess.jsonl")).unwrap(), b"mine\n");
    // By path: the whole session too.
    std::fs::remove_file(&main).unwrap();
    std::fs::remove_file(&sub).unwrap();
    let done = restore(&s.open(), sub.to_str().unwrap(), &RestoreOptions::default()).unwrap();
    assert_eq!(done.files.len(), 2);
    assert_eq!(std::fs::read(&sub).unwrap(), lines(3..5).as_bytes());
    assert_eq!(std::fs::read(&main).unwrap(), lines(0..3).as_bytes());
}

#[test]
fn a_restore_cut_short_by_a_damaged_later_frame_leaves_nothing() {
    let s = setup();
    let a = s.src.join("a.jsonl");
    for n in [10, 20, 30] {
        std::fs::write(&a, lines(0..n)).unwrap();
        s.run();
    }
    let archive = s.open();
    let found = archive.version(&a, Some(1)).unwrap();
    let offsets: Vec<u64> = found
        .records
        .iter()
        .map(|&i| archive.catalog.record(i).unwrap().frame_offset)
        .collect();
    assert_eq!(offsets.len(), 3);
    // The first two frames are written before the third is found damaged.
    let frames = s.archive.join("frames");
    let mut bad = std::fs::read(&frames).unwrap();
    bad[usize::try_from(offsets[2]).unwrap() + 40] ^= 0x10;
    std::fs::write(&frames, &bad).unwrap();
    let (to, err) = s.restore_under("a", "out/deeper");
    assert!(
        matches!(err, Err(ArchiveError::Incomplete { .. })),
        "{err:?}"
    );
    assert!(!to.exists());
    assert!(
        !to.parent().unwrap().exists(),
        "the folders the restore made are removed"
    );
}

#[test]
fn a_streamed_version_is_what_a_read_gives() {
    let s = setup();
    let a = s.src.join("a.jsonl");
    // One record more at each run: one to six frames, handed on in order.
    for (runs, n) in (1..).zip([1, 2, 5, 6, 9, 14]) {
        std::fs::write(&a, lines(0..n)).unwrap();
        s.run();
        let archive = s.open();
        let mut streamed = Vec::new();
        let mut frames = 0;
        let total = archive
            .stream_version(archive.version(&a, Some(1)).unwrap(), &mut |bytes| {
                streamed.extend_from_slice(bytes);
                frames += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(streamed, s.read(&a, None), "{n} lines");
        assert_eq!(streamed, lines(0..n).as_bytes());
        assert_eq!(total, Some(streamed.len() as u64));
        assert_eq!(frames, runs);
    }
    assert!(s.open().version(&a, Some(2)).is_err(), "no such version");
    // A sink's error ends the stream with it.
    let archive = s.open();
    let failed = archive.stream_version(archive.version(&a, Some(1)).unwrap(), &mut |_| {
        Err(std::io::Error::other("full"))
    });
    assert!(failed.is_err());
}
