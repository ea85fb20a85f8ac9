//! Transcripts: the readers and the per-transcript index against the naive oracle, on the real
//! fixtures and on generated transcripts.
// Helpers here are part of the tests: a failed step fails the test that called it; seeds are
// small, so their casts are exact.
#![allow(
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::path::Path;

use agentlog::index::IndexOutcome;
use agentlog::transcript::{Format, OpenOptions, Transcript, fold_bytes};

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
        let first = Transcript::open(&copy, &options(&cache)).unwrap();
        assert_eq!(first.format, format, "{what}");
        assert!(
            matches!(first.outcome, IndexOutcome::Created { .. }),
            "{what}: {}",
            first.outcome
        );
        index_agrees(&first, &bytes, &what);
        let second = Transcript::open(&copy, &options(&cache)).unwrap();
        assert_eq!(second.outcome, IndexOutcome::Fresh, "{what}");
        index_agrees(&second, &bytes, &what);
        assert_eq!(second.summary, first.summary, "{what}");
    }
}

#[test]
fn generated_transcripts_fold_and_index_as_the_oracle_says() {
    for format in Format::ALL.into_iter().filter(|f| f.is_lines()) {
        for seed in 0..12u64 {
            let bytes = generate::transcript(format, seed, 40 + seed as usize * 25);
            let what = format!("{format} seed {seed}");
            fold_agrees(format, &bytes, &what);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.jsonl");
            std::fs::write(&path, &bytes).unwrap();
            let t = Transcript::open(&path, &options(&dir.path().join("cache"))).unwrap();
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
    let mut d = agentlog::transcript::TranscriptDiagnostics::default();
    for format in Format::ALL.into_iter().filter(|f| f.is_lines()) {
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
            d.unbalanced_values += x.unbalanced_values;
            d.total_mismatches += x.total_mismatches;
            d.input_unknown += x.input_unknown;
        }
    }
    let every_kind: usize = Format::ALL.iter().map(|f| f.boundary_kinds().len()).sum();
    assert_eq!(kinds.len(), every_kind, "{kinds:?}");
    for (name, n) in [
        ("invalid_lines", d.invalid_lines),
        ("coerced_values", d.coerced_values),
        ("invalid_values", d.invalid_values),
        ("missing_fields", d.missing_fields),
        ("messages_without_id", d.messages_without_id),
        ("duplicate_lines", d.duplicate_lines),
        ("replayed_lines", d.replayed_lines),
        ("input_unknown", d.input_unknown),
        ("replayed_boundaries", d.replayed_boundaries),
        ("null_info", d.null_info),
        ("counter_resets", d.counter_resets),
        ("invalid_timestamps", d.invalid_timestamps),
        ("missing_usage", d.missing_usage),
        ("unbalanced_values", d.unbalanced_values),
        ("total_mismatches", d.total_mismatches),
    ] {
        assert!(n > 0, "no {name} in the generated transcripts");
    }
}

/// A usage object of the document against the oracle: the normalised fields, which add up,
/// and the format's own names beside them, each the figure the format means by it.
fn usage_object_agrees(format: Format, got: &serde_json::Value, want: &oracle::Sum, what: &str) {
    for (name, value) in [
        ("input_tokens", want.input),
        ("output_tokens", want.output),
        ("cache_creation_tokens", want.cache_creation),
        ("cache_read_tokens", want.cache_read),
        ("reasoning_output_tokens", want.reasoning),
        ("cache_creation_1h_tokens", want.cache_creation_1h),
        ("total_tokens", want.total),
        ("messages", want.messages),
    ] {
        assert_eq!(got[name], value, "{what}: {name}");
    }
    let native: &[(&str, u64)] = match format {
        Format::ClaudeCode => &[
            ("input_tokens", want.input),
            ("output_tokens", want.output),
            ("cache_creation_input_tokens", want.cache_creation),
            ("cache_read_input_tokens", want.cache_read),
            ("total_tokens", want.total),
            ("messages", want.messages),
        ],
        Format::Codex => &[
            ("input_tokens", want.input + want.cache_read),
            ("cached_input_tokens", want.cache_read),
            ("output_tokens", want.output),
            ("reasoning_output_tokens", want.reasoning),
            ("total_tokens", want.total),
            ("usage_events", want.messages),
        ],
        Format::Pi => &[
            ("input", want.input),
            ("output", want.output),
            ("cacheRead", want.cache_read),
            ("cacheWrite", want.cache_creation),
            ("totalTokens", want.total),
            ("messages", want.messages),
        ],
        Format::Copilot => &[
            ("inputTokens", want.input + want.cache_read),
            ("outputTokens", want.output),
            ("cacheReadTokens", want.cache_read),
            ("cacheWriteTokens", want.cache_creation),
            ("reasoningTokens", want.reasoning),
            ("requests", want.messages),
        ],
        Format::Gemini => &[
            ("input_and_tool", want.input + want.cache_read),
            ("cached", want.cache_read),
            ("output_and_thoughts", want.output),
            ("thoughts", want.reasoning),
            ("total", want.total),
            ("messages", want.messages),
        ],
        Format::Qwen => &[
            ("promptTokenCount", want.input + want.cache_read),
            ("candidatesTokenCount", want.output),
            ("thoughtsTokenCount", want.reasoning),
            ("cachedContentTokenCount", want.cache_read),
            ("totalTokenCount", want.total),
            ("messages", want.messages),
        ],
        Format::OpenCode => unreachable!("these are line transcripts"),
        Format::Kimi => &[
            ("inputOther", want.input),
            ("output", want.output),
            ("inputCacheRead", want.cache_read),
            ("inputCacheCreation", want.cache_creation),
            ("usage_records", want.messages),
        ],
    };
    assert_eq!(
        got["native"].as_object().map(serde_json::Map::len),
        Some(native.len() + usize::from(format == Format::Pi)),
        "{what}: {}",
        got["native"]
    );
    for (name, value) in native {
        assert_eq!(got["native"][*name], *value, "{what}: native {name}");
    }
    if format == Format::Pi {
        let cost = got["native"]["cost_total"].as_f64().expect("pi's cost");
        assert!(
            (cost - want.cost as f64 / 1e12).abs() < 1e-12,
            "{what}: cost"
        );
    }
}

/// The `transcript --json` document of `t` against the oracle, generation by generation.
fn document_agrees(t: &Transcript, bytes: &[u8]) {
    let what = t.path.display().to_string();
    let doc = serde_json::to_value(agentlog::transcript::report(t, None)).expect("serializes");
    let want = oracle::expected(t.format, bytes);
    let generations = doc["generations"].as_array().expect("generations");
    assert_eq!(generations.len(), want.generations.len(), "{what}");
    for (g, w) in generations.iter().zip(&want.generations) {
        usage_object_agrees(t.format, &g["usage"], w, &what);
    }
    usage_object_agrees(t.format, &doc["lifetime"], &want.lifetime, &what);
    let last = want.generations.last().expect("a generation");
    usage_object_agrees(t.format, &doc["since_compaction"], last, &what);
    assert_eq!(
        doc["boundaries"].as_array().map(Vec::len),
        Some(want.boundaries.len())
    );
    assert_eq!(doc["format"], t.format.name());
}

#[test]
fn the_document_holds_the_oracle_figures_under_both_names() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut seen = std::collections::BTreeSet::new();
    for (path, _) in fixtures::all() {
        let (_copy_dir, copy) = fixtures::copy_to_temp(&path);
        let t = Transcript::open(&copy, &options(&cache)).unwrap();
        document_agrees(&t, &std::fs::read(&copy).unwrap());
        seen.insert(t.format.name());
    }
    for format in Format::ALL.into_iter().filter(|f| f.is_lines()) {
        for seed in 0..4u64 {
            let bytes = generate::transcript(format, 700 + seed, 300);
            let path = dir.path().join(format!("{format}-{seed}.jsonl"));
            std::fs::write(&path, &bytes).unwrap();
            let t = Transcript::open(&path, &options(&cache)).unwrap();
            document_agrees(&t, &bytes);
        }
    }
    // OpenCode keeps a database, not lines: tests/transcript_opencode.rs holds its fixture.
    let line_formats = Format::ALL.into_iter().filter(|f| f.is_lines()).count();
    assert_eq!(seen.len(), line_formats, "a format without a fixture");
}

/// The vendored real transcripts reach every normalised field: Codex's cached input and
/// reasoning, Claude Code's 1-hour cache writes (so the figures above are tested on real data).
#[test]
fn the_real_transcripts_fill_every_field() {
    let mut lifetime = oracle::Sum::default();
    for (path, format) in fixtures::all() {
        let bytes = std::fs::read(&path).unwrap();
        let fold = fold_bytes(format, &bytes);
        lifetime.add(&oracle::Sum::of(&fold.summary().lifetime));
        assert_eq!(
            oracle::Sum::of(&fold.summary().lifetime),
            oracle::expected(format, &bytes).lifetime
        );
    }
    for (name, n) in [
        ("input", lifetime.input),
        ("output", lifetime.output),
        ("cache_creation", lifetime.cache_creation),
        ("cache_read", lifetime.cache_read),
        ("reasoning", lifetime.reasoning),
        ("cache_creation_1h", lifetime.cache_creation_1h),
        ("cost", lifetime.cost),
    ] {
        assert!(n > 0, "no {name} in the real transcripts");
    }
}
