//! The per-transcript index: its outcomes, damage of every kind, the cache's permissions,
//! never writing beside the transcript, read-only and unwritable caches, subagents.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use agentlog::index::{IndexOutcome, ReadOnlyReason, StaleReason};
use agentlog::log::CoverageCheck;
use agentlog::transcript::{
    Format, OpenOptions, Transcript, fold_bytes, index_file, with_subagents,
};

struct Case {
    dir: tempfile::TempDir,
    path: PathBuf,
    cache: PathBuf,
}

impl Case {
    fn new(bytes: &[u8]) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let cache = dir.path().join("cache");
        Case { dir, path, cache }
    }

    fn options(&self) -> OpenOptions {
        OpenOptions {
            index_dir: Some(self.cache.clone()),
            load_dedup: true,
            ..OpenOptions::default()
        }
    }

    fn open(&self) -> Transcript {
        Transcript::open(&self.path, &self.options()).unwrap()
    }

    fn index(&self) -> PathBuf {
        index_file(&self.cache, &std::fs::canonicalize(&self.path).unwrap())
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }
}

fn agrees(t: &Transcript, bytes: &[u8]) {
    let expected = oracle::expected(t.format, bytes);
    let observed = oracle::observed(&t.summary, t.buckets().unwrap_or_default());
    assert_eq!(observed, expected, "{}", t.outcome);
}

fn claude(seed: u64, steps: usize) -> Vec<u8> {
    generate::transcript(Format::ClaudeCode, seed, steps)
}

#[test]
fn a_damaged_index_file_is_rebuilt_whatever_the_damage() {
    let other = Case::new(&claude(9, 40));
    other.open();
    for damage in [
        "random",
        "truncated",
        "another transcript's",
        "empty",
        "zeroed",
    ] {
        let case = Case::new(&claude(1, 60));
        case.open();
        let index = case.index();
        let good = std::fs::read(&index).unwrap();
        let bad = match damage {
            "random" => (0..good.len())
                .map(|i| u8::try_from(i * 7919 % 251).unwrap())
                .collect(),
            "truncated" => good[..good.len() / 2].to_vec(),
            "another transcript's" => std::fs::read(other.index()).unwrap(),
            "empty" => Vec::new(),
            _ => vec![0; good.len()],
        };
        std::fs::write(&index, &bad).unwrap();
        let t = case.open();
        match (&t.outcome, damage) {
            (IndexOutcome::Created { .. }, "empty")
            | (IndexOutcome::Rebuilt { .. }, "random" | "truncated" | "zeroed") => {}
            (
                IndexOutcome::Rebuilt {
                    reason: StaleReason::Inconsistent { detail },
                    ..
                },
                "another transcript's",
            ) => {
                assert!(detail.contains("another transcript"), "{detail}");
            }
            (other, _) => panic!("{damage}: {other}"),
        }
        agrees(&t, &case.bytes());
        assert_eq!(case.open().outcome, IndexOutcome::Fresh, "{damage}");
        assert!(
            Transcript::verify(&case.path, &case.options())
                .unwrap()
                .is_valid(),
            "{damage}"
        );
    }
}

#[test]
fn another_format_or_line_limit_rebuilds_the_index() {
    let case = Case::new(&claude(2, 30));
    case.open();
    let as_codex = OpenOptions {
        format: Some(Format::Codex),
        ..case.options()
    };
    let t = Transcript::open(&case.path, &as_codex).unwrap();
    assert!(
        matches!(
            t.outcome,
            IndexOutcome::Rebuilt {
                reason: StaleReason::ProfileChanged,
                ..
            }
        ),
        "{}",
        t.outcome
    );
    assert!(t.summary.lifetime.is_empty());
    let t = case.open();
    assert!(matches!(
        t.outcome,
        IndexOutcome::Rebuilt {
            reason: StaleReason::ProfileChanged,
            ..
        }
    ));
    let small = OpenOptions {
        max_line: 100,
        ..case.options()
    };
    let t = Transcript::open(&case.path, &small).unwrap();
    assert!(matches!(
        t.outcome,
        IndexOutcome::Rebuilt {
            reason: StaleReason::ProfileChanged,
            ..
        }
    ));
    assert!(t.summary.diagnostics.too_long_lines > 0);
    assert_eq!(t.coverage.end, case.bytes().len() as u64);
}

#[test]
fn an_index_of_an_earlier_format_is_rebuilt() {
    let (path, _) = fixtures::all()
        .into_iter()
        .find(|(_, f)| *f == Format::Pi)
        .unwrap();
    let case = Case::new(&std::fs::read(path).unwrap());
    assert!(matches!(case.open().outcome, IndexOutcome::Created { .. }));
    // Format 1 kept no usage under a pi entry id: its rows cannot serve a merge of files.
    {
        let meta: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
        let db = redb::Database::open(case.index()).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(meta)
            .unwrap()
            .insert("format", 1u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let t = case.open();
    match &t.outcome {
        IndexOutcome::Rebuilt {
            reason: StaleReason::FormatChanged { found, expected },
            ..
        } => assert!(*found == 1 && *expected > 1, "{}", t.outcome),
        other => panic!("{other}"),
    }
    agrees(&t, &case.bytes());
    assert!(matches!(case.open().outcome, IndexOutcome::Fresh));
}

#[test]
fn a_torn_last_line_is_counted_once_complete() {
    let whole = claude(3, 40);
    let last_start = whole[..whole.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let case = Case::new(&whole[..last_start]);
    let before = case.open();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&case.path)
        .unwrap();
    // The agent is still writing the last line.
    file.write_all(&whole[last_start..whole.len() - 5]).unwrap();
    let torn = case.open();
    assert_eq!(torn.outcome, IndexOutcome::Fresh);
    assert_eq!(torn.summary, before.summary);
    assert_eq!(torn.coverage.end, last_start as u64);
    file.write_all(&whole[whole.len() - 5..]).unwrap();
    let done = case.open();
    assert_eq!(
        done.outcome,
        IndexOutcome::CaughtUp {
            bytes: (whole.len() - last_start) as u64,
            events: 1
        }
    );
    agrees(&done, &whole);
}

#[test]
fn an_unsynced_session_of_another_boot_is_rebuilt_one_of_this_boot_at_the_next_write() {
    let case = Case::new(&claude(4, 30));
    case.open();
    let marker = PathBuf::from(format!("{}.unsynced", case.index().display()));
    assert!(!marker.exists(), "a finished session leaves no marker");
    std::fs::write(&marker, "another-boot-id").unwrap();
    let t = case.open();
    assert!(
        matches!(
            t.outcome,
            IndexOutcome::Rebuilt {
                reason: StaleReason::CommitInterrupted,
                ..
            }
        ),
        "{}",
        t.outcome
    );
    assert!(!marker.exists());
    agrees(&t, &case.bytes());
    if let Ok(boot) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") {
        // A process of this boot died mid-session: what it committed can be read...
        std::fs::write(&marker, boot.trim()).unwrap();
        assert_eq!(case.open().outcome, IndexOutcome::Fresh);
        // ...but the file is not written again (it may be one that made redb abort).
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&case.path)
            .unwrap();
        file.write_all(&claude(13, 3)).unwrap();
        let t = case.open();
        assert!(
            matches!(
                t.outcome,
                IndexOutcome::Rebuilt {
                    reason: StaleReason::CommitInterrupted,
                    ..
                }
            ),
            "{}",
            t.outcome
        );
        assert!(!marker.exists());
        agrees(&t, &case.bytes());
    }
}

#[test]
fn the_cache_is_private_and_nothing_is_written_beside_the_transcript() {
    let case = Case::new(&claude(5, 30));
    let listing = |dir: &Path| {
        let mut names: Vec<(String, i64)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().mtime_nsec(),
                )
            })
            .collect();
        names.sort();
        names
    };
    // The transcript's own directory, read-only as the agent's files are to us.
    let home = case.dir.path().join("projects");
    std::fs::create_dir(&home).unwrap();
    let path = home.join("session.jsonl");
    std::fs::rename(&case.path, &path).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = (
        listing(&home),
        std::fs::metadata(&home).unwrap().mtime_nsec(),
    );
    let cache = case.dir.path().join("deep/er/cache");
    let options = OpenOptions {
        index_dir: Some(cache.clone()),
        ..OpenOptions::default()
    };
    let mut transcript = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for round in 0..3 {
        let t = Transcript::open(&path, &options).unwrap();
        assert!(t.outcome.code() != "read_only", "{}", t.outcome);
        let index = t.index.clone().unwrap();
        assert!(index.starts_with(&cache));
        assert_eq!(std::fs::metadata(&index).unwrap().mode() & 0o777, 0o600);
        for dir in [
            case.dir.path().join("deep"),
            case.dir.path().join("deep/er"),
            cache.clone(),
        ] {
            assert_eq!(
                std::fs::metadata(&dir).unwrap().mode() & 0o777,
                0o700,
                "{dir:?}"
            );
        }
        transcript.write_all(&claude(round, 3)).unwrap();
    }
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    let after_listing = listing(&home);
    assert_eq!(after_listing.len(), 1);
    assert_eq!(after_listing[0].0, before.0[0].0);
    assert_eq!(std::fs::metadata(&home).unwrap().mtime_nsec(), before.1);
}

#[test]
fn an_unwritable_cache_or_read_only_request_still_answers_right() {
    let case = Case::new(&claude(6, 30));
    let bytes = case.bytes();
    // A cache "directory" under a plain file can never be created.
    let blocker = case.dir.path().join("blocker");
    std::fs::write(&blocker, b"").unwrap();
    let unwritable = OpenOptions {
        index_dir: Some(blocker.join("cache")),
        load_dedup: true,
        ..OpenOptions::default()
    };
    let t = Transcript::open(&case.path, &unwritable).unwrap();
    assert!(
        matches!(
            &t.outcome,
            IndexOutcome::ReadOnly {
                why: ReadOnlyReason::NotWritable(_),
                ..
            }
        ),
        "{}",
        t.outcome
    );
    agrees(&t, &bytes);

    let read_only = OpenOptions {
        read_only: true,
        ..case.options()
    };
    let t = Transcript::open(&case.path, &read_only).unwrap();
    assert!(matches!(
        &t.outcome,
        IndexOutcome::ReadOnly {
            why: ReadOnlyReason::Requested,
            ..
        }
    ));
    assert!(!case.cache.exists(), "a read-only open created the cache");
    agrees(&t, &bytes);
    case.open();
    assert_eq!(
        Transcript::open(&case.path, &read_only).unwrap().outcome,
        IndexOutcome::Fresh
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(&case.path)
        .unwrap()
        .write_all(&claude(7, 5))
        .unwrap();
    let t = Transcript::open(&case.path, &read_only).unwrap();
    assert!(
        matches!(&t.outcome, IndexOutcome::ReadOnly { why: ReadOnlyReason::Requested, tail_events, .. } if *tail_events > 0)
    );
    agrees(&t, &case.bytes());
}

#[test]
fn a_rewrite_between_the_windows_is_found_by_the_deep_check() {
    let bytes = claude(8, 600);
    assert!(bytes.len() > 400_000);
    let case = Case::new(&bytes);
    case.open();
    let mut changed = bytes.clone();
    let middle = changed.len() / 2;
    let at = middle
        + changed[middle..]
            .iter()
            .position(u8::is_ascii_digit)
            .unwrap();
    changed[at] = if changed[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&case.path, &changed).unwrap();
    assert_eq!(case.open().outcome, IndexOutcome::Fresh);
    let check = Transcript::verify(&case.path, &case.options()).unwrap();
    assert_eq!(
        check.coverage,
        Some(CoverageCheck::BodyChanged {
            len: bytes.len() as u64
        })
    );
    assert!(!check.is_valid());
}

#[test]
fn subagents_count_with_their_session_each_message_once() {
    let data = fixtures::data_dir().join("claude-code");
    for session in [
        "258c7280-ae70-4798-800f-63464d01a85d",
        "4d5611e5-241a-462a-8d15-5122611a9569",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join(format!("{session}.jsonl"));
        std::fs::copy(data.join(format!("{session}.jsonl")), &main).unwrap();
        let subs = dir.path().join(session).join("subagents");
        std::fs::create_dir_all(&subs).unwrap();
        let mut all = std::fs::read(&main).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(data.join(session).join("subagents"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for sub in &names {
            std::fs::copy(sub, subs.join(sub.file_name().unwrap())).unwrap();
            all.extend(std::fs::read(sub).unwrap());
        }
        // The 2.0 layout beside the session: a file of this session, and one of another.
        let beside = claude(11, 10);
        let stamped = String::from_utf8(beside)
            .unwrap()
            .replace("\"s1\"", &format!("\"{session}\""));
        std::fs::write(dir.path().join("agent-beside.jsonl"), &stamped).unwrap();
        all.extend(stamped.as_bytes());
        std::fs::write(dir.path().join("agent-other.jsonl"), claude(12, 10)).unwrap();
        let options = OpenOptions {
            index_dir: Some(dir.path().join("cache")),
            ..OpenOptions::default()
        };
        let found = with_subagents(&main, &options).unwrap();
        assert_eq!(found.subagents.len(), names.len() + 1, "{session}");
        let expected = oracle::expected(Format::ClaudeCode, &all).lifetime;
        assert_eq!(oracle::Sum::of(&found.lifetime), expected, "{session}");
        assert!(found.lifetime.messages > found.main.summary.lifetime.messages);
        assert_eq!(
            found.main.summary,
            *fold_bytes(Format::ClaudeCode, &std::fs::read(&main).unwrap()).summary()
        );
    }
}

/// A subagent file that repeats messages of its session (the same ids and requests): each is
/// counted once, whether the session's index is built fresh, warm, or caught up after an
/// append; only the shared ids are looked up in the session's index.
#[test]
fn subagents_sharing_messages_with_their_session_count_them_once() {
    for seed in 0..6u64 {
        let dir = tempfile::tempdir().unwrap();
        let whole = claude(40 + seed, 60);
        let lines: Vec<&[u8]> = whole.split_inclusive(|&b| b == b'\n').collect();
        let half = lines.len() / 2;
        let main = dir.path().join("s1.jsonl");
        std::fs::write(&main, lines[..half].concat()).unwrap();
        let subs = dir.path().join("s1").join("subagents");
        std::fs::create_dir_all(&subs).unwrap();
        // The subagent repeats every third line of the session's first half, and has its own.
        let mut sub: Vec<u8> = lines[..half]
            .iter()
            .step_by(3)
            .copied()
            .collect::<Vec<_>>()
            .concat();
        sub.extend(claude(90 + seed, 8));
        std::fs::write(subs.join("agent-a.jsonl"), &sub).unwrap();
        let options = OpenOptions {
            index_dir: Some(dir.path().join("cache")),
            ..OpenOptions::default()
        };
        for round in 0..3 {
            if round == 2 {
                // The session grows: its index is caught up, the lookups see the new lines.
                let mut grown = lines[..half].concat();
                grown.extend(lines[half..].concat());
                std::fs::write(&main, &grown).unwrap();
            }
            let main_bytes = std::fs::read(&main).unwrap();
            let mut all = main_bytes.clone();
            all.extend(&sub);
            let found = with_subagents(&main, &options).unwrap();
            let expected = oracle::expected(Format::ClaudeCode, &all).lifetime;
            assert_eq!(
                oracle::Sum::of(&found.lifetime),
                expected,
                "seed {seed} round {round}"
            );
            let alone = oracle::expected(Format::ClaudeCode, &main_bytes).lifetime;
            assert_eq!(oracle::Sum::of(&found.main.summary.lifetime), alone);
        }
    }
}
