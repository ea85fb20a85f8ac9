//! The index-backed persisted source answers exactly like the plain JSONL scanner, on random
//! session logs with random damage: torn tails, unparsable lines, envelope violations, seq
//! gaps, blank lines, events that break a read rule (a message shape, a surface field), legacy
//! messages and prunes (which may or may not have an id to inherit), and turn/end events before
//! or after the damage. Reads go through the index built from scratch, then fresh, then caught
//! up after an append.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentlog::query::{
    IndexedSource, JsonlSource, PersistedSource, SessionHeader, SourceError, StoredSlice,
};
use proptest::prelude::*;
use std::fmt::Write as _;

const TYPES: [&str; 4] = ["turn/start", "step/start", "turn/end", "tool/call"];

#[derive(Clone, Debug)]
enum Line {
    /// A valid event of this type (its seq is its position).
    Event(usize),
    /// Not JSON at all.
    Unparsable,
    /// JSON, but an envelope the reader refuses (an unexpected key).
    BadEnvelope,
    /// A valid event whose seq skips one.
    SeqGap(usize),
    Blank,
    /// A user message without an id: a broken read rule, not damage.
    BadMessage,
    /// A log-only event with a `surfaceOp`: a broken read rule, not damage.
    BadSurfaceField,
    /// A pre-identity user message: the log is then judged whole.
    LegacyUser,
    /// A pre-identity tool-result prune of the event this many seqs back: refused when that
    /// event has no message id to inherit.
    LegacyPrune(u64),
}

/// Well-formed events only, legacy ones often.
fn well_formed_line() -> impl Strategy<Value = Line> {
    prop_oneof![
        4 => (0usize..TYPES.len()).prop_map(Line::Event),
        2 => Just(Line::LegacyUser),
        1 => (1u64..4).prop_map(Line::LegacyPrune),
    ]
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        20 => (0usize..TYPES.len()).prop_map(Line::Event),
        1 => Just(Line::Unparsable),
        1 => Just(Line::BadEnvelope),
        1 => (0usize..TYPES.len()).prop_map(Line::SeqGap),
        1 => Just(Line::Blank),
        1 => Just(Line::BadMessage),
        1 => Just(Line::BadSurfaceField),
        2 => Just(Line::LegacyUser),
        2 => (1u64..4).prop_map(Line::LegacyPrune),
    ]
}

fn event(kind: usize, seq: u64) -> String {
    format!(
        "{{\"type\":\"{}\",\"seq\":{seq},\"time\":{},\"data\":{{\"turn\":1,\"reason\":{{\"kind\":\"completed\"}}}}}}",
        TYPES[kind],
        1000 + seq
    )
}

fn render(lines: &[Line], start: u64) -> String {
    let mut out = String::new();
    let mut seq = start;
    for line in lines {
        match line {
            Line::Event(kind) => {
                out.push_str(&event(*kind, seq));
                seq += 1;
            }
            Line::Unparsable => out.push_str("{not json"),
            Line::BadEnvelope => write!(
                out,
                "{{\"type\":\"turn/start\",\"seq\":{seq},\"time\":1,\"data\":{{}},\"x\":1}}"
            )
            .unwrap(),
            Line::SeqGap(kind) => {
                out.push_str(&event(*kind, seq + 1));
                seq += 2;
            }
            Line::Blank => {}
            Line::BadMessage => write!(
                out,
                "{{\"type\":\"user/message\",\"seq\":{seq},\"time\":1,\"data\":{{\"role\":\"user\",\"source\":{{\"kind\":\"user\"}},\"content\":[]}},\"surfaceOp\":\"append\"}}"
            )
            .unwrap(),
            Line::BadSurfaceField => write!(
                out,
                "{{\"type\":\"step/start\",\"seq\":{seq},\"time\":1,\"data\":{{}},\"surfaceOp\":\"append\"}}"
            )
            .unwrap(),
            Line::LegacyUser => {
                write!(
                    out,
                    "{{\"type\":\"user/message\",\"seq\":{seq},\"time\":1,\"data\":{{\"content\":[],\"source\":{{\"kind\":\"user\"}}}},\"surfaceOp\":\"append\"}}"
                )
                .unwrap();
                seq += 1;
            }
            Line::LegacyPrune(back) => {
                let start = seq.saturating_sub(*back);
                write!(
                    out,
                    "{{\"type\":\"tool/result\",\"seq\":{seq},\"time\":1,\"data\":{{\"callId\":\"c\",\"content\":[],\"isError\":false}},\"surfaceOp\":{{\"op\":\"replace\",\"start\":{start},\"end\":{start}}},\"sourceEventSeqs\":[{start}]}}"
                )
                .unwrap();
                seq += 1;
            }
        }
        out.push('\n');
    }
    out
}

fn same(
    plain: Result<StoredSlice, SourceError>,
    indexed: Result<StoredSlice, SourceError>,
    what: &str,
) {
    match (plain, indexed) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(&a),
            std::mem::discriminant(&b),
            "{what}: plain {a}, indexed {b}"
        ),
        (a, b) => panic!("{what}: plain {a:?}, indexed {b:?}"),
    }
}

fn compare(root: &std::path::Path, from: u64, to: u64, types: &[&str]) {
    let plain = JsonlSource::new(root);
    let indexed = IndexedSource::new(root);
    same(plain.read_all("s"), indexed.read_all("s"), "read_all");
    same(
        plain.read_range("s", from, to),
        indexed.read_range("s", from, to),
        "read_range",
    );
    same(
        plain.read_types("s", types),
        indexed.read_types("s", types),
        "read_types",
    );
    same(
        plain.read_range("s", to, from),
        indexed.read_range("s", to, from),
        "an empty range",
    );
    same(
        plain.read_range("nobody", 0, 9),
        indexed.read_range("nobody", 0, 9),
        "a missing session",
    );
    // The index lists its types without reading events: every committed event's type, and
    // perhaps some seen only past the committed region.
    match (plain.read_all("s"), indexed.event_types("s")) {
        (Ok(all), Ok(types)) => {
            for event in &all.events {
                assert!(types.contains(&event.event_type), "{types:?}");
            }
        }
        (Err(a), Err(b)) => assert_eq!(std::mem::discriminant(&a), std::mem::discriminant(&b)),
        (a, b) => panic!("event_types: plain {a:?}, indexed {b:?}"),
    }
}

/// The legacy rule alone, for a log of well-formed events only: a legacy prune is refused when the
/// seq it replaces is not an earlier message (a legacy user message, or a prune that inherited
/// an id), since it has no id to inherit.
fn refused_for_a_prune(lines: &[Line]) -> bool {
    let mut has_id: Vec<bool> = Vec::new();
    for line in lines {
        match line {
            Line::Event(_) => has_id.push(false),
            Line::LegacyUser => has_id.push(true),
            Line::LegacyPrune(back) => {
                let seq = has_id.len();
                let start = seq.saturating_sub(usize::try_from(*back).unwrap());
                if start >= seq || !has_id[start] {
                    return true;
                }
                has_id.push(true);
            }
            other => panic!("not a well-formed event: {other:?}"),
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn indexed_source_answers_like_the_jsonl_scanner(
        lines in proptest::collection::vec(line(), 0..40),
        more in proptest::collection::vec(line(), 0..8),
        torn in proptest::option::of("[a-z{\":, ]{1,20}"),
        from in 0u64..30,
        len in 0u64..30,
        type_mask in 1usize..16,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s");
        std::fs::create_dir_all(&session).unwrap();
        let log = session.join("events.jsonl");
        let header = serde_json::to_string(&SessionHeader::new("s", 1)).unwrap();
        let mut text = format!("{header}\n{}", render(&lines, 0));
        if let Some(torn) = &torn {
            text.push_str(torn);
        }
        std::fs::write(&log, &text).unwrap();
        let types: Vec<&str> = TYPES.iter().enumerate().filter(|(i, _)| type_mask & (1 << i) != 0).map(|(_, t)| *t).collect();
        // Built from scratch, then read again from the fresh index.
        compare(dir.path(), from, from + len, &types);
        compare(dir.path(), from, from + len, &types);
        // An external append (completing any torn tail first): caught up, not rebuilt.
        let valid = lines
            .iter()
            .filter(|l| matches!(l, Line::Event(_) | Line::LegacyUser | Line::LegacyPrune(_)))
            .count() as u64;
        let mut tail = String::from(if torn.is_some() { "\n" } else { "" });
        tail.push_str(&render(&more, valid));
        let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut file, tail.as_bytes()).unwrap();
        compare(dir.path(), from, from + len, &types);
    }

    /// A legacy prune with no id to inherit refuses the session, on both sources, whatever part
    /// of the log is read.
    #[test]
    fn a_legacy_prune_is_refused_exactly_when_it_has_no_id_to_inherit(
        lines in proptest::collection::vec(well_formed_line(), 1..30),
        from in 0u64..30,
        len in 0u64..30,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s");
        std::fs::create_dir_all(&session).unwrap();
        let header = serde_json::to_string(&SessionHeader::new("s", 1)).unwrap();
        std::fs::write(session.join("events.jsonl"), format!("{header}\n{}", render(&lines, 0))).unwrap();
        let refused = refused_for_a_prune(&lines);
        let indexed = IndexedSource::new(dir.path());
        for read in [
            JsonlSource::new(dir.path()).read_range("s", from, from + len),
            indexed.read_range("s", from, from + len),
            indexed.read_types("s", &["turn/start"]),
        ] {
            prop_assert_eq!(matches!(read, Err(SourceError::Corrupt { .. })), refused, "{:?}", read);
        }
        compare(dir.path(), from, from + len, &["turn/start", "tool/call"]);
    }
}
