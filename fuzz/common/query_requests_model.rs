//! The `query_requests` fuzz target's naive semantics: filters (docs/SESSIONS.md, "Filters")
//! re-implemented simply (AND of clauses, OR of values, inclusive finite ranges, text matched by
//! collapsing whitespace and folding case), event-type reads as filtered listings, and windows
//! as the events whose seq lies in the clamped range, all from the fixture's reference answers.

use agentlog::query::{
    Availability, EventFilter, SessionEventDocument, SessionEventRecord, SessionFilter,
    SessionRecord, SurfaceClass, WindowRequest, event_text,
};
use serde_json::Value;

use crate::query_requests_fixture::{Fixture, SessionRef};

/// The largest safe integer, 2^53 - 1.
pub const SAFE: u64 = (1 << 53) - 1;
/// The event types that go on the surface.
const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// An answer, or the code of the error that refused it.
pub type R<T> = Result<T, &'static str>;

/// docs/SESSIONS.md, "Store layout": 1-255 bytes, no separators, controls or `..`, no leading
/// `.`.
fn id_is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 255
        && !id.contains(['/', '\\', ':'])
        && !id.chars().any(char::is_control)
        && !id.contains("..")
        && !id.starts_with('.')
}

/// The session a request names, or the error naming it gives.
fn session<'a>(f: &'a Fixture, id: &str) -> R<&'a SessionRef> {
    if !id_is_valid(id) {
        return Err("invalid_session_id");
    }
    f.refs.get(id).ok_or("session_not_found")
}

fn range_ok(from: Option<f64>, to: Option<f64>) -> bool {
    from.is_none_or(f64::is_finite)
        && to.is_none_or(f64::is_finite)
        && !matches!((from, to), (Some(a), Some(b)) if a > b)
}

fn in_range(n: f64, from: Option<f64>, to: Option<f64>) -> bool {
    from.is_none_or(|f| f <= n) && to.is_none_or(|t| n <= t)
}

/// The sessions of `all` that pass `filters`, or `invalid_filter`.
#[allow(
    clippy::cast_precision_loss,
    reason = "seqs, times and createdAt are safe integers, exact in f64, as the filters compare them"
)]
pub fn naive_sessions(all: &[SessionRecord], filters: &[SessionFilter]) -> R<Vec<SessionRecord>> {
    let valid = filters.iter().all(|f| match f {
        SessionFilter::CreatedAt { from, to } => range_ok(*from, *to),
        _ => true,
    });
    if !valid {
        return Err("invalid_filter");
    }
    let keep = |r: &SessionRecord| {
        filters.iter().all(|f| match f {
            SessionFilter::Id { values } => values.contains(&r.header.id),
            SessionFilter::Cwd { values } => values.contains(&r.header.cwd),
            SessionFilter::CreatedAt { from, to } => {
                in_range(r.header.created_at as f64, *from, *to)
            }
            SessionFilter::Parent { values } => values.contains(&r.header.parent_session),
            SessionFilter::Availability { values } => values.iter().any(|a| match a {
                Availability::Live => r.live,
                Availability::Persisted => r.persisted,
            }),
        })
    };
    Ok(all.iter().filter(|r| keep(r)).cloned().collect())
}

/// JavaScript's `\s`, listed.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Simple case folding, approximated per character as dsh's `/iu` regex compares:
/// upper then lower case when each is one character, else lower case, else the character.
fn fold(c: char) -> char {
    fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }
    single(c.to_uppercase())
        .and_then(|u| single(u.to_lowercase()))
        .or_else(|| single(c.to_lowercase()))
        .unwrap_or(c)
}

/// `s` folded, with every whitespace run collapsed to one space.
fn canonical(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if !js_space(c) {
            out.push(fold(c));
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    out
}

/// The query's words joined by single spaces, searched in the collapsed text (the words hold
/// no whitespace, so a gap matches exactly one collapsed run).
fn text_matches(query: &str, text: &str) -> bool {
    let words: Vec<String> = query
        .split(js_space)
        .filter(|w| !w.is_empty())
        .map(canonical)
        .collect();
    canonical(text).contains(&words.join(" "))
}

fn event_filters_valid(filters: &[EventFilter]) -> bool {
    filters.iter().all(|f| match f {
        EventFilter::Seq { from, to } | EventFilter::Time { from, to } => range_ok(*from, *to),
        EventFilter::Text { text } => text.chars().any(|c| !js_space(c)),
        _ => true,
    })
}

/// `filter_events(id, filters)` as the reference answers give it.
#[allow(
    clippy::cast_precision_loss,
    reason = "seqs, times and createdAt are safe integers, exact in f64, as the filters compare them"
)]
pub fn naive_events(
    f: &Fixture,
    id: &str,
    filters: &[EventFilter],
) -> R<Vec<SessionEventDocument>> {
    if !event_filters_valid(filters) {
        return Err("invalid_filter");
    }
    let s = session(f, id)?;
    let records = s.records.clone()?;
    let docs = s
        .events
        .iter()
        .zip(records)
        .map(|(e, record)| SessionEventDocument {
            record,
            text: event_text(e),
        })
        .filter(|d| !d.text.is_empty());
    let keep = |d: &SessionEventDocument| {
        let r = &d.record;
        filters.iter().all(|flt| match flt {
            EventFilter::Seq { from, to } => in_range(r.seq as f64, *from, *to),
            EventFilter::Time { from, to } => in_range(r.time as f64, *from, *to),
            EventFilter::Type { values } => values.contains(&r.event_type),
            EventFilter::Surface { values } => values.contains(&r.surface),
            EventFilter::Text { text } => text_matches(text, &d.text),
        })
    };
    Ok(docs.filter(|d| keep(d)).collect())
}

/// `list_events_of_types(id, types)`: the reference listing, filtered.
pub fn naive_types(f: &Fixture, id: &str, types: &[&str]) -> R<Vec<SessionEventRecord>> {
    let s = session(f, id)?;
    match &s.records {
        Ok(records) => Ok(records
            .iter()
            .filter(|r| types.contains(&r.event_type.as_str()))
            .cloned()
            .collect()),
        // A broken surface: only a read that needs no fold (no surface type asked) answers.
        Err(e) if types.iter().any(|t| SURFACE_TYPES.contains(t)) => Err(e),
        Err(_) => Ok(s
            .events
            .iter()
            .filter(|e| types.contains(&e.event_type.as_str()))
            .map(|e| SessionEventRecord {
                session_id: id.to_string(),
                seq: e.seq,
                event_type: e.event_type.clone(),
                time: e.time,
                surface: SurfaceClass::LogOnly,
            })
            .collect()),
    }
}

/// The window as (target seq, events' seqs, start, end).
pub fn naive_window(f: &Fixture, req: &WindowRequest, max: u64) -> R<(u64, Vec<u64>, u64, u64)> {
    let before = req.before.unwrap_or(0);
    let after = req.after.unwrap_or(0);
    if before > max || after > max {
        return Err("invalid_window");
    }
    let s = session(f, &req.session_id)?;
    if !s.events.iter().any(|e| e.seq == req.seq) {
        return Err("event_not_found");
    }
    let (lo, hi) = (
        req.seq.saturating_sub(before),
        req.seq.saturating_add(after),
    );
    let seqs: Vec<u64> = s
        .events
        .iter()
        .map(|e| e.seq)
        .filter(|s| (lo..=hi).contains(s))
        .collect();
    Ok((req.seq, seqs.clone(), seqs[0], *seqs.last().unwrap()))
}

/// `{sessionId, seq, before?, after?}` parsed by hand.
pub fn naive_window_json(v: &Value) -> Option<WindowRequest> {
    let safe = |v: &Value| v.as_u64().filter(|n| *n <= SAFE);
    let bound = |key: &str| match v.get(key) {
        None | Some(Value::Null) => Some(None),
        Some(b) => safe(b).map(Some),
    };
    Some(WindowRequest {
        session_id: v.get("sessionId")?.as_str()?.to_string(),
        seq: safe(v.get("seq")?)?,
        before: bound("before")?,
        after: bound("after")?,
    })
}
