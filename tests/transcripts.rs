//! Transcripts: the readers and the per-transcript index against the naive oracle, on the real
//! fixtures and on generated transcripts.

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
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
