//! The extractor's tests: the fields it reads, their precedence and coercion, and the lines it refuses.

use super::*;

fn extract(line: &str) -> Result<EventFields<'_>, LineProblem> {
    Extractor::new(Profile::lingtai()).extract(line.as_bytes())
}

#[test]
fn lingtai_token_line_is_read() {
    let line = r#"{"type": "llm_response", "address": "agent-alice", "ts": 1786000004.512, "kernel_runtime": {"version": "0.19.5", "mode": "package"}, "input_tokens": 48213, "output_tokens": 912, "thinking_tokens": 384, "cached_tokens": 45056, "estimated": false}"#;
    let f = extract(line).unwrap();
    assert_eq!(f.type_name.as_deref(), Some("llm_response"));
    assert_eq!(f.kind(&Profile::lingtai(), false), EventKind::Token);
    let counts: Vec<u64> = f.tokens.iter().map(|t| t.count()).collect();
    assert_eq!(counts, [48213, 912, 45056, 384]);
    assert_eq!(
        f.time,
        Field::Valid(Timestamp::from_seconds(1_786_000_004.512).unwrap())
    );
}

#[test]
fn boundary_fields_and_initiator_default() {
    let f = extract(
        r#"{"type":"psyche_molt","molt_count":4,"before_tokens":171234,"after_tokens":9120}"#,
    )
    .unwrap();
    assert_eq!(f.kind(&Profile::lingtai(), false), EventKind::Boundary);
    assert_eq!(f.molt_count, MoltCount::Valid(4));
    assert_eq!(f.initiator_or_default(), "agent");
    assert_eq!(f.before_tokens.count(), 171_234);
    let f = extract(r#"{"type":"psyche_molt","molt_count":5,"initiator":"system"}"#).unwrap();
    assert_eq!(f.initiator_or_default(), "system");
    for initiator in [r#""""#, "7", "null", "[]"] {
        let line = format!(r#"{{"type":"psyche_molt","initiator":{initiator}}}"#);
        assert_eq!(
            extract(&line).unwrap().initiator_or_default(),
            "agent",
            "{line}"
        );
    }
}

#[test]
fn molt_count_must_be_a_non_negative_integer() {
    for (json, expected) in [
        ("5", MoltCount::Valid(5)),
        ("0", MoltCount::Valid(0)),
        ("-1", MoltCount::Invalid),
        ("5.0", MoltCount::Invalid),
        (r#""5""#, MoltCount::Invalid),
        ("true", MoltCount::Invalid),
        ("null", MoltCount::Invalid),
    ] {
        let line = format!(r#"{{"type":"psyche_molt","molt_count":{json}}}"#);
        assert_eq!(extract(&line).unwrap().molt_count, expected, "{json}");
    }
    assert_eq!(
        extract(r#"{"type":"psyche_molt"}"#).unwrap().molt_count,
        MoltCount::Missing
    );
}

#[test]
fn type_falls_back_to_event_only_when_not_a_string() {
    assert_eq!(
        extract(r#"{"event":"daemon_start","ts":"2026-08-08T09:00:00Z"}"#)
            .unwrap()
            .type_name
            .as_deref(),
        Some("daemon_start")
    );
    assert_eq!(
        extract(r#"{"type":5,"event":"x"}"#)
            .unwrap()
            .type_name
            .as_deref(),
        Some("x")
    );
    assert_eq!(
        extract(r#"{"type":"a","event":"x"}"#)
            .unwrap()
            .type_name
            .as_deref(),
        Some("a")
    );
    assert_eq!(extract(r#"{"type":null}"#).unwrap().type_name, None);
}

#[test]
fn duplicate_keys_last_wins() {
    let f = extract(
        r#"{"type":"psyche_molt","type":"llm_response","input_tokens":1,"input_tokens":"7"}"#,
    )
    .unwrap();
    assert_eq!(f.type_name.as_deref(), Some("llm_response"));
    assert_eq!(f.tokens[0], TokenValue::Truncated(7));
    // A later non-string `type` hides the earlier string one, so `event` is used.
    let f = extract(r#"{"type":"a","type":1,"event":"b"}"#).unwrap();
    assert_eq!(f.type_name.as_deref(), Some("b"));
}

#[test]
fn escaped_strings_are_decoded() {
    let f = extract(r#"{"typ\u0065":"llm_\u0072esponse","input_tokens":3}"#).unwrap();
    assert_eq!(f.type_name.as_deref(), Some("llm_response"));
    assert_eq!(f.tokens[0].count(), 3);
}

#[test]
fn time_sources_and_precedence() {
    let ms = extract(r#"{"type":"x","time":1786000000500}"#).unwrap();
    assert_eq!(
        ms.time,
        Field::Valid(Timestamp::from_seconds(1_786_000_000.5).unwrap())
    );
    let both = extract(r#"{"type":"x","time":1,"ts":2}"#).unwrap();
    assert_eq!(
        both.time,
        Field::Valid(Timestamp::from_seconds(2.0).unwrap())
    );
    let bad = extract(r#"{"type":"x","ts":"not-a-time"}"#).unwrap();
    assert_eq!(bad.time, Field::Invalid);
    let huge = extract(r#"{"type":"x","ts":1e300}"#).unwrap();
    assert_eq!(huge.time, Field::Invalid);
}

#[test]
fn explicit_seq_only_as_non_negative_integer() {
    assert_eq!(extract(r#"{"seq":3}"#).unwrap().seq, Field::Valid(3));
    assert_eq!(extract(r#"{"seq":-3}"#).unwrap().seq, Field::Invalid);
    assert_eq!(extract(r#"{"seq":"3"}"#).unwrap().seq, Field::Invalid);
    assert_eq!(extract(r"{}").unwrap().seq, Field::Absent);
}

#[test]
fn bad_lines_are_classified() {
    assert_eq!(extract("").unwrap_err(), LineProblem::Blank);
    assert_eq!(extract("  \t\r").unwrap_err(), LineProblem::Blank);
    assert_eq!(extract("{\"type\":").unwrap_err(), LineProblem::NotJson);
    assert_eq!(extract("{} {}").unwrap_err(), LineProblem::NotJson);
    assert_eq!(extract("[1,2]").unwrap_err(), LineProblem::NotAnObject);
    assert_eq!(extract("42").unwrap_err(), LineProblem::NotAnObject);
    assert_eq!(extract("\"s\"").unwrap_err(), LineProblem::NotAnObject);
    let extractor = Extractor::new(Profile::lingtai());
    assert_eq!(
        extractor.extract(b"{\"a\":\"\xff\"}").unwrap_err(),
        LineProblem::NotUtf8
    );
    assert_eq!(
        extract("{\"a\":\"\u{0}\"}").unwrap_err(),
        LineProblem::NotJson
    );
    let nested = |depth: usize| {
        format!(
            "{{\"a\":{}{}}}",
            "[".repeat(depth - 1),
            "]".repeat(depth - 1)
        )
    };
    assert!(extract(&nested(MAX_NESTING)).is_ok());
    assert_eq!(
        extract(&nested(MAX_NESTING + 1)).unwrap_err(),
        LineProblem::NotJson
    );
    assert_eq!(extract(&nested(5000)).unwrap_err(), LineProblem::NotJson);
    // Brackets inside strings do not nest.
    let in_string = format!("{{\"a\":\"{}\"}}", "[".repeat(500));
    assert!(extract(&in_string).is_ok());
}

#[test]
fn lone_surrogates_are_invalid_even_in_skipped_values() {
    assert_eq!(
        extract(r#"{"type":"x","note":"\ud800"}"#).unwrap_err(),
        LineProblem::NotJson
    );
    assert_eq!(
        extract(r#"{"type":"x","note":"\udc00 after"}"#).unwrap_err(),
        LineProblem::NotJson
    );
    assert_eq!(
        extract(r#"{"type":"\ud800"}"#).unwrap_err(),
        LineProblem::NotJson
    );
    // A surrogate pair (an emoji written with ensure_ascii) is fine.
    assert!(extract(r#"{"type":"x","note":"\ud83d\ude00"}"#).is_ok());
    // A lone low surrogate (found by fuzzing: `\udd00` slipped through an earlier check).
    assert_eq!(
        extract(r#"{"a":"\udd00"}"#).unwrap_err(),
        LineProblem::NotJson
    );
    // An escaped backslash followed by "ud800" is plain text.
    assert!(extract(r#"{"type":"x","note":"\\ud800"}"#).is_ok());
}

#[test]
fn numbers_out_of_f64_range_are_invalid_even_in_skipped_values() {
    // Found by fuzzing: serde_json's IgnoredAny accepted these; serde_json::Value does not.
    assert_eq!(extract(r#"{"a":1e400}"#).unwrap_err(), LineProblem::NotJson);
    assert_eq!(
        extract(r#"{"a":[{"b":-1e400}]}"#).unwrap_err(),
        LineProblem::NotJson
    );
    assert_eq!(
        extract(r#"{"type":"llm_response","input_tokens":{"x":1e999}}"#).unwrap_err(),
        LineProblem::NotJson
    );
    assert!(extract(r#"{"a":1e300}"#).is_ok());
}

#[test]
fn crlf_line_endings_are_tolerated() {
    assert!(extract("{\"type\":\"x\"}\r").is_ok());
}

#[test]
fn header_only_at_offset_zero() {
    let f = extract(r#"{"type":"session","version":0,"id":"s1"}"#).unwrap();
    assert_eq!(f.kind(&Profile::lingtai(), true), EventKind::Header);
    assert_eq!(f.kind(&Profile::lingtai(), false), EventKind::Other);
}
