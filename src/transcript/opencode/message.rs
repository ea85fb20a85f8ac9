//! One `OpenCode` message's `data` JSON (a database row's `data` column, or an older storage
//! file `msg_*.json`): who wrote it, which model, when, its tokens and its recorded cost,
//! turned into a [`Usage`] by the rules in `docs/TRANSCRIPTS.md, "OpenCode"`.

use serde::Deserialize;

use crate::transcript::json::{Amount, Obj, Text, TokenValue, parse_line};
use crate::transcript::tally::Money;
use crate::transcript::tokens::Usage;

/// The fields of a message the rules read (every one tolerant).
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct Data<'a> {
    id: Text<'a>,
    #[serde(rename = "sessionID")]
    session_id: Text<'a>,
    role: Text<'a>,
    #[serde(rename = "modelID")]
    model_id: Text<'a>,
    #[serde(rename = "providerID")]
    provider_id: Text<'a>,
    time: Obj<Time>,
    tokens: Obj<Tokens>,
    cost: Amount,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Time {
    created: TokenValue,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Tokens {
    input: TokenValue,
    output: TokenValue,
    reasoning: TokenValue,
    cache: Obj<Cache>,
    total: TokenValue,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Cache {
    read: TokenValue,
    write: TokenValue,
}

/// An assistant message's usage, as its `data` records it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenCodeMessage {
    /// `id` (older storage files carry it; a database row's id is its own column).
    pub id: Option<String>,
    /// `sessionID`, if the data carries it.
    pub session: Option<String>,
    /// `modelID`.
    pub model: Option<String>,
    /// `providerID`.
    pub provider: Option<String>,
    /// `time.created`, in milliseconds since the Unix epoch.
    pub created_ms: Option<u64>,
    /// The tokens, normalised: input (`tokens.input`, which excludes what was read from the
    /// cache), output (`tokens.output + tokens.reasoning`), reasoning, cache read
    /// (`tokens.cache.read`), cache creation (`tokens.cache.write`).
    pub usage: Usage,
    /// `cost`, in exact units (zero when absent or not an amount).
    pub cost: Money,
    /// `tokens.total` when recorded, and whether it differed from the sum of the parts.
    pub total_mismatch: bool,
    /// How many token or cost fields held something other than a count (strings, negatives,
    /// floats, objects): they count 0 or their truncated value.
    pub odd_values: u32,
}

/// A message's `data` that is not a JSON object (a damaged row or a truncated file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the message is not a JSON object")]
pub struct NotAnObject;

/// Reads a message's `data`: `Ok(None)` for a message without usage (not an assistant
/// message, or one without a `tokens` object: user messages carry none).
///
/// # Errors
/// [`NotAnObject`] when `data` is not a JSON object.
pub fn parse_message(data: &[u8]) -> Result<Option<OpenCodeMessage>, NotAnObject> {
    let d: Data = parse_line(data).ok_or(NotAnObject)?;
    if !d.role.is("assistant") {
        return Ok(None);
    }
    let Some(tokens) = d.tokens.get() else {
        return Ok(None);
    };
    let mut odd = 0;
    let mut take = |v: TokenValue| {
        if !matches!(v, TokenValue::Exact(_) | TokenValue::Missing) {
            odd += 1;
        }
        v.count()
    };
    let (read, write) = tokens
        .cache
        .get()
        .map_or((TokenValue::Missing, TokenValue::Missing), |c| {
            (c.read, c.write)
        });
    let reasoning = take(tokens.reasoning);
    let usage = Usage {
        input: take(tokens.input),
        output: take(tokens.output).saturating_add(reasoning),
        reasoning,
        cache_read: take(read),
        cache_creation: take(write),
        cache_creation_1h: 0,
    };
    let total_mismatch = tokens.total.known().is_some_and(|t| t != usage.total());
    let cost = match d.cost {
        Amount::Exact(x) | Amount::Coerced(x) => Money::from_dollars(x).unwrap_or_else(|| {
            odd += 1;
            Money::default()
        }),
        Amount::Missing | Amount::Null => Money::default(),
        Amount::Invalid => {
            odd += 1;
            Money::default()
        }
    };
    let text = |t: &Text<'_>| t.non_empty().map(str::to_owned);
    Ok(Some(OpenCodeMessage {
        id: text(&d.id),
        session: text(&d.session_id),
        model: text(&d.model_id),
        provider: text(&d.provider_id),
        created_ms: d.time.get().and_then(|t| t.created.known()),
        usage,
        cost,
        total_mismatch,
        odd_values: odd,
    }))
}

/// A message's `role` and `time.created` (ms since the Unix epoch), whatever its role.
///
/// # Errors
/// [`NotAnObject`] when `data` is not a JSON object.
pub(crate) fn parse_head(data: &[u8]) -> Result<(Option<String>, Option<u64>), NotAnObject> {
    let d: Data = parse_line(data).ok_or(NotAnObject)?;
    Ok((
        d.role.non_empty().map(str::to_owned),
        d.time.get().and_then(|t| t.created.known()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_row_reads_into_the_normalised_fields() {
        let row = br#"{"parentID":"m0","role":"assistant","cost":0.5,"tokens":{"total":8485,"input":6,"output":220,"reasoning":10,"cache":{"write":8249,"read":0}},"modelID":"qwen3.6-plus-free","providerID":"opencode","time":{"created":1778953138864}}"#;
        let m = parse_message(row).unwrap().unwrap();
        assert_eq!(m.usage.input, 6);
        assert_eq!(m.usage.output, 230, "reasoning is billed as output");
        assert_eq!(m.usage.reasoning, 10);
        assert_eq!(m.usage.cache_creation, 8249);
        assert_eq!(m.usage.total(), 8485);
        assert!(!m.total_mismatch);
        assert_eq!(m.cost, Money::from_dollars(0.5).unwrap());
        assert_eq!(m.model.as_deref(), Some("qwen3.6-plus-free"));
        assert_eq!(m.created_ms, Some(1_778_953_138_864));
        assert_eq!(m.odd_values, 0);
    }

    #[test]
    fn other_rows_and_odd_values() {
        assert_eq!(parse_message(br#"{"role":"user","tokens":{}}"#), Ok(None));
        assert_eq!(parse_message(br#"{"role":"assistant"}"#), Ok(None));
        assert_eq!(parse_message(b"not json"), Err(NotAnObject));
        assert_eq!(
            parse_message(br#"{"role":"assistant","tokens""#),
            Err(NotAnObject)
        );
        let odd = br#"{"role":"assistant","cost":-1,"tokens":{"input":"7","output":-3,"total":1}}"#;
        let m = parse_message(odd).unwrap().unwrap();
        assert_eq!(m.usage.input, 7);
        assert_eq!(m.usage.output, 0);
        assert_eq!(m.cost, Money::default());
        assert_eq!(m.odd_values, 3);
        assert!(m.total_mismatch);
    }
}
