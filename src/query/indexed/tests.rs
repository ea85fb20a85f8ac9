//! The indexed source against the plain scanner, and its cache of validated sessions.

use std::fmt::Write as _;
use std::path::Path;
use std::time::UNIX_EPOCH;

use super::*;

const TYPES: [&str; 3] = ["turn/start", "step/start", "turn/end"];

/// A session log of `events` events whose texts are `letter`s. Any letter but `a` swaps
/// `turn/start` and `step/start`, which keeps every line's length.
fn log_text(id: &str, events: u64, letter: char) -> String {
    let swap = usize::from(letter != 'a');
    let header = serde_json::to_string(&SessionHeader::new(id, 1)).unwrap_or_default();
    let mut text = format!("{header}\n");
    for seq in 0..events {
        let kind = match (seq % 3) as usize {
            kind @ (0 | 1) => kind ^ swap,
            kind => kind,
        };
        let data = match TYPES[kind] {
            "turn/end" => r#"{"turn":1,"reason":{"kind":"completed"}}"#.to_owned(),
            _ => format!(
                "{{\"turn\":1,\"note\":\"{}\"}}",
                letter.to_string().repeat(8)
            ),
        };
        writeln!(
            text,
            "{{\"type\":\"{}\",\"seq\":{seq},\"time\":{},\"data\":{data}}}",
            TYPES[kind],
            1000 + seq,
        )
        .unwrap();
    }
    text
}

fn store_with(dir: &Path, id: &str, text: &str) -> PathBuf {
    let session = dir.join(id);
    std::fs::create_dir_all(&session).unwrap();
    let log = session.join("events.jsonl");
    std::fs::write(&log, text).unwrap();
    log
}

/// A source that keeps every session at once, whatever its age.
fn eager(root: &Path) -> IndexedSource {
    IndexedSource {
        settled: Duration::ZERO,
        ..IndexedSource::new(root)
    }
}

/// A store with session `s` of `events` events, read once by an [`eager`] source, which
/// keeps it.
fn kept_session(events: u64) -> (tempfile::TempDir, PathBuf, IndexedSource) {
    let dir = tempfile::tempdir().unwrap();
    let log = store_with(dir.path(), "s", &log_text("s", events, 'a'));
    let source = eager(dir.path());
    agrees(&source, "s");
    assert_eq!(kept(&source), ["s"]);
    (dir, log, source)
}

fn kept(source: &IndexedSource) -> Vec<String> {
    source
        .cache
        .lock()
        .iter()
        .map(|(id, _)| id.clone())
        .collect()
}

/// The indexed reads of `id` equal the plain scanner's.
fn agrees(source: &IndexedSource, id: &str) {
    let plain = JsonlSource::new(source.root.clone());
    assert_eq!(
        source.read_header(id).unwrap(),
        plain.read_header(id).unwrap()
    );
    assert_eq!(source.read_all(id).unwrap(), plain.read_all(id).unwrap());
    assert_eq!(
        source.read_range(id, 2, 6).unwrap(),
        plain.read_range(id, 2, 6).unwrap()
    );
    for types in [&["turn/end"][..], &["turn/start"]] {
        assert_eq!(
            source.read_types(id, types).unwrap(),
            plain.read_types(id, types).unwrap()
        );
    }
}

#[test]
fn a_kept_session_answers_like_a_fresh_read_after_every_change() {
    let (dir, log, source) = kept_session(10);
    // Appended to: longer.
    let longer = log_text("s", 14, 'a');
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let appended = longer.get(log_text("s", 10, 'a').len()..).unwrap();
    std::io::Write::write_all(&mut file, appended.as_bytes()).unwrap();
    agrees(&source, "s");
    assert_eq!(source.read_all("s").unwrap().events.len(), 14);
    // Replaced by another file (another inode) of another length.
    let replacement = dir.path().join("replacement");
    std::fs::write(&replacement, log_text("s", 5, 'b')).unwrap();
    std::fs::rename(&replacement, &log).unwrap();
    agrees(&source, "s");
    assert_eq!(source.read_all("s").unwrap().events.len(), 5);
    // Gone.
    std::fs::remove_file(&log).unwrap();
    assert!(matches!(source.read_all("s"), Err(SourceError::NotFound)));
    assert!(kept(&source).is_empty());
}

#[test]
fn a_same_length_rewrite_of_a_settled_log_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let log = store_with(dir.path(), "s", &log_text("s", 10, 'a'));
    let source = IndexedSource {
        settled: Duration::from_millis(50),
        ..IndexedSource::new(dir.path())
    };
    std::thread::sleep(Duration::from_millis(120));
    agrees(&source, "s");
    assert_eq!(kept(&source), ["s"]);
    // Same length, other types and texts, in place: only the ctime tells.
    let rewritten = log_text("s", 10, 'z');
    assert_eq!(rewritten.len(), log_text("s", 10, 'a').len());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|mut f| std::io::Write::write_all(&mut f, rewritten.as_bytes()))
        .unwrap();
    agrees(&source, "s");
    let notes = source.read_all("s").unwrap().events;
    assert!(
        notes
            .iter()
            .all(|e| e.event_type == "turn/end" || e.data["note"] == "zzzzzzzz"),
        "{notes:?}"
    );
}

#[test]
fn a_log_changed_just_before_it_was_read_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    store_with(dir.path(), "s", &log_text("s", 10, 'a'));
    let source = IndexedSource {
        settled: Duration::from_hours(1),
        ..IndexedSource::new(dir.path())
    };
    agrees(&source, "s");
    assert!(kept(&source).is_empty());
}

#[test]
fn a_damaged_kept_index_is_opened_again_and_still_answers() {
    let (_dir, log, source) = kept_session(300);
    let index = LogPaths::for_log_file(log).index;
    // Overwritten in place, under the kept handle.
    let len = std::fs::metadata(&index).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, &vec![0x5a; usize::try_from(len).unwrap()])
        })
        .unwrap();
    agrees(&source, "s");
    // Deleted: the kept handle still reads the file it validated.
    std::fs::remove_file(&index).unwrap();
    agrees(&source, "s");
}

#[test]
fn a_kept_index_does_not_block_the_sessions_writer() {
    let (_dir, log, source) = kept_session(10);
    let options = crate::index::WriterOptions {
        sync: crate::log::SyncPolicy::None,
        index: session_index_options(),
        index_wait: Duration::ZERO,
        ..crate::index::WriterOptions::default()
    };
    let paths = LogPaths::for_log_file(log);
    let mut writer = crate::index::Writer::open(&paths, options).unwrap();
    let next = log_text("s", 11, 'a');
    let line = next.lines().last().unwrap_or_default();
    writer.append_json(line.as_bytes()).unwrap();
    writer.close().unwrap();
    agrees(&source, "s");
    assert_eq!(source.read_all("s").unwrap().events.len(), 11);
}

#[test]
fn at_most_the_newest_sessions_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (0..CACHED_SESSIONS + 3).map(|i| format!("s{i}")).collect();
    for id in &ids {
        store_with(dir.path(), id, &log_text(id, 4, 'a'));
    }
    let source = eager(dir.path());
    for id in &ids {
        agrees(&source, id);
    }
    let newest: Vec<String> = ids.iter().rev().take(CACHED_SESSIONS).cloned().collect();
    assert_eq!(kept(&source), newest);
    // A hit moves to the front.
    agrees(&source, &newest[3]);
    assert_eq!(kept(&source)[0], newest[3]);
}

#[test]
fn a_stamp_is_settled_only_once_old_enough() {
    let at = |secs: i64| Stamp {
        dev: 1,
        ino: 2,
        size: 3,
        mtime: secs * 1_000_000_000,
        ctime: secs * 1_000_000_000 + 500,
    };
    let now = UNIX_EPOCH + Duration::from_secs(1_000);
    assert!(at(997).settled_at(now, SETTLED));
    assert!(at(998).settled_at(now, Duration::from_secs(1)));
    assert!(!at(999).settled_at(now, SETTLED));
    assert!(!at(1_001).settled_at(now, SETTLED));
    assert!(!at(-5).settled_at(now, SETTLED));
}

/// A legacy message ends the index's clean region (its reading may need the lines before it), so
/// the source judges such a log whole, as the plain scanner does: the same committed events and
/// torn tail, the same refusals. A current log has no break and is not judged whole.
#[test]
fn a_log_with_a_legacy_message_is_judged_whole_like_the_scanner() {
    let current = log_text("s", 9, 'a');
    let legacy = r#"{"type":"user/message","seq":9,"time":1,"data":{"content":[],"source":{"kind":"user"}},"surfaceOp":"append"}"#;
    let end =
        r#"{"type":"turn/end","seq":10,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
    let prune = r#"{"type":"tool/result","seq":11,"time":1,"data":{"callId":"c","content":[],"isError":false},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]}"#;
    let cases = [
        ("clean", format!("{current}{legacy}\n{end}\n"), Some(11)),
        (
            "torn tail",
            format!("{current}{legacy}\n{end}\n{{not json\n"),
            Some(11),
        ),
        (
            "acknowledged damage",
            format!("{current}{legacy}\n{{not json\n{end}\n"),
            None,
        ),
        (
            "prune with no id to inherit",
            format!("{current}{legacy}\n{end}\n{prune}\n"),
            None,
        ),
    ];
    for (name, text, events) in cases {
        let dir = tempfile::tempdir().unwrap();
        let log = store_with(dir.path(), "s", &text);
        let index = Index::open(&LogPaths::for_log_file(log), &session_index_options()).unwrap();
        assert_eq!(
            index.state().first_break,
            Some(current.len() as u64),
            "{name}"
        );
        drop(index);
        let source = eager(dir.path());
        let plain = JsonlSource::new(dir.path());
        // Twice: the second read is the kept session's.
        for _ in 0..2 {
            match events {
                Some(n) => {
                    agrees(&source, "s");
                    assert_eq!(source.read_all("s").unwrap().events.len(), n, "{name}");
                }
                None => {
                    for read in [source.read_range("s", 0, 0), plain.read_range("s", 0, 0)] {
                        assert!(
                            matches!(read, Err(SourceError::Corrupt { .. })),
                            "{name}: {read:?}"
                        );
                    }
                }
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let log = store_with(dir.path(), "s", &current);
    let index = Index::open(&LogPaths::for_log_file(log), &session_index_options()).unwrap();
    assert_eq!(index.state().first_break, None);
}
