//! Arbitrary bytes as Claude Code's status line input, and as the transcript whose tail gives
//! the context size: parsing must never panic; an accepted input must be a JSON object whose
//! `transcript_path` is the non-empty string returned; the context read from the tail must be
//! the one a plain scan from the first line finds among lines `serde_json` reads as objects.
#![no_main]

use std::io::Write;

use agentlog::transcript::{context_tokens, parse_status_input};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// What the naive scan says.
enum Verdict {
    /// The context it finds (or none).
    Context(Option<u64>),
    /// The input holds what the reader may read differently (coercions, escapes).
    NoVerdict,
}

/// The naive answer: the last complete line that is a compaction boundary (0) or a main-chain
/// assistant line with a usage object (its input + cache creation + cache read), or none.
fn naive(data: &[u8]) -> Verdict {
    let end = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut found = None;
    for line in data[..end].split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            // A line the reader's tolerant parse may read differently: no verdict.
            if memchr(line, b"\"usage\"") || memchr(line, b"\"compact_boundary\"") {
                return Verdict::NoVerdict;
            }
            continue;
        };
        let Some(o) = v.as_object() else { continue };
        let text = |k: &str| o.get(k).and_then(Value::as_str);
        if text("type") == Some("system") && text("subtype") == Some("compact_boundary") {
            found = Some(0);
        } else if text("type") == Some("assistant")
            && o.get("isSidechain") != Some(&Value::Bool(true))
            && let Some(u) = o
                .get("message")
                .and_then(|m| m.get("usage"))
                .and_then(Value::as_object)
        {
            let mut sum = 0u64;
            for k in [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ] {
                match u.get(k) {
                    None | Some(Value::Null) => {}
                    Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n <= 1 << 48) => {
                        sum += n.as_u64().unwrap_or(0);
                    }
                    // Coerced strings, floats, and invalid values: no verdict.
                    Some(_) => return Verdict::NoVerdict,
                }
            }
            found = Some(sum);
        }
    }
    // Keys spelled with escapes are matched by serde but not by the reader's prefilter.
    if data.contains(&b'\\') {
        return Verdict::NoVerdict;
    }
    Verdict::Context(found)
}

fn memchr(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(input) = parse_status_input(data) {
        let v: Value = serde_json::from_slice(data).expect("accepted input is JSON");
        let path = v
            .get("transcript_path")
            .and_then(Value::as_str)
            .expect("a transcript_path");
        assert!(!path.is_empty());
        assert_eq!(input.transcript_path.as_os_str(), path);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.jsonl");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(data))
        .expect("write");
    let end = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) as u64;
    let got = context_tokens(&path, end).expect("reading the tail");
    if let Verdict::Context(want) = naive(data) {
        assert_eq!(got, want, "context of {:?}", String::from_utf8_lossy(data));
    }
});
