//! `transcript_window` against a plain reading of the file: random transcripts of text and
//! bookkeeping lines with a torn tail, random anchors and sides, any chunk boundary.

// Test data is small; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation
)]

use agentlog::search::{LineAnchor, LineWindowRequest, transcript_line_text, transcript_window};
use agentlog::transcript::Format;
use proptest::prelude::*;

/// A Claude Code line: a user message with `text` (padded to `pad` bytes), or a bookkeeping
/// line without text.
fn line(text: bool, pad: usize, n: usize) -> String {
    let words = "x".repeat(pad);
    if text {
        format!(
            r#"{{"type":"user","sessionId":"s","uuid":"u{n}","parentUuid":null,"message":{{"role":"user","content":"m{n} {words}"}}}}"#
        )
    } else {
        format!(
            r#"{{"type":"file-history-snapshot","messageId":"x{n}","snapshot":{{"p":"{words}"}}}}"#
        )
    }
}

/// The oracle: (offset, line number, text) of every complete line with text.
fn oracle(bytes: &[u8]) -> Vec<(u64, u64, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (i, l) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let Some(body) = l.strip_suffix(b"\n") else {
            break;
        };
        if let Some(t) = transcript_line_text(Format::ClaudeCode, body) {
            out.push((offset, i as u64 + 1, t.text));
        }
        offset += l.len() as u64;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_window_is_the_shown_lines_around_its_anchor(
        lines in prop::collection::vec((any::<bool>(), prop_oneof![0..40usize, 100_000..300_000usize]), 1..40),
        torn in any::<bool>(),
        anchor in any::<prop::sample::Index>(),
        before in 0..6u64,
        after in 0..6u64,
        max_chars in 1..60usize,
    ) {
        // The first line has text, so the format is known from the head.
        let mut text = String::new();
        for (n, (has_text, pad)) in lines.iter().enumerate() {
            text.push_str(&line(*has_text || n == 0, *pad, n));
            text.push('\n');
        }
        if torn {
            text.push_str(r#"{"type":"user","message":{"content":"torn"#);
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        std::fs::write(&file, &text).unwrap();
        let expected = oracle(text.as_bytes());
        let covered = text.rfind('\n').unwrap() as u64 + 1;
        let at = anchor.index(covered as usize) as u64;
        let window = transcript_window(&file, &LineWindowRequest {
            at: LineAnchor::Offset(at),
            before,
            after,
            max_chars,
            raw: false,
        }).unwrap();
        // The centre: the first text line starting at or after the start of `at`'s line.
        let line_start = text[..at as usize].rfind('\n').map_or(0, |i| i as u64 + 1);
        let centre = expected.iter().position(|(o, _, _)| *o >= line_start).unwrap_or(expected.len());
        let lo = centre.saturating_sub(before as usize);
        let hi = (centre + after as usize + 1).min(expected.len());
        let got: Vec<(u64, u64, String, bool)> = window.lines.iter()
            .map(|l| (l.offset, l.line, l.text.clone(), l.truncated)).collect();
        let want: Vec<(u64, u64, String, bool)> = expected[lo..hi].iter().map(|(o, n, t)| {
            let cut: String = t.chars().take(max_chars).collect();
            let truncated = cut.len() < t.len();
            (*o, *n, cut, truncated)
        }).collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(window.covered_bytes, covered);
        prop_assert_eq!(window.anchor_offset, expected.get(centre).map(|e| e.0));
    }
}

#[test]
fn bounds_and_anchors_past_the_end_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, format!("{}\n{}", line(true, 3, 0), line(true, 3, 1))).unwrap();
    let ask = |at, before| {
        transcript_window(
            &file,
            &LineWindowRequest {
                at,
                before,
                ..LineWindowRequest::default()
            },
        )
    };
    assert_eq!(ask(LineAnchor::Line(1), 0).unwrap().lines.len(), 1);
    // The torn second line is not a line yet.
    for at in [
        LineAnchor::Line(2),
        LineAnchor::Offset(1_000),
        LineAnchor::Line(0),
    ] {
        assert!(ask(at, 0).unwrap_err().is_bad_request(), "{at:?}");
    }
    assert!(ask(LineAnchor::Line(1), 51).unwrap_err().is_bad_request());
}
