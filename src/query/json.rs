//! JSON helpers shared by the validators.
//!
//! dsh logs are written by JavaScript, where every number is a double: integers are only
//! exact up to 2^53-1 ("safe integers") and `-0` does not survive `JSON.stringify`. The
//! rules here keep our logs readable by that side and lossless on ours.

use serde_json::Value;

/// The largest integer a double represents exactly (`Number.MAX_SAFE_INTEGER`).
pub(crate) const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `value` as a non-negative safe integer, if it is one written as an integer.
pub(crate) fn as_safe_u64(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n <= MAX_SAFE_INTEGER)
}

/// `value` as a safe integer (either sign), if it is one written as an integer.
pub(crate) fn as_safe_i64(value: &Value) -> Option<i64> {
    value
        .as_i64()
        .filter(|n| n.unsigned_abs() <= MAX_SAFE_INTEGER)
}

/// Whether `n` is within the safe-integer range.
pub(crate) fn is_safe_i64(n: i64) -> bool {
    n.unsigned_abs() <= MAX_SAFE_INTEGER
}

/// `value` as a non-empty string.
pub(crate) fn as_non_empty_str(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.is_empty())
}

/// Checks that `value` survives a JSON round trip unchanged: no `-0`.
///
/// `serde_json` cannot hold NaN or infinities, so `-0` is the one number that a
/// JavaScript reader would silently turn into another value. Walks with an explicit
/// stack, so a deeply nested payload cannot overflow the call stack.
pub(crate) fn check_lossless(value: &Value) -> Result<(), String> {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) => {
                if let Some(f) = n.as_f64().filter(|_| n.is_f64())
                    && f == 0.0
                    && f.is_sign_negative()
                {
                    return Err("data contains -0, which JSON cannot round-trip".into());
                }
            }
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    Ok(())
}

/// Whether `value` is an object whose keys are exactly `expected` (in any order).
pub(crate) fn has_exact_keys(value: &Value, expected: &[&str]) -> bool {
    match value.as_object() {
        Some(map) => map.len() == expected.len() && expected.iter().all(|k| map.contains_key(*k)),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn negative_zero_is_rejected_anywhere_in_the_payload() {
        let v: Value = serde_json::from_str(r#"{"a":[1,{"b":-0}]}"#).unwrap();
        assert!(check_lossless(&v).is_err());
        let ok: Value = serde_json::from_str(r#"{"a":[0,{"b":0.0,"c":-1}]}"#).unwrap();
        assert!(check_lossless(&ok).is_ok());
    }

    #[test]
    fn safe_integers_exclude_fractions_and_huge_values() {
        assert_eq!(as_safe_u64(&json!(5)), Some(5));
        assert_eq!(as_safe_u64(&json!(0.5)), None);
        assert_eq!(as_safe_u64(&json!(-1)), None);
        assert_eq!(as_safe_u64(&json!(MAX_SAFE_INTEGER + 1)), None);
        assert_eq!(as_safe_i64(&json!(-3)), Some(-3));
    }

    #[test]
    fn deep_payload_does_not_overflow_the_stack() {
        let mut v = json!(1);
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert!(check_lossless(&v).is_ok());
        // Dropping the value recurses inside serde_json; leak it to keep the test about us.
        std::mem::forget(v);
    }
}
