//! Transcripts: the readers and the per-transcript index against the naive oracle, on the real
//! fixtures and on generated transcripts.
// Helpers here are part of the tests: a failed step fails the test that called it; seeds are
// small, so their casts are exact.
#![allow(clippy::expect_used, clippy::cast_possible_truncation)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::path::Path;

use agentlog::index::IndexOutcome;
use agentlog::transcript::{Format, OpenOptions, Transcript, fold_bytes, open};

fn fold_agrees(format: Format, bytes: &[u8], what: &str) {
    let fold = fold_bytes(format, bytes);
    let expected = oracle::expected(format, bytes);
    let observed = oracle::observed(fold.summary(), fold.buckets().map(|(k, t)| (k, *t)));
    assert_eq!(observed, expected, "{what}");
}

#[test]
fn every_fixture_folds_as_the_oracle_says() {
    for (path, format) in fixtures::all() {
        let bytes = std::fs::read(&path).unwrap();
        fold_agrees(format, &bytes, &path.display().to_string());
    }
}

fn options(cache: &Path) -> OpenOptions {
    OpenOptions {
        index_dir: Some(cache.to_path_buf()),
        load_dedup: true,
        ..OpenOptions::default()
    }
}

/// The index's answer equals the oracle's on the file as it is now.
fn index_agrees(t: &Transcript, bytes: &[u8], what: &str) {
    let expected = oracle::expected(t.format, bytes);
    let buckets = t.buckets().expect("buckets loaded");
    let observed = oracle::observed(&t.summary, buckets);
    assert_eq!(observed, expected, "{what}: {}", t.outcome);
}

#[test]
fn every_fixture_is_indexed_as_the_oracle_says_then_fresh() {
    for (path, format) in fixtures::all() {
        let (dir, copy) = fixtures::copy_to_temp(&path);
        let cache = dir.path().join("cache");
        let bytes = std::fs::read(&copy).unwrap();
        let what = path.display().to_string();
        let first = open(&copy, &options(&cache)).unwrap();
        assert_eq!(first.format, format, "{what}");
        assert!(
            matches!(first.outcome, IndexOutcome::Created { .. }),
            "{what}: {}",
            first.outcome
        );
        index_agrees(&first, &bytes, &what);
        let second = open(&copy, &options(&cache)).unwrap();
        assert_eq!(second.outcome, IndexOutcome::Fresh, "{what}");
        index_agrees(&second, &bytes, &what);
        assert_eq!(second.summary, first.summary, "{what}");
    }
}

#[test]
fn generated_transcripts_fold_and_index_as_the_oracle_says() {
    for format in Format::ALL {
        for seed in 0..12u64 {
            let bytes = generate::transcript(format, seed, 40 + seed as usize * 25);
            let what = format!("{format} seed {seed}");
            fold_agrees(format, &bytes, &what);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.jsonl");
            std::fs::write(&path, &bytes).unwrap();
            let t = open(&path, &options(&dir.path().join("cache"))).unwrap();
            assert_eq!(t.format, format, "{what}");
            index_agrees(&t, &bytes, &what);
        }
    }
}

/// Generated transcripts hit the hazards they are made for (so the oracle tests above test
/// something): boundaries of every kind, replays, duplicates, diagnostics.
#[test]
fn generated_transcripts_hold_every_hazard() {
    let mut kinds = std::collections::BTreeSet::new();
    let mut d = agentlog::transcript::Diagnostics::default();
    for format in Format::ALL {
        for seed in 0..12u64 {
            let bytes = generate::transcript(format, seed, 200);
            let fold = fold_bytes(format, &bytes);
            let s = fold.summary();
            kinds.extend(s.boundaries.iter().map(|b| b.kind.name()));
            let x = &s.diagnostics;
            d.invalid_lines += x.invalid_lines;
            d.coerced_values += x.coerced_values;
            d.invalid_values += x.invalid_values;
            d.missing_fields += x.missing_fields;
            d.messages_without_id += x.messages_without_id;
            d.duplicate_lines += x.duplicate_lines;
            d.replayed_lines += x.replayed_lines;
            d.replayed_boundaries += x.replayed_boundaries;
            d.null_info += x.null_info;
            d.counter_resets += x.counter_resets;
            d.invalid_timestamps += x.invalid_timestamps;
            d.missing_usage += x.missing_usage;
        }
    }
    assert_eq!(kinds.len(), 5, "{kinds:?}");
    for (name, n) in [
        ("invalid_lines", d.invalid_lines),
        ("coerced_values", d.coerced_values),
        ("invalid_values", d.invalid_values),
        ("missing_fields", d.missing_fields),
        ("messages_without_id", d.messages_without_id),
        ("duplicate_lines", d.duplicate_lines),
        ("replayed_lines", d.replayed_lines),
        ("replayed_boundaries", d.replayed_boundaries),
        ("null_info", d.null_info),
        ("counter_resets", d.counter_resets),
        ("invalid_timestamps", d.invalid_timestamps),
        ("missing_usage", d.missing_usage),
    ] {
        assert!(n > 0, "no {name} in the generated transcripts");
    }
}

/// `write_report` writes exactly the bytes of the `report` value, keys in the same order.
fn same_document(t: &Transcript, subagents: Option<&agentlog::transcript::WithSubagents>) {
    let value = serde_json::to_string(&agentlog::transcript::report(t, subagents))
        .expect("the report value serializes");
    let mut written = Vec::new();
    agentlog::transcript::write_report(t, subagents, &mut written).expect("the report is written");
    assert_eq!(
        String::from_utf8(written).expect("JSON is UTF-8"),
        value,
        "{}",
        t.path.display()
    );
}

#[test]
fn the_written_document_is_the_report_value_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut boundaries = 0;
    for (path, _) in fixtures::all() {
        let (_copy_dir, copy) = fixtures::copy_to_temp(&path);
        let t = open(&copy, &options(&cache)).unwrap();
        boundaries += t.summary.boundaries.len();
        same_document(&t, None);
    }
    for (path, format) in fixtures::all() {
        let with = agentlog::transcript::with_subagents(&path, &options(&cache)).unwrap();
        if format == Format::ClaudeCode && !with.subagents.is_empty() {
            same_document(&with.main, Some(&with));
        }
    }
    for format in [Format::ClaudeCode, Format::Codex, Format::Pi] {
        for seed in 0..4u64 {
            let bytes = generate::transcript(format, 700 + seed, 300);
            let path = dir.path().join(format!("{format}-{seed}.jsonl"));
            std::fs::write(&path, &bytes).unwrap();
            let t = open(&path, &options(&cache)).unwrap();
            boundaries += t.summary.boundaries.len();
            same_document(&t, None);
        }
    }
    assert!(
        boundaries > 20,
        "too few boundaries to compare: {boundaries}"
    );
}
