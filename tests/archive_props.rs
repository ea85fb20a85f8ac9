//! The archive under random histories of a transcript: appends in pieces, torn tails, cuts at
//! any byte and rewrites, an archive run between any two. The oracle: the complete lines the
//! file held at each run. Every version reads back whole, byte-identical to what some run
//! archived (no line twice, none stitched from two versions), and what every run saw is the
//! start of some version (nothing lost); the latest version is the file's complete lines.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use agentlog::archive::{Archive, ArchiveOptions, archive};
use proptest::prelude::*;

/// A Claude Code-looking line, told apart by `i`.
fn line(i: u32) -> Vec<u8> {
    format!(
        "{{\"type\":\"assistant\",\"sessionId\":\"s\",\"uuid\":\"u{i}\",\"parentUuid\":null,\"timestamp\":\"2026-01-01T00:00:00Z\",\"message\":{{\"id\":\"m{i}\",\"usage\":{{\"input_tokens\":{i}}}}}}}\n"
    )
    .into_bytes()
}

#[derive(Clone, Debug)]
enum Step {
    /// Appends this many lines, the last cut after this many bytes (a torn tail).
    Append(u8, Option<u8>),
    /// Cuts the file to this share (in 256ths) of its length: at any byte.
    Cut(u8),
    /// Replaces the file with this many new lines.
    Rewrite(u8),
    /// Runs the archive.
    Run,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u8..6, proptest::option::of(any::<u8>())).prop_map(|(n, t)| Step::Append(n, t)),
        1 => any::<u8>().prop_map(Step::Cut),
        1 => (1u8..5).prop_map(Step::Rewrite),
        3 => Just(Step::Run),
    ]
}

/// The complete lines of `bytes`.
fn complete(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    &bytes[..end]
}

fn run(file: &Path, dir: &Path) {
    let options = ArchiveOptions {
        dir: Some(dir.to_path_buf()),
        ..ArchiveOptions::default()
    };
    archive(&[file.to_path_buf()], &options, &|_, _| {}).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_version_restores_what_was_archived(steps in proptest::collection::vec(step(), 1..24)) {
        let root = tempfile::tempdir().unwrap();
        let root_path = std::fs::canonicalize(root.path()).unwrap();
        let file = root_path.join("proj").join("s.jsonl");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let dir = root_path.join("archive");
        let mut content: Vec<u8> = Vec::new();
        let mut next = 0u32;
        let mut seen: Vec<Vec<u8>> = Vec::new();
        for s in steps.iter().chain([&Step::Run]) {
            match s {
                Step::Append(n, torn) => {
                    // A torn tail left by an earlier step is completed first, as a writer would.
                    if !content.is_empty() && content.last() != Some(&b'\n') {
                        content.push(b'\n');
                    }
                    for k in 0..*n {
                        let mut l = line(next);
                        next += 1;
                        if k + 1 == *n && let Some(t) = torn {
                            l.truncate(usize::from(*t) % l.len());
                        }
                        content.extend_from_slice(&l);
                    }
                }
                Step::Cut(share) => {
                    let at = content.len() * usize::from(*share) / 256;
                    content.truncate(at);
                }
                Step::Rewrite(n) => {
                    content.clear();
                    next += 1000;
                    for _ in 0..*n {
                        content.extend_from_slice(&line(next));
                        next += 1;
                    }
                }
                Step::Run => {
                    std::fs::write(&file, &content).unwrap();
                    run(&file, &dir);
                    let c = complete(&content);
                    if !c.is_empty() {
                        seen.push(c.to_vec());
                    }
                }
            }
        }
        let archive = Archive::open(&dir).unwrap();
        let versions = archive.versions(&file);
        prop_assert_eq!(versions.is_empty(), seen.is_empty());
        let mut restored = Vec::new();
        for v in &versions {
            let read = archive.read(&file, Some(*v)).unwrap();
            prop_assert!(read.damage.is_empty(), "{:?}", read.damage);
            // Byte-identical to what one run archived: no line twice, none from elsewhere.
            prop_assert!(seen.contains(&read.bytes), "version {} holds bytes no run saw", v);
            restored.push(read.bytes);
        }
        // Nothing lost: what every run saw starts some version.
        for s in &seen {
            prop_assert!(restored.iter().any(|r| r.starts_with(s)), "a run's lines were lost");
        }
        if let (Some(last), Some(latest)) = (seen.last(), restored.last()) {
            prop_assert_eq!(last, latest);
        }
        // Versions are numbered from 1, ascending.
        prop_assert!(versions.iter().enumerate().all(|(i, v)| *v as usize == i + 1));
    }
}
