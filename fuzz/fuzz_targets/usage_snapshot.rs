//! Arbitrary bytes as the run-level usage snapshot, or its keys file, in the cache directory,
//! beside a small tree of transcripts (two Claude Code files sharing messages, one of its own, a
//! Codex and a pi file).
//!
//! Input: the first byte picks a mode (its low six bits, mod 3), the keys file instead of the
//! snapshot (bit 6) and whether a file grows first (bit 7); the rest is
//! * mode 0: the whole snapshot file, raw;
//! * mode 1: 4-byte patches applied to the real snapshot of the tree (a 24-bit little-endian
//!   offset modulo the size and a byte to XOR in; a 0 byte truncates there instead);
//! * mode 2: the same patches, then the header's length and checksum made right again, so
//!   the fuzzer reaches the payload's decoding and shape checks.
//!
//! Checks: `usage` answered from the snapshot never panics. In modes 0 and 1 (a file that
//! is not exactly the one written) its answer equals the full path's (`usage` without the
//! snapshot), and a damaged snapshot is rebuilt, as are damaged keys when a file grew (the
//! only time they are read). Mode 2 can forge a snapshot that decodes and holds together (a tally changed,
//! say): like any cache file it is then believed, so only the absence of panics is checked.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use agentlog::transcript::{Format, GroupBy, OpenOptions, SnapshotOutcome, UsageOptions, usage};
use libfuzzer_sys::fuzz_target;

#[path = "../common/transcripts.rs"]
mod common;
#[path = "../../tests/common/transcript_gen.rs"]
mod generate;
#[path = "../../tests/common/transcript_oracle.rs"]
mod oracle;

struct Fixture {
    root: PathBuf,
    /// The transcripts as first written.
    files: Vec<(PathBuf, Vec<u8>)>,
    /// The snapshot file of the tree, and its bytes.
    snapshot: PathBuf,
    bytes: Vec<u8>,
    /// The snapshot's keys file, and its bytes.
    keys: PathBuf,
    key_bytes: Vec<u8>,
}

fn options() -> UsageOptions {
    UsageOptions {
        open: OpenOptions {
            index_dir: Some(common::workdir().join("usage-cache")),
            repair_budget: std::time::Duration::from_millis(200),
            ..OpenOptions::default()
        },
        by: GroupBy::Session,
        threads: 1,
        ..UsageOptions::default()
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = common::workdir().join("usage-tree");
        let shared = generate::transcript(Format::ClaudeCode, 3, 20);
        let trees = [
            ("p1/a.jsonl", shared.clone()),
            ("p2/copy.jsonl", shared),
            (
                "p3/own.jsonl",
                generate::transcript(Format::ClaudeCode, 4, 20),
            ),
            ("codex/r.jsonl", generate::transcript(Format::Codex, 5, 20)),
            ("pi/s.jsonl", generate::transcript(Format::Pi, 6, 20)),
        ];
        let mut files = Vec::new();
        for (rel, bytes) in trees {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
            files.push((path, bytes));
        }
        usage(std::slice::from_ref(&root), &options(), &|_, _| {});
        let dir = options().open.index_dir.unwrap();
        let snapshot = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".snapshot"))
            .expect("the first run writes a snapshot");
        let bytes = std::fs::read(&snapshot).unwrap();
        let keys = snapshot.with_extension("keys");
        let key_bytes = std::fs::read(&keys).expect("the first run writes the keys");
        Fixture {
            root,
            files,
            snapshot,
            bytes,
            keys,
            key_bytes,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let mode = (selector & 0x3f) % 3;
    let keys = selector & 0x40 != 0;
    let grows = selector & 0x80 != 0;
    let fixture = fixture();
    let original = if keys {
        &fixture.key_bytes
    } else {
        &fixture.bytes
    };
    let file = if mode == 0 {
        rest.to_vec()
    } else {
        let mut file = original.clone();
        for patch in rest.chunks_exact(4) {
            if file.is_empty() {
                break;
            }
            let at = (u32::from_le_bytes([patch[0], patch[1], patch[2], 0]) as usize) % file.len();
            match patch[3] {
                0 => file.truncate(at),
                x => file[at] ^= x,
            }
        }
        if mode == 2 && file.len() >= 24 {
            let payload = file[24..].to_vec();
            file[12..20].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            file[20..24].copy_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        }
        file
    };
    for (path, bytes) in &fixture.files {
        std::fs::write(path, bytes).unwrap();
    }
    if grows {
        // The file of its own grows with its next lines: the warm path catches it up.
        let (path, bytes) = &fixture.files[2];
        let more = generate::transcript(Format::ClaudeCode, 40, 5);
        let mut grown = bytes.clone();
        grown.extend_from_slice(&more[more.len() / 2..]);
        std::fs::write(path, grown).unwrap();
    }
    let (snapshot, key_file) = if keys {
        (&fixture.bytes, &file)
    } else {
        (&file, &fixture.key_bytes)
    };
    std::fs::write(&fixture.snapshot, snapshot).unwrap();
    std::fs::write(&fixture.keys, key_file).unwrap();
    let roots = std::slice::from_ref(&fixture.root);
    let fast = usage(roots, &options(), &|_, _| {});
    let outcome = fast.snapshot.clone();
    if mode == 2 {
        return;
    }
    let full_options = UsageOptions {
        snapshot: false,
        ..options()
    };
    let full = usage(roots, &full_options, &|_, _| {});
    // Every figure, costs included (exact units), row by row.
    assert_eq!(fast.rows, full.rows, "after {outcome:?}");
    assert_eq!(fast.totals, full.totals);
    assert_eq!(fast.cross_file_duplicates, full.cross_file_duplicates);
    if file != *original && (grows || !keys) {
        assert!(
            matches!(outcome, SnapshotOutcome::Rebuilt { .. }),
            "a changed snapshot or keys file was believed: {outcome:?}"
        );
    }
});
