//! Property tests of the transcript index: catching up after appends in random pieces (torn
//! tails included) gives what one parse of the whole gives; truncations, same-length rewrites
//! and truncate-then-regrow are detected and rebuilt (or, for a rewrite between the windows,
//! caught by the deep check).
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::io::Write;
use std::path::Path;

use agentlog::index::{IndexOutcome, ReadOnlyReason, StaleReason};
use agentlog::log::WINDOW_BYTES;
use agentlog::transcript::{
    Format, OpenOptions, Transcript, fold_at_once, fold_bytes, fold_in_pieces,
};
use proptest::prelude::*;

fn options(cache: &Path, max_memory_tail: u64) -> OpenOptions {
    OpenOptions {
        index_dir: Some(cache.to_path_buf()),
        load_dedup: true,
        max_memory_tail,
        ..OpenOptions::default()
    }
}

fn format() -> impl Strategy<Value = Format> {
    prop_oneof![
        Just(Format::ClaudeCode),
        Just(Format::Codex),
        Just(Format::Pi),
        Just(Format::Copilot),
        Just(Format::Gemini),
        Just(Format::Qwen),
        Just(Format::Kimi)
    ]
}

/// The answer equals one parse of the bytes and the oracle's.
fn agrees(t: &Transcript, bytes: &[u8]) -> Result<(), TestCaseError> {
    let one_shot = fold_bytes(t.format, bytes);
    prop_assert_eq!(
        &t.summary,
        one_shot.summary(),
        "against one parse ({})",
        t.outcome
    );
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    prop_assert_eq!(t.coverage.end, complete as u64);
    let expected = oracle::expected(t.format, bytes);
    let observed = oracle::observed(&t.summary, t.buckets().unwrap_or_default());
    prop_assert_eq!(observed, expected, "against the oracle ({})", t.outcome);
    Ok(())
}

/// A token value as agents write them, and as they should not: integers (up to and past the
/// coercion rule's 2^53), floats, plain and odd strings, null, negatives.
fn value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    prop_oneof![
        6 => (0u64..300_000).prop_map(|n| json!(n)),
        1 => ((1u64 << 53) - 2..(1u64 << 53) + 2).prop_map(|n| json!(n)),
        1 => (0f64..1e6).prop_map(|x| json!(x)),
        1 => (0u64..1000).prop_map(|n| json!(format!("{n}.5"))),
        1 => Just(json!(" 12")),
        1 => Just(json!(null)),
        1 => (-1000i64..0).prop_map(|n| json!(n)),
    ]
}

/// A usage line of `format` with the given values, at one of a few times and models.
fn usage_line(format: Format, i: usize, v: &[serde_json::Value], model: u8) -> String {
    use serde_json::json;
    let ts = format!("2026-03-0{}T10:00:00Z", 1 + model % 3);
    let model = format!("m{model}");
    match format {
        Format::ClaudeCode => json!({"type":"assistant","timestamp":ts,"requestId":format!("r{i}"),
            "message":{"id":format!("msg{}", i / 2),"model":model,"usage":{
                "input_tokens":v[0],"output_tokens":v[1],"cache_creation_input_tokens":v[2],
                "cache_read_input_tokens":v[3],"cache_creation":{"ephemeral_1h_input_tokens":v[4]}}}}),
        Format::Codex => json!({"timestamp":ts,"type":"event_msg","payload":{"type":"token_count",
            "info":{"total_token_usage":{"input_tokens":v[0],"cached_input_tokens":v[3],
                "output_tokens":v[1],"reasoning_output_tokens":v[4],"total_tokens":v[2]}}}}),
        Format::Pi => json!({"type":"message","id":format!("e{}", i / 2),"timestamp":ts,
            "message":{"role":"assistant","model":model,"usage":{"input":v[0],"output":v[1],
                "cacheWrite":v[2],"cacheRead":v[3],"totalTokens":v[4],"cost":{"total":v[0]}}}}),
        // Messages of a process, its shutdown, the next process.
        Format::Copilot => match i % 4 {
            0 | 1 => json!({"type":"assistant.message","timestamp":ts,"data":{"outputTokens":v[1]}}),
            2 => json!({"type":"session.shutdown","timestamp":ts,"data":{"modelMetrics":{model:{
                "requests":{"count":v[2]},"usage":{"inputTokens":v[0],"outputTokens":v[1],
                "cacheWriteTokens":v[2],"cacheReadTokens":v[3],"reasoningTokens":v[4]}}},"currentTokens":v[3]}}),
            _ => json!({"type":"session.resume","timestamp":ts,"data":{"selectedModel":model}}),
        },
        // Ids repeat (a record re-appended, the last copy winning, perhaps with another model).
        Format::Gemini => json!({"id":format!("g{}", i / 2),"type":"gemini","timestamp":ts,
            "model":model,"tokens":{"input":v[0],"output":v[1],"cached":v[3],"thoughts":v[4],
                "tool":v[2],"total":v[2]}}),
        Format::Qwen => json!({"uuid":format!("q{}", i / 2),"type":"assistant","timestamp":ts,
            "model":model,"usageMetadata":{"promptTokenCount":v[0],"candidatesTokenCount":v[1],
                "cachedContentTokenCount":v[3],"thoughtsTokenCount":v[4],"totalTokenCount":v[2]}}),
        Format::OpenCode => unreachable!("not a line format"),
        Format::Kimi => json!({"type":"usage.record","model":model,"usageScope":"turn",
            "time":ts.parse::<jiff::Timestamp>().map(jiff::Timestamp::as_millisecond).ok(),
            "usage":{"inputOther":v[0],"output":v[1],"inputCacheCreation":v[2],"inputCacheRead":v[3]}}),
    }
    .to_string()
}

/// The invariant of every tally: the total is the four fields' sum (exactly, below
/// saturation), the parts stay within their wholes, the long-prompt part within the tally.
fn adds_up(t: &agentlog::transcript::Tally) -> Result<(), TestCaseError> {
    for u in [&t.usage, &t.long_prompt] {
        let exact: u128 = [u.input, u.output, u.cache_creation, u.cache_read]
            .iter()
            .map(|&n| u128::from(n))
            .sum();
        prop_assert_eq!(u128::from(u.total()), exact.min(u128::from(u64::MAX)));
        prop_assert!(u.reasoning <= u.output && u.cache_creation_1h <= u.cache_creation);
    }
    prop_assert!(t.long_prompt.total() <= t.usage.total());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Whatever values the lines hold, every tally a fold makes adds up: each generation, the
    /// lifetime (the generations' sum), each bucket (summing to the lifetime), and each
    /// figure is the oracle's.
    #[test]
    fn every_tally_adds_up_whatever_the_values(
        format in format(),
        lines in prop::collection::vec((prop::collection::vec(value(), 5), 0u8..4, 0u8..10), 1..40),
    ) {
        let mut bytes = Vec::new();
        for (i, (values, model, boundary)) in lines.iter().enumerate() {
            if *boundary == 0 {
                let line = match format {
                    Format::ClaudeCode => format!(r#"{{"type":"system","subtype":"compact_boundary","uuid":"b{i}"}}"#),
                    Format::Codex => r#"{"type":"compacted","payload":{"message":""}}"#.to_owned(),
                    Format::Pi => format!(r#"{{"type":"compaction","id":"c{i}","tokensBefore":5}}"#),
                    Format::Copilot => r#"{"type":"session.compaction_complete","data":{"compactionTokensUsed":{"input":9,"output":2,"cachedInput":4}}}"#.to_owned(),
                    Format::Gemini => r#"{"$set":{"messages":[]}}"#.to_owned(),
                    Format::Qwen => format!(r#"{{"type":"system","subtype":"chat_compression","uuid":"c{i}"}}"#),
                    Format::OpenCode => unreachable!("not a line format"),
                    Format::Kimi => format!(r#"{{"type":"usage.record","usageScope":"session","time":{i},"usage":{{"output":{i}}}}}"#),
                };
                bytes.extend(line.into_bytes());
                bytes.push(b'\n');
            }
            bytes.extend(usage_line(format, i, values, *model).into_bytes());
            bytes.push(b'\n');
        }
        let fold = fold_bytes(format, &bytes);
        let s = fold.summary();
        let mut generations = agentlog::transcript::Tally::default();
        for g in &s.generations {
            adds_up(g)?;
            generations.add(g);
        }
        adds_up(&s.lifetime)?;
        prop_assert_eq!(generations, s.lifetime);
        let mut buckets = agentlog::transcript::Tally::default();
        for (_, t) in fold.buckets() {
            adds_up(t)?;
            buckets.add(t);
        }
        prop_assert_eq!(buckets, s.lifetime);
        let observed = oracle::observed(s, fold.buckets().map(|(k, t)| (k, *t)));
        prop_assert_eq!(observed, oracle::expected(format, &bytes));
    }

    /// The fold the index runs across catch-ups (state encoded and recalled between pieces)
    /// equals one fold of the whole, without redb in the way.
    #[test]
    fn folding_in_pieces_through_encoded_rows_equals_one_fold(
        format in format(),
        seed in any::<u64>(),
        steps in 1usize..150,
        cuts in prop::collection::vec(0u16..1000, 0..12),
    ) {
        let whole = generate::transcript(format, seed, steps);
        let cuts: Vec<usize> = cuts.iter().map(|&c| whole.len() * usize::from(c) / 1000).collect();
        let pieces = fold_in_pieces(format, &whole, &cuts).map_err(TestCaseError::fail)?;
        prop_assert_eq!(pieces, fold_at_once(format, &whole));
    }

    #[test]
    fn catching_up_in_random_pieces_equals_one_parse(
        format in format(),
        seed in any::<u64>(),
        steps in 10usize..120,
        cuts in prop::collection::vec(0u16..1000, 1..8),
        small_tails in any::<bool>(),
    ) {
        let whole = generate::transcript(format, seed, steps);
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| whole.len() * usize::from(c) / 1000).collect();
        cuts.push(whole.len());
        cuts.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut file = std::fs::File::create(&path).unwrap();
        let tail = if small_tails { 4096 } else { 0 };
        let options = options(&dir.path().join("cache"), tail);
        let mut written = 0;
        let mut opened = false;
        for cut in cuts {
            file.write_all(&whole[written..cut]).unwrap();
            written = cut;
            let t = match Transcript::open(&path, &OpenOptions { format: Some(format), ..options.clone() }) {
                Ok(t) => t,
                // Nothing complete yet.
                Err(agentlog::transcript::TranscriptError::Empty { .. }) => {
                    prop_assert!(!whole[..cut].contains(&b'\n'));
                    continue;
                }
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            match &t.outcome {
                IndexOutcome::Created { .. } => prop_assert!(!opened),
                IndexOutcome::Fresh | IndexOutcome::CaughtUp { .. } => prop_assert!(opened),
                IndexOutcome::ReadOnly { why: ReadOnlyReason::SmallTail, tail_bytes, .. } => {
                    prop_assert!(opened && *tail_bytes <= tail);
                }
                other => prop_assert!(false, "unexpected outcome {other}"),
            }
            opened = true;
            agrees(&t, &whole[..cut])?;
        }
        // The index itself holds what a fold of its covered bytes gives.
        let check = Transcript::verify(&path, &options).unwrap();
        prop_assert!(check.agrees && check.stale.is_none(), "{:?}", check);
    }

    #[test]
    fn truncations_rewrites_and_regrowth_are_detected(
        format in format(),
        seed in any::<u64>(),
        steps in 20usize..400,
        change in 0u8..4,
        at in 0u16..1000,
        xor in 1u8..=255,
        more in 0usize..40,
    ) {
        let original = generate::transcript(format, seed, steps);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, &original).unwrap();
        let options = OpenOptions { format: Some(format), ..options(&dir.path().join("cache"), 0) };
        let first = Transcript::open(&path, &options).unwrap();
        let created = matches!(first.outcome, IndexOutcome::Created { .. });
        prop_assert!(created, "{}", first.outcome);
        let end = original.len();
        let cut = (end * usize::from(at) / 1000).min(end - 1);
        let mut changed = original.clone();
        match change {
            0 => changed.truncate(cut),
            1 => changed[cut] ^= xor,
            2 => {
                changed.truncate(cut);
                changed.extend(generate::transcript(format, seed ^ 0xABCD, more + 5));
            }
            _ => changed.extend(generate::transcript(format, seed ^ 0x1234, more + 1)),
        }
        std::fs::write(&path, &changed).unwrap();
        let t = match Transcript::open(&path, &options) {
            Ok(t) => t,
            Err(agentlog::transcript::TranscriptError::Empty { .. }) => {
                prop_assert!(!changed.contains(&b'\n'));
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        let unchanged = changed.len() >= end && changed[..end] == original[..end];
        let window = (end as u64).min(WINDOW_BYTES) as usize;
        let in_window = changed.len() < end
            || changed[..window] != original[..window]
            || changed[end - window..end] != original[end - window..end];
        if unchanged {
            let caught_up = matches!(t.outcome, IndexOutcome::CaughtUp { .. } | IndexOutcome::Fresh);
            prop_assert!(caught_up, "{}", t.outcome);
            agrees(&t, &changed)?;
        } else if in_window {
            let rebuilt = matches!(
                &t.outcome,
                IndexOutcome::Rebuilt { reason: StaleReason::LogTruncated { .. } | StaleReason::HeadChanged | StaleReason::TailChanged, .. }
            );
            prop_assert!(rebuilt, "{}", t.outcome);
            agrees(&t, &changed)?;
            prop_assert!(Transcript::verify(&path, &options).unwrap().is_valid());
        } else {
            // Between the windows: only the deep check reads those bytes.
            prop_assert_eq!(&t.outcome, &IndexOutcome::Fresh);
            let check = Transcript::verify(&path, &options).unwrap();
            prop_assert!(!check.is_valid(), "{:?}", check);
        }
    }
}
