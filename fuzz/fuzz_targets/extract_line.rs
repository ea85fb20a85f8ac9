//! One line through `Extractor::extract` (lingtai profile), checked against a naive reading
//! with `serde_json::Value` and the oracle's coercion rule (`tests/common/oracle.rs`), and
//! against `Extractor::extract_with_serde` (the same answer without the byte-level fast path).
//!
//! * The line is valid iff it is not blank and `serde_json::from_slice::<Value>` gives an
//!   object (so lines nested deeper than `MAX_NESTING`, lone surrogates, trailing garbage...
//!   are invalid exactly when `serde_json` says so).
//! * Blank (empty or ASCII whitespace only) lines are `LineProblem::Blank`; non-UTF-8 lines are
//!   `NotUtf8`; valid JSON that is not an object is `NotAnObject`.
//! * For a valid line: the type (`type` if a string, else `event` if a string), `molt_count`
//!   (valid only as a JSON integer >= 0), `seq`, the four token values, `before_tokens`,
//!   `after_tokens` and the initiator equal the naive reading; a token field is `Missing` iff
//!   its key is absent; `time` is `Absent` iff neither `ts` nor `time` is present.
//! * Split at its newlines, the input is also a sequence of lines read with one `LineMemo`
//!   (`Extractor::extract_with_memo`): every line's answer is the serde path's, however much
//!   of it repeats the line before.
#![no_main]

use std::sync::OnceLock;

use agentlog::event::{Extractor, Field, LineMemo, LineProblem, MoltCount, Profile, TokenValue};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;

fn extractor() -> &'static Extractor {
    static EXTRACTOR: OnceLock<Extractor> = OnceLock::new();
    EXTRACTOR.get_or_init(|| Extractor::new(Profile::lingtai()))
}

fn string(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

fuzz_target!(|data: &[u8]| {
    let mut memo = LineMemo::new();
    for line in data.split(|&b| b == b'\n') {
        assert_eq!(
            extractor().extract_with_memo(&mut memo, line),
            extractor().extract_with_serde(line),
            "with the memo of the line before, the paths disagree on {:?}",
            String::from_utf8_lossy(line)
        );
    }
    let got = extractor().extract(data);
    let shown = String::from_utf8_lossy(data);
    // The byte-level fast path answers only when it agrees with the serde path.
    assert_eq!(
        got,
        extractor().extract_with_serde(data),
        "fast and serde paths disagree on {shown:?}"
    );
    if data.iter().all(u8::is_ascii_whitespace) {
        assert_eq!(got, Err(LineProblem::Blank), "blank line {shown:?}");
        return;
    }
    let naive = serde_json::from_slice::<Value>(data);
    let object = match &naive {
        Ok(Value::Object(object)) => object,
        Ok(_) => {
            assert_eq!(
                got,
                Err(LineProblem::NotAnObject),
                "JSON non-object {shown:?}"
            );
            return;
        }
        Err(e) => {
            let Err(problem) = got else {
                panic!("serde_json rejects {shown:?} ({e}), the extractor accepted it: {got:?}");
            };
            assert_ne!(problem, LineProblem::Blank, "{shown:?}");
            assert_eq!(
                problem == LineProblem::NotUtf8,
                std::str::from_utf8(data).is_err(),
                "{shown:?}: {problem:?}"
            );
            return;
        }
    };
    let fields = match got {
        Ok(fields) => fields,
        Err(problem) => {
            panic!("serde_json reads an object from {shown:?}, the extractor says {problem:?}")
        }
    };
    let naive_type = string(object.get("type")).or_else(|| string(object.get("event")));
    assert_eq!(fields.type_name.as_deref(), naive_type, "type of {shown:?}");

    let naive_molt = match object.get("molt_count") {
        None => MoltCount::Missing,
        Some(v) => v.as_u64().map_or(MoltCount::Invalid, MoltCount::Valid),
    };
    assert_eq!(fields.molt_count, naive_molt, "molt_count of {shown:?}");

    let naive_seq = match object.get("seq") {
        None => Field::Absent,
        Some(v) => v.as_u64().map_or(Field::Invalid, Field::Valid),
    };
    assert_eq!(fields.seq, naive_seq, "seq of {shown:?}");

    for (i, key) in [
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "thinking_tokens",
    ]
    .into_iter()
    .enumerate()
    {
        let value = object.get(key);
        assert_eq!(
            fields.tokens[i].count(),
            oracle::coerce(value),
            "{key} of {shown:?}: {:?}",
            fields.tokens[i]
        );
        assert_eq!(
            fields.tokens[i] == TokenValue::Missing,
            value.is_none(),
            "{key} of {shown:?}: {:?}",
            fields.tokens[i]
        );
        if let Some(v) = value {
            // Exact only for JSON integers.
            if matches!(fields.tokens[i], TokenValue::Exact(_)) {
                assert!(v.is_u64(), "{key} of {shown:?} is Exact but not an integer");
            }
        }
    }
    assert_eq!(
        fields.before_tokens.count(),
        oracle::coerce(object.get("before_tokens")),
        "before_tokens of {shown:?}"
    );
    assert_eq!(
        fields.after_tokens.count(),
        oracle::coerce(object.get("after_tokens")),
        "after_tokens of {shown:?}"
    );
    let naive_initiator = match string(object.get("initiator")) {
        Some(s) if !s.is_empty() => s,
        _ => "agent",
    };
    assert_eq!(
        fields.initiator_or_default(),
        naive_initiator,
        "initiator of {shown:?}"
    );
    let has_time = object.contains_key("ts") || object.contains_key("time");
    assert_eq!(
        fields.time != Field::Absent,
        has_time,
        "time of {shown:?}: {:?}",
        fields.time
    );
});
