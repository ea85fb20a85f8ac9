//! The run-level usage snapshot: after any sequence of appends (torn tails included), new,
//! deleted, truncated and rewritten files, and a damaged snapshot, its answer is the full
//! path's (every file read and merged) and a naive oracle's (Claude Code files parsed as one
//! stream in path order, the others one by one).
// Test helpers: a failed step fails the test; generated figures are small.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)]

#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentlog::transcript::{
    Format, GroupBy, OpenOptions, SnapshotOutcome, Transcript, UNINDEXED_FILE, UsageOptions,
    UsageReport, day_of, discover, usage,
};
use oracle::Sum;
use proptest::prelude::*;

/// The files a case may hold: a relative path, a format, and the stream of bytes it is a
/// prefix of (a copy of another file's stream, a resumed session, files of their own).
fn streams() -> Vec<(&'static str, Format, Vec<u8>)> {
    let a = generate::transcript(Format::ClaudeCode, 11, 40);
    let cut = a[..a.len() / 2].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let mut resumed = a[..cut].to_vec();
    resumed.extend(generate::transcript(Format::ClaudeCode, 12, 30));
    vec![
        ("p1/a.jsonl", Format::ClaudeCode, a.clone()),
        ("p2/copy.jsonl", Format::ClaudeCode, a),
        ("p0/resumed.jsonl", Format::ClaudeCode, resumed),
        (
            "p3/own.jsonl",
            Format::ClaudeCode,
            generate::transcript(Format::ClaudeCode, 13, 40),
        ),
        (
            "codex/rollout.jsonl",
            Format::Codex,
            generate::transcript(Format::Codex, 14, 40),
        ),
        (
            "pi/s.jsonl",
            Format::Pi,
            generate::transcript(Format::Pi, 15, 40),
        ),
    ]
}

/// Another Claude Code transcript, for rewrites.
fn other() -> Vec<u8> {
    generate::transcript(Format::ClaudeCode, 16, 40)
}

fn options(cache: &Path, by: GroupBy) -> UsageOptions {
    UsageOptions {
        open: OpenOptions {
            index_dir: Some(cache.to_path_buf()),
            ..OpenOptions::default()
        },
        by,
        threads: 2,
        ..UsageOptions::default()
    }
}

/// The oracle's tokens by day: Claude Code files' complete lines as one stream in path order.
fn oracle_by_day(files: &[(PathBuf, Format)]) -> BTreeMap<String, Sum> {
    let mut sorted = files.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut claude = Vec::new();
    let mut parts = Vec::new();
    for (path, format) in &sorted {
        let bytes = std::fs::read(path).unwrap();
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let bytes = &bytes[..complete];
        match format {
            Format::ClaudeCode => claude.extend_from_slice(bytes),
            _ => parts.push((*format, oracle::expected(*format, bytes))),
        }
    }
    parts.push((
        Format::ClaudeCode,
        oracle::expected(Format::ClaudeCode, &claude),
    ));
    let mut out: BTreeMap<String, Sum> = BTreeMap::new();
    for (_, e) in parts {
        for ((quarter, _), tally) in e.buckets {
            let day = day_of(quarter).map_or("unknown".to_owned(), |d| d.to_string());
            out.entry(day).or_default().add(&tally);
        }
    }
    out.retain(|_, t| !t.is_zero());
    out
}

fn rows(report: &UsageReport) -> BTreeMap<String, Sum> {
    report
        .rows
        .iter()
        .map(|r| {
            let key = match &r.project {
                Some(p) => format!("{p}/{}", r.key),
                None => r.key.clone(),
            };
            (key, Sum::of(&r.tally))
        })
        .collect()
}

/// Equal figures (every field, the cost in exact units), empty rows left out.
fn same(a: &BTreeMap<String, Sum>, b: &BTreeMap<String, Sum>, what: &str) {
    let strip = |m: &BTreeMap<String, Sum>| -> BTreeMap<String, Sum> {
        m.iter()
            .filter(|(_, t)| !t.is_zero())
            .map(|(k, t)| (k.clone(), *t))
            .collect()
    };
    assert_eq!(strip(a), strip(b), "{what}");
}

/// A run answered from (and keeping) the run-level snapshot, and what the snapshot did.
fn with_snapshot(roots: &[PathBuf], options: &UsageOptions) -> (UsageReport, SnapshotOutcome) {
    let report = usage(roots, options, &|_, _| {});
    let outcome = report.snapshot.clone();
    (report, outcome)
}

/// A run that opens every index (the full path).
fn full_path(files: &[PathBuf], options: &UsageOptions) -> UsageReport {
    let options = UsageOptions {
        snapshot: false,
        ..options.clone()
    };
    let report = usage(files, &options, &|_, _| {});
    assert_eq!(report.snapshot, SnapshotOutcome::Off);
    report
}

/// Runs the snapshot path and the full path by day and by session, checks they agree with
/// each other and the oracle, and returns the snapshot path's outcome (by day).
fn check(root: &Path, cache: &Path, files: &[(PathBuf, Format)]) -> SnapshotOutcome {
    let roots = [root.to_path_buf()];
    let (found, skipped) = discover(&roots);
    assert!(skipped.is_empty());
    assert_eq!(found.len(), files.len());
    let mut first = None;
    for by in [GroupBy::Day, GroupBy::Session] {
        let (fast, outcome) = with_snapshot(&roots, &options(cache, by));
        let full = full_path(&found, &options(cache, by));
        same(
            &rows(&fast),
            &rows(&full),
            &format!("{by:?} after {outcome:?}"),
        );
        let totals = |r: &UsageReport| BTreeMap::from([(String::new(), Sum::of(&r.totals))]);
        same(&totals(&fast), &totals(&full), "totals");
        assert_eq!(fast.files, full.files);
        assert_eq!(fast.cross_file_duplicates, full.cross_file_duplicates);
        assert_eq!(fast.skipped.len(), full.skipped.len());
        if by == GroupBy::Day {
            same(&rows(&fast), &oracle_by_day(files), "the oracle");
            first = Some(outcome);
        }
    }
    first.unwrap()
}

/// Fails unless the run took the full path.
#[track_caller]
fn assert_rebuilt(outcome: &SnapshotOutcome) {
    assert!(
        matches!(outcome, SnapshotOutcome::Rebuilt { .. }),
        "{outcome:?}"
    );
}

fn snapshot_files(cache: &Path) -> Vec<PathBuf> {
    files_ending(cache, ".snapshot")
}

/// The snapshot's keys files (read only when a file grew).
fn keys_files(cache: &Path) -> Vec<PathBuf> {
    files_ending(cache, ".keys")
}

fn files_ending(cache: &Path, end: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(end))
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    /// Appends the next `n` bytes of a file's stream (creating it if absent).
    Append(usize, usize),
    Delete(usize),
    /// Cuts a file to this share (per mille) of its length.
    Truncate(usize, u16),
    /// Replaces a file by another transcript's first bytes, as many as it had.
    Rewrite(usize),
    /// Damages the snapshot (or with `true` last, its keys file): flips a byte at this share
    /// (per mille) of it, or cuts it.
    Damage(u16, bool, bool),
    Nothing,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..6usize, 1..6000usize).prop_map(|(f, n)| Op::Append(f, n)),
        1 => (0..6usize).prop_map(Op::Delete),
        1 => (0..6usize, 0..1000u16).prop_map(|(f, p)| Op::Truncate(f, p)),
        1 => (0..6usize).prop_map(Op::Rewrite),
        1 => (0..1000u16, any::<bool>(), any::<bool>()).prop_map(|(p, cut, keys)| Op::Damage(p, cut, keys)),
        1 => Just(Op::Nothing),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn the_snapshot_answers_as_the_full_path_and_the_oracle(
        start in proptest::collection::vec(0..8000usize, 6),
        ops in proptest::collection::vec(op(), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        let cache = dir.path().join("cache");
        let streams = streams();
        let rewrite = other();
        // What each file is a prefix of, and whether it exists.
        let mut source: Vec<Vec<u8>> = streams.iter().map(|s| s.2.clone()).collect();
        let path = |i: usize| root.join(streams[i].0);
        for (i, &n) in start.iter().enumerate() {
            std::fs::create_dir_all(path(i).parent().unwrap()).unwrap();
            std::fs::write(path(i), &source[i][..n.min(source[i].len())]).unwrap();
        }
        let present = || -> Vec<(PathBuf, Format)> {
            (0..streams.len())
                .filter(|&i| path(i).exists())
                .map(|i| (std::fs::canonicalize(path(i)).unwrap(), streams[i].1))
                .collect()
        };
        check(&root, &cache, &present());
        for op in ops {
            let mut damaged = false;
            let mut touched = true;
            match op {
                Op::Append(i, n) => {
                    let p = path(i);
                    let have = std::fs::metadata(&p).map_or(0, |m| m.len() as usize);
                    let have = have.min(source[i].len());
                    let more = &source[i][have..(have + n).min(source[i].len())];
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap()
                        .write_all(more).unwrap();
                }
                Op::Delete(i) => {
                    let _ = std::fs::remove_file(path(i));
                }
                Op::Truncate(i, share) => {
                    if let Ok(m) = std::fs::metadata(path(i)) {
                        let to = m.len() * u64::from(share) / 1000;
                        std::fs::OpenOptions::new().write(true).open(path(i)).unwrap()
                            .set_len(to).unwrap();
                    }
                }
                Op::Rewrite(i) => {
                    if let Ok(m) = std::fs::metadata(path(i)) {
                        if streams[i].1 == Format::ClaudeCode {
                            source[i] = rewrite.clone();
                        } else {
                            // Another format's file stays that format: shift its stream.
                            source[i] = source[i][source[i].len() / 3..].to_vec();
                            let cut = source[i].iter().position(|&b| b == b'\n').unwrap() + 1;
                            source[i] = source[i][cut..].to_vec();
                        }
                        let n = (m.len() as usize).min(source[i].len());
                        std::fs::write(path(i), &source[i][..n]).unwrap();
                    }
                }
                Op::Damage(share, cut, keys) => {
                    let files = if keys { keys_files(&cache) } else { snapshot_files(&cache) };
                    for s in files {
                        let mut bytes = std::fs::read(&s).unwrap();
                        let at = bytes.len() * usize::from(share) / 1000;
                        if cut {
                            bytes.truncate(at);
                        } else if let Some(b) = bytes.get_mut(at) {
                            *b ^= 0x5a;
                        }
                        std::fs::write(&s, &bytes).unwrap();
                        // Damaged keys are read, and refused, only when a file grew.
                        damaged = !keys;
                    }
                }
                Op::Nothing => touched = false,
            }
            let outcome = check(&root, &cache, &present());
            if damaged {
                prop_assert!(matches!(outcome, SnapshotOutcome::Rebuilt { .. }), "{outcome:?}");
            }
            if !touched {
                // Nothing changed: a file with a torn last line is looked at again, no more.
                prop_assert!(
                    matches!(outcome, SnapshotOutcome::Current | SnapshotOutcome::CaughtUp { .. }),
                    "{outcome:?}"
                );
            }
        }
    }
}

/// A tree of every stream written whole, read once (the snapshot written).
/// The streams written under a new directory: it, the root, the cache, the files.
fn written_tree() -> (tempfile::TempDir, PathBuf, PathBuf, Vec<(PathBuf, Format)>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let cache = dir.path().join("cache");
    let mut files = Vec::new();
    for (rel, format, bytes) in streams() {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        files.push((std::fs::canonicalize(&p).unwrap(), format));
    }
    (dir, root, cache, files)
}

/// One digit of a token count in `path` changed, its length and mtime kept (the ctime moves).
fn rewrite_a_digit_keeping_mtime(path: &Path) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes
        .windows(16)
        .position(|w| w == b"\"output_tokens\":")
        .unwrap()
        + 16;
    let digit = bytes[at..].iter().position(u8::is_ascii_digit).unwrap() + at;
    bytes[digit] = if bytes[digit] == b'9' {
        b'8'
    } else {
        bytes[digit] + 1
    };
    std::fs::write(path, &bytes).unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
}

fn warm_tree() -> (tempfile::TempDir, PathBuf, PathBuf, Vec<(PathBuf, Format)>) {
    let (dir, root, cache, files) = written_tree();
    assert_rebuilt(&check(&root, &cache, &files));
    (dir, root, cache, files)
}

fn append(path: &Path, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// A Claude Code assistant line of message `id`.
fn assistant(id: &str, request: &str, tokens: u64) -> String {
    format!(
        concat!(
            r#"{{"type":"assistant","timestamp":"2026-02-20T10:00:00.000Z","requestId":"{}","#,
            r#""message":{{"id":"{}","model":"claude-x","usage":{{"input_tokens":{},"#,
            r#""output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}}}}"#,
            "\n"
        ),
        request, id, tokens
    )
}

#[test]
fn a_file_grown_with_new_messages_is_caught_up_from_the_snapshot() {
    let (_dir, root, cache, files) = warm_tree();
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
    let snapshot = snapshot_files(&cache);
    assert_eq!(snapshot.len(), 1);
    let mode = std::fs::metadata(&snapshot[0])
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    append(
        &root.join("p3/own.jsonl"),
        assistant("msg_new_1", "req_new_1", 500).as_bytes(),
    );
    append(
        &root.join("p1/a.jsonl"),
        assistant("msg_new_2", "req_new_2", 700).as_bytes(),
    );
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 2 }
    );
    // A torn line is not counted until it is complete.
    let line = assistant("msg_new_3", "req_new_3", 900);
    let (head, tail) = line.split_at(40);
    append(&root.join("p3/own.jsonl"), head.as_bytes());
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
    append(&root.join("p3/own.jsonl"), tail.as_bytes());
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
    // The same message again in the same file (a streaming update): still the file's own.
    append(
        &root.join("p3/own.jsonl"),
        assistant("msg_new_3", "req_new_3", 950).as_bytes(),
    );
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
}

#[test]
fn damaged_or_missing_keys_are_read_only_when_a_file_grew_and_then_refused() {
    let (_dir, root, cache, files) = warm_tree();
    let keys = keys_files(&cache);
    assert_eq!(keys.len(), 1);
    let good = std::fs::read(&keys[0]).unwrap();
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    std::fs::write(&keys[0], &bad).unwrap();
    // Nothing grew: the keys are not read.
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
    append(
        &root.join("p3/own.jsonl"),
        assistant("msg_k_1", "req_k_1", 300).as_bytes(),
    );
    let outcome = check(&root, &cache, &files);
    assert!(
        matches!(&outcome, SnapshotOutcome::Rebuilt { reason } if reason.contains("keys")),
        "{outcome:?}"
    );
    // The keys written again with the snapshot; then gone altogether.
    assert_ne!(std::fs::read(&keys[0]).unwrap(), bad);
    std::fs::remove_file(&keys[0]).unwrap();
    append(
        &root.join("p1/a.jsonl"),
        assistant("msg_k_2", "req_k_2", 400).as_bytes(),
    );
    assert_rebuilt(&check(&root, &cache, &files));
    append(
        &root.join("p1/a.jsonl"),
        assistant("msg_k_3", "req_k_3", 500).as_bytes(),
    );
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
}

#[test]
fn a_file_grown_with_a_message_another_file_holds_takes_the_full_path() {
    let (_dir, root, cache, files) = warm_tree();
    append(
        &root.join("p3/own.jsonl"),
        assistant("msg_x", "req_x", 5).as_bytes(),
    );
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
    // The same message in a file earlier in path order: it owns the message from now on.
    append(
        &root.join("p0/resumed.jsonl"),
        assistant("msg_x", "req_x", 9).as_bytes(),
    );
    assert_rebuilt(&check(&root, &cache, &files));
    // Two files growing with one new message between them.
    append(
        &root.join("p3/own.jsonl"),
        assistant("msg_y", "req_y", 5).as_bytes(),
    );
    append(
        &root.join("p1/a.jsonl"),
        assistant("msg_y", "req_y", 6).as_bytes(),
    );
    assert_rebuilt(&check(&root, &cache, &files));
    // The copy grows with the next lines of the file it copies: every message is shared.
    let more = generate::transcript(Format::ClaudeCode, 99, 10);
    append(&root.join("p2/copy.jsonl"), &more);
    append(&root.join("p1/a.jsonl"), &more);
    assert_rebuilt(&check(&root, &cache, &files));
}

#[test]
fn an_index_ahead_of_the_snapshot_still_gives_the_new_lines() {
    let (_dir, root, cache, files) = warm_tree();
    let grown = root.join("p3/own.jsonl");
    append(&grown, assistant("msg_ahead", "req_ahead", 4000).as_bytes());
    // A status line (or `transcript`) catches the file's own index up first.
    let o = OpenOptions {
        index_dir: Some(cache.clone()),
        ..OpenOptions::default()
    };
    Transcript::open(&grown, &o).unwrap();
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
}

#[test]
fn a_pi_file_grown_with_new_entries_is_caught_up() {
    let (_dir, root, cache, files) = warm_tree();
    let pi = root.join("pi/s.jsonl");
    let more = generate::transcript(Format::Pi, 77, 10);
    // The generated file's lines after its session header.
    let cut = more.iter().position(|&b| b == b'\n').unwrap() + 1;
    append(&pi, &more[cut..]);
    let outcome = check(&root, &cache, &files);
    assert!(
        matches!(
            outcome,
            SnapshotOutcome::CaughtUp { .. } | SnapshotOutcome::Rebuilt { .. }
        ),
        "{outcome:?}"
    );
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
}

/// A Claude Code session file of its opening user line and an assistant line for each id
/// (the generated transcripts reuse ids from one seed to another).
fn session_of_own(ids: &[&str]) -> String {
    let mut out = String::from(concat!(
        r#"{"parentUuid":null,"isSidechain":false,"type":"user","sessionId":"s-own","#,
        r#""uuid":"u-own","timestamp":"2026-02-20T09:59:00.000Z","#,
        r#""message":{"role":"user","content":"hi"}}"#,
        "\n"
    ));
    for (n, id) in ids.iter().enumerate() {
        out.push_str(&assistant(id, &format!("req_{id}"), 100 * (n as u64 + 1)));
    }
    out
}

#[test]
fn a_file_added_is_read_alone_and_numbered_in_with_the_keys_of_the_files_after_it() {
    let (_dir, root, cache, mut files) = warm_tree();
    let own = root.join("p3/own.jsonl");
    append(&own, assistant("msg_stream", "req_stream", 300).as_bytes());
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
    // Added first in path order: every file after it is numbered again.
    let first = root.join("a0/new.jsonl");
    std::fs::create_dir_all(first.parent().unwrap()).unwrap();
    std::fs::write(&first, session_of_own(&["msg_added_1", "msg_added_2"])).unwrap();
    files.push((std::fs::canonicalize(&first).unwrap(), Format::ClaudeCode));
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
    // A file after it grows with more of a message it holds (a streaming update): the keys,
    // numbered again, must still say that file holds it, and no other.
    append(&own, assistant("msg_stream", "req_stream", 350).as_bytes());
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 1 }
    );
    // A Codex file (no merge keys) added last, and a grown file in the same run.
    let codex = root.join("zz/rollout.jsonl");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(&codex, generate::transcript(Format::Codex, 22, 10)).unwrap();
    files.push((std::fs::canonicalize(&codex).unwrap(), Format::Codex));
    append(
        &first,
        assistant("msg_added_grew", "req_added_grew", 400).as_bytes(),
    );
    assert_eq!(
        check(&root, &cache, &files),
        SnapshotOutcome::CaughtUp { files: 2 }
    );
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
}

#[test]
fn a_file_added_with_a_message_another_file_holds_takes_the_full_path() {
    let (_dir, root, cache, mut files) = warm_tree();
    append(
        &root.join("p3/own.jsonl"),
        assistant("msg_resumed", "req_resumed", 800).as_bytes(),
    );
    check(&root, &cache, &files);
    // A resumed session's new file starts with the messages of the one it resumes.
    let resumed = root.join("p5/resumed.jsonl");
    std::fs::create_dir_all(resumed.parent().unwrap()).unwrap();
    std::fs::write(&resumed, session_of_own(&["msg_resumed"])).unwrap();
    files.push((std::fs::canonicalize(&resumed).unwrap(), Format::ClaudeCode));
    let outcome = check(&root, &cache, &files);
    assert!(
        matches!(&outcome, SnapshotOutcome::Rebuilt { reason } if reason.contains("another file holds")),
        "{outcome:?}"
    );
}

#[test]
fn a_removed_or_a_rewritten_file_and_a_foreign_snapshot_take_the_full_path() {
    let (_dir, root, cache, mut files) = warm_tree();
    let gone = files.pop().unwrap();
    std::fs::remove_file(&gone.0).unwrap();
    assert_rebuilt(&check(&root, &cache, &files));
    std::fs::write(root.join("p3/own.jsonl"), other()).unwrap();
    assert_rebuilt(&check(&root, &cache, &files));
    // Another request's snapshot put in this one's place is refused.
    let mine = snapshot_files(&cache).pop().unwrap();
    let sub = root.join("p1");
    let (found, _) = discover(std::slice::from_ref(&sub));
    let opts = options(&cache, GroupBy::Day);
    assert!(!found.is_empty());
    with_snapshot(std::slice::from_ref(&sub), &opts);
    let theirs = snapshot_files(&cache)
        .into_iter()
        .find(|p| *p != mine)
        .unwrap();
    std::fs::copy(&theirs, &mine).unwrap();
    let outcome = check(&root, &cache, &files);
    match outcome {
        SnapshotOutcome::Rebuilt { reason } => assert!(reason.contains("another request")),
        other => panic!("{other:?}"),
    }
    // Garbage in its place is refused too.
    std::fs::write(&mine, b"not a snapshot at all").unwrap();
    assert_rebuilt(&check(&root, &cache, &files));
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
}

#[test]
fn a_file_that_cannot_be_read_stays_skipped_until_it_can() {
    let (_dir, root, cache, mut files) = warm_tree();
    let bad = root.join("p5/bad.jsonl");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    std::fs::write(&bad, b"{\"neither\":\"format\"}\n").unwrap();
    let roots = [root.clone()];
    let (found, _) = discover(&roots);
    let opts = options(&cache, GroupBy::Day);
    assert!(!found.is_empty());
    let (first, _) = with_snapshot(&roots, &opts);
    let (second, outcome) = with_snapshot(&roots, &opts);
    assert_eq!(first.skipped.len(), 1);
    assert_eq!(second.skipped.len(), 1);
    assert_eq!(outcome, SnapshotOutcome::Current);
    let head = r#"{"parentUuid":null,"type":"user","sessionId":"s","uuid":"u"}"#;
    std::fs::write(
        &bad,
        format!("{head}\n{}", assistant("msg_fixed", "req_fixed", 3)),
    )
    .unwrap();
    files.push((std::fs::canonicalize(&bad).unwrap(), Format::ClaudeCode));
    assert_rebuilt(&check(&root, &cache, &files));
}

#[test]
fn a_settled_file_rewritten_in_place_with_its_mtime_put_back_is_still_seen() {
    let (_dir, root, cache, files) = warm_tree();
    // Once the files have not changed for a while, a run records their stat. Settled means
    // changed 2 s before the stat in whole seconds: over 3 s from any start.
    std::thread::sleep(std::time::Duration::from_millis(3100));
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
    // One digit of a token count changed, the length and the mtime kept: the ctime moves.
    rewrite_a_digit_keeping_mtime(&root.join("p3/own.jsonl"));
    assert_rebuilt(&check(&root, &cache, &files));
}

#[test]
fn a_first_run_over_settled_files_answers_later_runs_and_still_sees_a_rewrite_in_place() {
    let (_dir, root, cache, files) = written_tree();
    // Settled before the first run: it records each stat as the file was opened.
    std::thread::sleep(std::time::Duration::from_millis(3100));
    assert_rebuilt(&check(&root, &cache, &files));
    assert_eq!(check(&root, &cache, &files), SnapshotOutcome::Current);
    // The recorded stat no longer vouches for the file.
    rewrite_a_digit_keeping_mtime(&root.join("p3/own.jsonl"));
    assert_rebuilt(&check(&root, &cache, &files));
}

#[test]
fn a_large_file_gets_no_index_until_it_grows_and_then_one_that_catches_it_up() {
    let (_dir, root, cache, mut files) = written_tree();
    let big = root.join("big/large.jsonl");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    let ids: Vec<String> = (0..5000).map(|i| format!("msg_large_{i:05}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    std::fs::write(&big, session_of_own(&ids)).unwrap();
    assert!(std::fs::metadata(&big).unwrap().len() > UNINDEXED_FILE);
    files.push((std::fs::canonicalize(&big).unwrap(), Format::ClaudeCode));
    let roots = [root.clone()];
    let opts = options(&cache, GroupBy::Day);
    let run = |what: &str| {
        let (report, outcome) = with_snapshot(&roots, &opts);
        same(&rows(&report), &oracle_by_day(&files), what);
        (report, outcome)
    };
    // The first run reads every file whole and gives none an index.
    assert_rebuilt(&run("first").1);
    assert_eq!(files_ending(&cache, ".redb").len(), 0);
    // The large file grows: it gets its index, built from its lines.
    append(
        &big,
        assistant("msg_large_more_1", "req_more_1", 10).as_bytes(),
    );
    let (report, outcome) = run("grown once");
    assert_eq!(outcome, SnapshotOutcome::CaughtUp { files: 1 });
    assert_eq!(report.index_outcomes.get("created"), Some(&1));
    assert_eq!(files_ending(&cache, ".redb").len(), 1);
    // It grows again: the index catches up with the new line alone.
    append(
        &big,
        assistant("msg_large_more_2", "req_more_2", 20).as_bytes(),
    );
    let (report, outcome) = run("grown twice");
    assert_eq!(outcome, SnapshotOutcome::CaughtUp { files: 1 });
    assert_eq!(report.index_outcomes.get("caught_up"), Some(&1));
    // A small file that grows stays without one.
    append(
        &root.join("p3/own.jsonl"),
        assistant("msg_small_more", "req_small_more", 30).as_bytes(),
    );
    let (_, outcome) = run("a small file grown");
    assert_eq!(outcome, SnapshotOutcome::CaughtUp { files: 1 });
    assert_eq!(files_ending(&cache, ".redb").len(), 1);
}
