//! Arbitrary bytes as an `OpenCode` part's `data` (a database `part` row's JSON, or an older
//! `prt_*.json` file): parsing must never panic; a part is read only from a JSON object, and
//! each string field it gives is the object's own.
#![no_main]

use agentlog::transcript::parse_opencode_part;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(part) = parse_opencode_part(data) else {
        return;
    };
    // The tolerant reader skips unread fields unchecked (a lone surrogate escape, a number out
    // of f64's range); serde_json's Value refuses those, so such parts are beyond this oracle.
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    assert!(v.is_object());
    let text = |key: &str| v[key].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    assert_eq!(part.kind, text("type"));
    assert_eq!(part.text, text("text"));
    assert_eq!(part.tool, text("tool"));
    if v["state"].is_object() {
        assert_eq!(
            part.input,
            Some(v["state"]["input"].clone()).filter(|i| !i.is_null())
        );
    } else {
        assert_eq!(part.input, None);
    }
});
