//! The search oracle: the reference's rules applied by a plain scan of every session, with a
//! tokenizer of its own, and builders of raw session logs.
#![allow(dead_code)]
// Test figures (offsets, row counts, nanosecond stamps) are far below 2^53, and Parquet and
// SQLite keep integers as i64, so the numeric casts are deliberate; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

use std::path::Path;
use std::sync::Arc;

use agentlog::query::{
    JsonlSource, QueryConfig, QueryService, Store, StoreConfig, SurfaceClass, validate_session_id,
};
use serde_json::{Value, json};
use unicode_normalization::UnicodeNormalization;

/// One hit as the oracle finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub session_id: String,
    pub seq: u64,
    pub event_type: String,
    pub time: i64,
    pub surface: SurfaceClass,
    pub snippet: String,
}

/// A folded token and its byte range in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

fn is_diacritic(c: char) -> bool {
    ('\u{300}'..='\u{36F}').contains(&c)
}

fn is_private_use(c: char) -> bool {
    matches!(c, '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{FFFFD}' | '\u{100000}'..='\u{10FFFD}')
}

fn starts_token(c: char) -> bool {
    c.is_alphanumeric() || is_private_use(c)
}

/// The only item of `it`, if it has exactly one.
fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// unicode61's folding: a Latin letter with one diacritic loses it (`remove_diacritics=1` does
/// not handle two), then lower case by simple folding; a combining diacritic inside a token
/// folds to nothing.
fn fold(c: char) -> Option<char> {
    if is_diacritic(c) {
        return None;
    }
    if c.is_ascii() {
        return Some(c.to_ascii_lowercase());
    }
    let parts: Vec<char> = std::iter::once(c).nfd().collect();
    let c = match parts.as_slice() {
        [base, mark] if base.is_ascii_alphabetic() && is_diacritic(*mark) => *base,
        _ => c,
    };
    Some(
        single(c.to_uppercase())
            .and_then(|u| single(u.to_lowercase()))
            .or_else(|| single(c.to_lowercase()))
            .unwrap_or(c),
    )
}

/// The tokens of `text` under the unicode61 rules: runs of letters, digits and private-use
/// characters (combining diacritics continue a token but never start one), folded.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut current: Option<Token> = None;
    for (at, c) in text.char_indices() {
        let end = at + c.len_utf8();
        match current.as_mut() {
            Some(token) if starts_token(c) || is_diacritic(c) => {
                token.text.extend(fold(c));
                token.end = end;
            }
            Some(_) => out.extend(current.take()),
            None if starts_token(c) => {
                current = Some(Token {
                    text: fold(c).into_iter().collect(),
                    start: at,
                    end,
                });
            }
            None => {}
        }
    }
    out.extend(current);
    out
}

/// NUL and the two markers replaced, as the index does.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\0' | '\u{FDD0}' | '\u{FDD1}' => '\u{FFFD}',
            c => c,
        })
        .collect()
}

fn js_space(c: char) -> bool {
    c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}')
}

/// The phrases a query asks for, as token texts: one phrase, or one per term (`all`).
pub fn phrases(query: &str, all: bool) -> Vec<Vec<String>> {
    let normalized = sanitize(
        &query
            .split(js_space)
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    );
    let words = |t: &str| tokens(t).into_iter().map(|t| t.text).collect::<Vec<_>>();
    if all {
        normalized
            .split(' ')
            .map(words)
            .filter(|p| !p.is_empty())
            .collect()
    } else {
        vec![words(&normalized)]
    }
}

/// The merged match ranges (token index ranges) of `phrases` in `doc`, or `None` when some
/// phrase does not occur (an empty phrase never occurs).
pub fn matches(doc: &[Token], phrases: &[Vec<String>]) -> Option<Vec<(usize, usize)>> {
    if phrases.is_empty() {
        return None;
    }
    let mut instances = Vec::new();
    for phrase in phrases {
        if phrase.is_empty() || phrase.len() > doc.len() {
            return None;
        }
        let found: Vec<(usize, usize)> = (0..=doc.len() - phrase.len())
            .filter(|&i| phrase.iter().zip(&doc[i..]).all(|(p, t)| *p == t.text))
            .map(|i| (i, i + phrase.len() - 1))
            .collect();
        if found.is_empty() {
            return None;
        }
        instances.extend(found);
    }
    instances.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, end) in instances {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    Some(merged)
}

/// The snippet rule, written from the description: markers dropped, whitespace collapsed,
/// a window a third of the budget before the first match, ellipses on cut sides.
pub fn snippet(text: &str, doc: &[Token], ranges: &[(usize, usize)], max: usize) -> String {
    let first_byte = ranges.first().map(|r| doc[r.0].start);
    let mut chars: Vec<char> = Vec::new();
    let mut match_start = 0;
    for (at, c) in text.char_indices() {
        if Some(at) == first_byte {
            match_start = chars.len();
        }
        if js_space(c) {
            if chars.last().is_some_and(|l| *l != ' ') {
                chars.push(' ');
            }
        } else {
            chars.push(c);
        }
    }
    if chars.last() == Some(&' ') {
        chars.pop();
    }
    let len = chars.len();
    if len <= max {
        return chars.into_iter().collect();
    }
    if max == 1 {
        return "…".into();
    }
    let m = match_start.min(len - 1);
    let mut start = m.saturating_sub(max / 3);
    let prefix = i64::from(start > 0);
    let mut suffix = 1;
    let mut content = max as i64 - prefix - suffix;
    if content < 1 {
        start = m;
        suffix = 0;
        content = max as i64 - prefix;
    } else if m as i64 >= start as i64 + content {
        start = m + 1 - content as usize;
    }
    let content_u = content.max(0) as usize;
    let end = len.min(start + content_u);
    let mut content_u = content_u;
    if end == len {
        suffix = 0;
        content_u = (max as i64 - prefix).max(0) as usize;
        start = end.saturating_sub(content_u);
    }
    let mut out = String::new();
    if prefix == 1 {
        out.push('…');
    }
    out.extend(&chars[start..len.min(start + content_u)]);
    if suffix == 1 {
        out.push('…');
    }
    out
}

/// A scanned candidate: hit plus its ranking keys.
#[derive(Debug, Clone)]
struct Candidate {
    hit: Hit,
    count: usize,
    length: usize,
}

/// The readable sessions' documents by a plain scan through the query service, and the ids of
/// the sessions it cannot read.
fn scan_store(
    root: &Path,
) -> (
    Vec<(String, Vec<agentlog::query::SessionEventDocument>)>,
    Vec<String>,
) {
    let store = Store::with_source(
        root,
        StoreConfig::default(),
        Arc::new(JsonlSource::new(root)),
    )
    .unwrap();
    let service = QueryService::new(&store, QueryConfig::default()).unwrap();
    let mut ids: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(std::result::Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|id| validate_session_id(id).is_ok())
        .filter(|id| {
            std::fs::symlink_metadata(root.join(id).join("events.jsonl")).is_ok()
                || std::fs::symlink_metadata(root.join(id))
                    .is_ok_and(|m| m.file_type().is_symlink())
        })
        .collect();
    ids.sort();
    let mut readable = Vec::new();
    let mut unreadable = Vec::new();
    for id in ids {
        match service.filter_events(&id, &[]) {
            Ok(docs) => readable.push((id, docs)),
            Err(_) => unreadable.push(id),
        }
    }
    (readable, unreadable)
}

fn candidates(
    id: &str,
    docs: &[agentlog::query::SessionEventDocument],
    query: &str,
    all: bool,
    snippet_chars: usize,
) -> Vec<Candidate> {
    let wanted = phrases(query, all);
    docs.iter()
        .filter_map(|doc| {
            let text = sanitize(&doc.text);
            let toks = tokens(&text);
            let ranges = matches(&toks, &wanted)?;
            Some(Candidate {
                hit: Hit {
                    session_id: id.to_string(),
                    seq: doc.record.seq,
                    event_type: doc.record.event_type.clone(),
                    time: doc.record.time,
                    surface: doc.record.surface,
                    snippet: snippet(&text, &toks, &ranges, snippet_chars),
                },
                count: ranges.len(),
                length: text.chars().count(),
            })
        })
        .collect()
}

fn event_order(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.count
        .cmp(&a.count)
        .then(a.length.cmp(&b.length))
        .then(b.hit.time.cmp(&a.hit.time))
}

/// Session search by the oracle: each session's best event, sessions ranked; and the ids of
/// unreadable sessions.
pub fn search_sessions(root: &Path, query: &str, all: bool) -> (Vec<Hit>, Vec<String>) {
    let (readable, unreadable) = scan_store(root);
    let mut best: Vec<Candidate> = readable
        .iter()
        .filter_map(|(id, docs)| {
            let mut c = candidates(id, docs, query, all, 240);
            c.sort_by(|a, b| event_order(a, b).then(b.hit.seq.cmp(&a.hit.seq)));
            c.into_iter().next()
        })
        .collect();
    best.sort_by(|a, b| {
        event_order(a, b)
            .then(a.hit.session_id.cmp(&b.hit.session_id))
            .then(b.hit.seq.cmp(&a.hit.seq))
    });
    (best.into_iter().map(|c| c.hit).collect(), unreadable)
}

/// Event search by the oracle: `None` when the session is unreadable or absent.
pub fn search_events(root: &Path, id: &str, query: &str, all: bool) -> Option<Vec<Hit>> {
    let (readable, _) = scan_store(root);
    let (_, docs) = readable.into_iter().find(|(i, _)| i == id)?;
    let mut c = candidates(id, &docs, query, all, 240);
    c.sort_by(|a, b| event_order(a, b).then(b.hit.seq.cmp(&a.hit.seq)));
    Some(c.into_iter().map(|c| c.hit).collect())
}

/// A header line.
pub fn header(id: &str, created_at: u64) -> String {
    json!({"type": "session", "version": 0, "id": id, "createdAt": created_at}).to_string()
}

/// A `user/message` line appended to the surface.
pub fn user(seq: u64, time: i64, text: &str) -> String {
    json!({"type": "user/message", "seq": seq, "time": time,
           "data": {"id": format!("m{seq}"), "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": text}]},
           "surfaceOp": "append"})
    .to_string()
}

/// A `user/message` line replacing the current node `target`.
pub fn replacing_user(seq: u64, time: i64, text: &str, target: u64) -> String {
    let mut v: Value = serde_json::from_str(&user(seq, time, text)).unwrap();
    v["surfaceOp"] = json!({"op": "replace", "start": target, "end": target});
    v["sourceEventSeqs"] = json!([target]);
    v.to_string()
}

/// A log-only `todo/write` line (its text is `status\ncontent`).
pub fn todo(seq: u64, time: i64, text: &str) -> String {
    json!({"type": "todo/write", "seq": seq, "time": time,
           "data": {"todos": [{"content": text, "status": "pending"}]}})
    .to_string()
}

/// Writes a whole log.
pub fn write_log(root: &Path, id: &str, lines: &[String]) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
}

/// Appends lines to a log.
pub fn append_lines(root: &Path, id: &str, lines: &[String]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(id).join("events.jsonl"))
        .unwrap();
    for line in lines {
        writeln!(f, "{line}").unwrap();
    }
}
