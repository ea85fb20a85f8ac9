//! Search requests: query normalization, match modes, limits, and the canonical form a cursor
//! is bound to (docs/SEARCH.md, "Requests").

use serde_json::{Value, json};

use crate::query::{EventFilter, SessionFilter};
use crate::search::error::SearchError;

/// The default page size.
pub const DEFAULT_LIMIT: u64 = 20;
/// The largest page size.
pub const MAX_LIMIT: u64 = 100;

/// How the words of a query must occur in an event's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MatchMode {
    /// The whole query as one phrase: its tokens, adjacent and in order (the reference's rule).
    #[default]
    Phrase,
    /// Every whitespace-separated term of the query, each as a phrase, in any order.
    All,
}

/// A search across sessions: each matching session once, with its best event.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionSearchRequest {
    /// The text to find.
    pub query: String,
    /// Which sessions to search (AND of clauses, OR of values within one).
    pub session_filters: Vec<SessionFilter>,
    /// Which events of them to search (a `text` filter is refused).
    pub event_filters: Vec<EventFilter>,
    /// Page size (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<u64>,
    /// The `next_cursor` of the previous page of this very request.
    pub cursor: Option<String>,
    /// Phrase (default) or every term.
    pub mode: MatchMode,
}

/// A search within one session: every matching event.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventSearchRequest {
    /// The session searched.
    pub session_id: String,
    /// The text to find.
    pub query: String,
    /// Which events to search (a `text` filter is refused).
    pub filters: Vec<EventFilter>,
    /// Page size (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<u64>,
    /// The `next_cursor` of the previous page of this very request.
    pub cursor: Option<String>,
    /// Phrase (default) or every term.
    pub mode: MatchMode,
}

/// JavaScript's `\s` (what the reference trims and collapses): Unicode `White_Space` plus the
/// BOM, without NEL.
pub fn is_js_space(c: char) -> bool {
    c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}')
}

/// Replaces the characters the index reserves (NUL, and U+FDD0/U+FDD1, its highlight markers)
/// with U+FFFD. Applied to every document and every query.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\0' | '\u{FDD0}' | '\u{FDD1}' => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// A query trimmed, its whitespace runs collapsed to one space, checked (not empty, no NUL)
/// and sanitized.
pub fn normalize_query(query: &str) -> Result<String, SearchError> {
    let collapsed = query
        .split(is_js_space)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if collapsed.is_empty() {
        return Err(SearchError::InvalidQuery {
            reason: "the query is empty".into(),
        });
    }
    if collapsed.contains('\0') {
        return Err(SearchError::InvalidQuery {
            reason: "the query contains NUL".into(),
        });
    }
    Ok(sanitize(&collapsed))
}

/// A request's query and page size, checked, and what the index is asked for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The query, normalized ([`normalize_query`]).
    pub text: String,
    /// The page size ([`check_limit`]).
    pub limit: u64,
    /// Its FTS5 expression ([`fts_expression`]).
    pub expression: String,
    /// Its phrases ([`phrases`]), for marking the page's texts.
    pub phrases: Vec<String>,
}

impl Query {
    /// Checks `query` and `limit` (in that order) for a search in `mode`.
    pub fn new(query: &str, mode: MatchMode, limit: Option<u64>) -> Result<Query, SearchError> {
        let text = normalize_query(query)?;
        let limit = check_limit(limit)?;
        Ok(Query {
            limit,
            expression: fts_expression(&text, mode),
            phrases: phrases(&text, mode),
            text,
        })
    }
}

/// The phrases of a normalized query, unquoted: the whole query, or in [`MatchMode::All`] each
/// term that can hold a token (none: nothing can match).
pub fn phrases(normalized: &str, mode: MatchMode) -> Vec<String> {
    match mode {
        MatchMode::Phrase => vec![normalized.to_string()],
        MatchMode::All => normalized
            .split(' ')
            .filter(|term| term.chars().any(is_token_char))
            .map(str::to_string)
            .collect(),
    }
}

/// The FTS5 expression for a normalized query: one quoted phrase (so `OR`, `NEAR`, `*` and
/// quotes are plain text), or in [`MatchMode::All`] one phrase per term, all required.
pub fn fts_expression(normalized: &str, mode: MatchMode) -> String {
    let terms: Vec<String> = phrases(normalized, mode)
        .iter()
        .map(|text| format!("\"{}\"", text.replace('"', "\"\"")))
        .collect();
    if terms.is_empty() {
        // Nothing to find, like a phrase of punctuation alone.
        "\"\"".into()
    } else {
        terms.join(" AND ")
    }
}

/// Whether the tokenizer can start a token at `c`: a letter, a digit, or a private-use
/// character. (Letters here are Unicode's Alphabetic, a slight superset of the tokenizer's
/// letter categories: a term of rare combining signs alone is kept and then finds nothing.)
fn is_token_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(c, '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{FFFFD}' | '\u{100000}'..='\u{10FFFD}')
}

/// The page size asked for, checked.
pub fn check_limit(limit: Option<u64>) -> Result<u64, SearchError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(limit)
    } else {
        Err(SearchError::InvalidLimit {
            limit,
            max: MAX_LIMIT,
        })
    }
}

/// Refuses the `text` kind, which has no meaning beside a full-text query.
pub fn check_event_filters(filters: &[EventFilter]) -> Result<(), SearchError> {
    if filters
        .iter()
        .any(|f| matches!(f, EventFilter::Text { .. }))
    {
        return Err(SearchError::filter(
            "a search takes no text filter; put the text in the query",
        ));
    }
    crate::query::compile_event_filters(filters)?;
    Ok(())
}

/// A filter as canonical JSON: its values sorted (nulls first), so the order a caller lists
/// them in does not matter.
fn canonical_filter(filter: Value) -> Value {
    let mut filter = filter;
    if let Some(values) = filter.get_mut("values").and_then(Value::as_array_mut) {
        values.sort_by_key(|v| match v {
            Value::Null => (0, String::new()),
            other => (1, other.to_string()),
        });
        values.dedup();
    }
    filter
}

fn canonical_filters<T: serde::Serialize>(filters: &[T]) -> Vec<Value> {
    let mut out: Vec<Value> = filters
        .iter()
        .map(|f| canonical_filter(serde_json::to_value(f).unwrap_or(Value::Null)))
        .collect();
    out.sort_by_key(Value::to_string);
    out
}

/// What a session-search cursor is bound to: the normalized request.
pub fn session_fingerprint(
    query: &str,
    mode: MatchMode,
    session_filters: &[SessionFilter],
    event_filters: &[EventFilter],
    limit: u64,
) -> String {
    json!({
        "scope": "sessions",
        "query": query,
        "match": mode,
        "sessionFilters": canonical_filters(session_filters),
        "eventFilters": canonical_filters(event_filters),
        "limit": limit,
    })
    .to_string()
}

/// What an event-search cursor is bound to: the normalized request and its session.
pub fn event_fingerprint(
    session_id: &str,
    query: &str,
    mode: MatchMode,
    filters: &[EventFilter],
    limit: u64,
) -> String {
    json!({
        "scope": "events",
        "sessionId": session_id,
        "query": query,
        "match": mode,
        "eventFilters": canonical_filters(filters),
        "limit": limit,
    })
    .to_string()
}

/// What a transcript-search cursor is bound to: the normalized request and the paths searched.
pub fn transcript_fingerprint(
    query: &str,
    mode: MatchMode,
    paths: &[std::path::PathBuf],
    limit: u64,
) -> String {
    json!({
        "scope": "transcripts",
        "query": query,
        "match": mode,
        "paths": paths.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
        "limit": limit,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::SurfaceClass;

    #[test]
    fn queries_are_trimmed_collapsed_and_sanitized() {
        assert_eq!(
            normalize_query("  hello \t\n  world ").unwrap(),
            "hello world"
        );
        assert_eq!(normalize_query("a\u{FDD0}b").unwrap(), "a\u{FFFD}b");
        for bad in ["", "  \n\t", "\u{FEFF}"] {
            assert_eq!(normalize_query(bad).unwrap_err().code(), "invalid_query");
        }
        assert_eq!(normalize_query("a\0b").unwrap_err().code(), "invalid_query");
    }

    #[test]
    fn the_query_is_one_phrase_so_operators_are_text() {
        assert_eq!(
            fts_expression("needle OR \"x\" *", MatchMode::Phrase),
            "\"needle OR \"\"x\"\" *\""
        );
        assert_eq!(
            fts_expression("a * b\"", MatchMode::All),
            "\"a\" AND \"b\"\"\""
        );
        assert_eq!(fts_expression("* -", MatchMode::All), "\"\"");
    }

    #[test]
    fn limits_run_from_one_to_the_maximum() {
        assert_eq!(check_limit(None).unwrap(), DEFAULT_LIMIT);
        assert_eq!(check_limit(Some(100)).unwrap(), 100);
        assert_eq!(check_limit(Some(0)).unwrap_err().code(), "invalid_limit");
        assert_eq!(check_limit(Some(101)).unwrap_err().code(), "invalid_limit");
    }

    #[test]
    fn fingerprints_ignore_filter_and_value_order_but_not_the_limit() {
        let a = [
            EventFilter::Surface {
                values: vec![SurfaceClass::Shadowed, SurfaceClass::Current],
            },
            EventFilter::Type {
                values: vec!["b".into(), "a".into()],
            },
        ];
        let b = [
            EventFilter::Type {
                values: vec!["a".into(), "b".into()],
            },
            EventFilter::Surface {
                values: vec![SurfaceClass::Current, SurfaceClass::Shadowed],
            },
        ];
        let fp =
            |f: &[EventFilter], limit| session_fingerprint("q", MatchMode::Phrase, &[], f, limit);
        assert_eq!(fp(&a, 5), fp(&b, 5));
        assert_ne!(fp(&a, 5), fp(&a, 6));
        assert_ne!(
            fp(&a, 5),
            session_fingerprint("q", MatchMode::All, &[], &a, 5)
        );
    }

    #[test]
    fn text_filters_are_refused() {
        let err = check_event_filters(&[EventFilter::Text { text: "x".into() }]).unwrap_err();
        assert_eq!(err.code(), "invalid_filter");
    }
}
