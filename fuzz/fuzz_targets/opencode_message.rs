//! Arbitrary bytes as an `OpenCode` message's `data` (a database row's JSON, or an older
//! `msg_*.json` file): parsing must never panic; a message with usage must come from a JSON
//! object saying `role: assistant` with a `tokens` object, hold together (reasoning within
//! output, the total the sum of its parts), and carry each plain integer field as it is
//! (output being `tokens.output + tokens.reasoning`).
#![no_main]

use agentlog::transcript::parse_opencode_message;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// A field's value when it is a plain integer a reader takes as is.
fn plain(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n <= 1 << 53)
}

fuzz_target!(|data: &[u8]| {
    let Ok(parsed) = parse_opencode_message(data) else {
        return;
    };
    // The tolerant reader skips unread fields unchecked (a lone surrogate escape, a number out
    // of f64's range); serde_json's Value refuses those, so such messages are beyond this oracle.
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    assert!(v.is_object());
    let Some(m) = parsed else {
        return;
    };
    assert_eq!(v["role"], "assistant");
    let t = &v["tokens"];
    assert!(t.is_object());
    let u = m.usage;
    assert!(u.reasoning <= u.output);
    assert_eq!(
        u.total(),
        u.input + u.output + u.cache_read + u.cache_creation
    );
    if let Some(n) = plain(&t["input"]) {
        assert_eq!(u.input, n);
    }
    if let (Some(o), Some(r)) = (plain(&t["output"]), plain(&t["reasoning"])) {
        assert_eq!(u.output, o + r);
        assert_eq!(u.reasoning, r);
    }
    if let Some(n) = plain(&t["cache"]["read"]) {
        assert_eq!(u.cache_read, n);
    }
    if let Some(n) = plain(&t["cache"]["write"]) {
        assert_eq!(u.cache_creation, n);
    }
});
