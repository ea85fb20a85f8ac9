//! Reading a session log into search documents, whole or from where the index stopped.
//!
//! The rules are the query service's for a stored session, so a search sees exactly the
//! documents `filter_events` would: the committed region ends at the first line that does not
//! parse, breaks the envelope or the seq order (unless a `turn/end` follows it, which makes the
//! log corrupt); legacy shapes are normalized; message shapes and the vocabulary are checked;
//! the surface is folded. A document is an event with non-empty extracted text, its text
//! sanitized, its length counted in code points, its class the fold's.
//!
//! Reading on from the covered offset continues the stored fold. Two rare cases need what came
//! before and are read whole instead: a legacy event whose normalization inherits an earlier
//! id, and a tool-result rewrite, which is checked against the result it rewrites.

use memchr::{memchr, memmem};
use serde_json::Value;

use crate::query::{
    HeaderError, QueryError, SessionEvent, SessionHeader, SurfaceClass, SurfaceOp, SurfaceState,
    Vocabulary, check_message_shape, event_text, needs_prefix, normalize_log, parse_header,
    parse_stored_line,
};
use crate::search::request::sanitize;

/// One searchable event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// Its seq.
    pub seq: u64,
    /// Its type.
    pub event_type: String,
    /// Its time, epoch ms.
    pub time: i64,
    /// Its surface class.
    pub surface: SurfaceClass,
    /// Its extracted text, sanitized.
    pub text: String,
    /// The text's length in code points.
    pub length: u64,
}

/// What reading some new bytes of a log found.
#[derive(Debug)]
pub struct Delta {
    /// The documents of the new events.
    pub docs: Vec<Doc>,
    /// Earlier seqs the new events shadowed.
    pub shadowed_earlier: Vec<u64>,
    /// End of the committed region now.
    pub covered: u64,
    /// The seq the next event must have.
    pub next_seq: u64,
    /// The fold after the new events.
    pub state: SurfaceState,
}

/// The outcome of a read.
#[derive(Debug)]
pub enum Read {
    /// The log (or its new part) as documents.
    Indexed(Delta),
    /// The log breaks a rule: the session is left out of searches until its log changes.
    Unreadable(QueryError),
    /// Reading on needs the events before: read the whole log instead.
    NeedsWhole,
}

/// A whole log's bytes (`bytes` from offset 0), read for session `id`.
pub fn read_whole(
    id: &str,
    bytes: &[u8],
    vocabulary: &Vocabulary,
) -> (Option<SessionHeader>, Read) {
    let corrupt = |reason: String| {
        Read::Unreadable(QueryError::CorruptSession {
            session_id: id.to_string(),
            cause: reason.into(),
        })
    };
    let Some(header_end) = memchr(b'\n', bytes) else {
        return (None, corrupt("the header line is incomplete".into()));
    };
    let header = match serde_json::from_slice::<Value>(bytes.get(..header_end).unwrap_or_default())
    {
        Err(e) => return (None, corrupt(format!("the header line is not JSON: {e}"))),
        Ok(value) => match parse_header(&value) {
            Ok(header) => header,
            Err(HeaderError::Unsupported(reason)) => {
                let err = QueryError::UnsupportedFormat {
                    session_id: id.to_string(),
                    cause: reason.into(),
                };
                return (None, Read::Unreadable(err));
            }
            Err(e @ HeaderError::Invalid(_)) => return (None, corrupt(e.to_string())),
        },
    };
    if header.id != id {
        let reason = format!("the log of \"{id}\" holds session \"{}\"", header.id);
        return (Some(header), corrupt(reason));
    }
    let start = header_end + 1;
    let read = read_events(
        id,
        bytes.get(start..).unwrap_or_default(),
        start as u64,
        0,
        SurfaceState::new(),
        vocabulary,
        true,
    );
    (Some(header), read)
}

/// The bytes after `covered` (`bytes` starts there), continuing a fold that expects `next_seq`.
pub fn read_on(
    id: &str,
    bytes: &[u8],
    covered: u64,
    next_seq: u64,
    state: SurfaceState,
    vocabulary: &Vocabulary,
) -> Read {
    read_events(id, bytes, covered, next_seq, state, vocabulary, false)
}

fn read_events(
    id: &str,
    bytes: &[u8],
    base: u64,
    next_seq: u64,
    mut state: SurfaceState,
    vocabulary: &Vocabulary,
    whole: bool,
) -> Read {
    let corrupt = |reason: String| {
        Read::Unreadable(QueryError::CorruptSession {
            session_id: id.to_string(),
            cause: reason.into(),
        })
    };
    let (events, covered) = match committed_events(bytes, base, next_seq) {
        Ok(found) => found,
        Err(issue) => return corrupt(issue),
    };
    let first_new = next_seq;
    if !whole
        && events.iter().any(|e| {
            needs_prefix(e)
                || (e.event_type == "tool/result"
                    && matches!(e.surface_op, Some(SurfaceOp::Replace { .. })))
        })
    {
        return Read::NeedsWhole;
    }
    let events = match normalize_log(id, events) {
        Ok(events) => events,
        Err(v) => return corrupt(v.to_string()),
    };
    for event in &events {
        if let Err(v) = check_message_shape(event) {
            return corrupt(v.to_string());
        }
        if let Err(v) = vocabulary.check(event) {
            return Read::Unreadable(QueryError::UnsupportedFormat {
                session_id: id.to_string(),
                cause: Box::new(v),
            });
        }
    }
    let replacements_before = state.replacements().len();
    for (i, event) in events.iter().enumerate() {
        // A rewrite's target is an earlier event of this read (reads on never hold one).
        if let Err(violation) = state.push(event, events.get(..i).unwrap_or_default()) {
            return Read::Unreadable(QueryError::InvalidSurface {
                session_id: id.to_string(),
                violation,
            });
        }
    }
    let mut shadowed_new = std::collections::HashSet::new();
    let mut shadowed_earlier = Vec::new();
    for replacement in state
        .replacements()
        .get(replacements_before..)
        .unwrap_or_default()
    {
        for seq in &replacement.shadowed_seqs {
            if *seq < first_new {
                shadowed_earlier.push(*seq);
            } else {
                shadowed_new.insert(*seq);
            }
        }
    }
    let docs = documents(&events, &shadowed_new);
    Read::Indexed(Delta {
        docs,
        shadowed_earlier,
        covered,
        next_seq: state.next_seq().max(next_seq),
        state,
    })
}

/// The committed events in `bytes` (which start at offset `base`, with seq `expected`), and the
/// offset where the committed region ends; the reason when damage sits before a `turn/end`.
fn committed_events(
    bytes: &[u8],
    base: u64,
    mut expected: u64,
) -> Result<(Vec<SessionEvent>, u64), String> {
    let mut events = Vec::new();
    let mut pos = 0usize;
    let mut committed = 0usize;
    while let Some(rest) = bytes.get(pos..) {
        let Some(len) = memchr(b'\n', rest) else {
            break;
        };
        let line = rest.get(..len).unwrap_or_default();
        let at = base + pos as u64;
        // A line that is not an event is damage (torn, unless a turn/end follows); a
        // well-formed event that breaks a read rule makes the log corrupt wherever it stands.
        let issue = match parse_stored_line(line) {
            Err(fault) if !fault.is_damage() => {
                return Err(format!("invalid committed event at byte {at}: {fault}"));
            }
            Err(fault) => Some(format!("unparsable committed event at byte {at}: {fault}")),
            Ok(event) if event.seq != expected => Some(format!(
                "seq gap in committed region at byte {at}: seq {} where {expected} was expected",
                event.seq
            )),
            Ok(event) => {
                events.push(event);
                expected += 1;
                None
            }
        };
        let next = pos + len + 1;
        if let Some(issue) = issue {
            if later_turn_end(bytes.get(next..).unwrap_or_default()) {
                return Err(issue);
            }
            break;
        }
        pos = next;
        committed = pos;
    }
    Ok((events, base + committed as u64))
}

/// Whether any complete line of `rest` is a `turn/end` event.
fn later_turn_end(rest: &[u8]) -> bool {
    let finder = memmem::Finder::new(b"turn/end");
    let Some(end) = memchr::memrchr(b'\n', rest) else {
        return false;
    };
    rest.get(..end)
        .unwrap_or_default()
        .split(|b| *b == b'\n')
        .any(|line| {
            finder.find(line).is_some()
                && serde_json::from_slice::<Value>(line)
                    .ok()
                    .is_some_and(|v| v.get("type").and_then(Value::as_str) == Some("turn/end"))
        })
}

/// The search documents of `events` (those with text); `shadowed` holds the seqs of surface
/// events replaced since.
pub(super) fn documents(
    events: &[SessionEvent],
    shadowed: &std::collections::HashSet<u64>,
) -> Vec<Doc> {
    events
        .iter()
        .filter_map(|event| {
            let text = event_text(event);
            if text.is_empty() {
                return None;
            }
            let text = sanitize(&text);
            let surface = if !event.is_surface() {
                SurfaceClass::LogOnly
            } else if shadowed.contains(&event.seq) {
                SurfaceClass::Shadowed
            } else {
                SurfaceClass::Current
            };
            Some(Doc {
                seq: event.seq,
                event_type: event.event_type.clone(),
                time: event.time,
                surface,
                length: text.chars().count() as u64,
                text,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1}\n";

    fn user(seq: u64, text: &str) -> String {
        format!(
            "{{\"type\":\"user/message\",\"seq\":{seq},\"time\":{seq},\"data\":{{\"id\":\"m{seq}\",\"role\":\"user\",\"source\":{{\"kind\":\"user\"}},\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}},\"surfaceOp\":\"append\"}}\n"
        )
    }

    fn indexed(read: Read) -> Delta {
        match read {
            Read::Indexed(delta) => delta,
            other => panic!("not indexed: {other:?}"),
        }
    }

    #[test]
    fn reading_on_continues_the_whole_read() {
        let vocabulary = Vocabulary::default();
        let first = format!("{HEADER}{}{}", user(0, "alpha"), user(1, "beta"));
        let (header, read) = read_whole("s", first.as_bytes(), &vocabulary);
        assert_eq!(header.unwrap().id, "s");
        let delta = indexed(read);
        assert_eq!(delta.covered, first.len() as u64);
        assert_eq!(delta.docs.len(), 2);
        let more = format!("{}{{\"torn", user(2, "gam\\u0000ma"));
        let on = indexed(read_on(
            "s",
            more.as_bytes(),
            delta.covered,
            delta.next_seq,
            delta.state,
            &vocabulary,
        ));
        assert_eq!(on.docs.len(), 1);
        assert_eq!(on.docs[0].text, "gam\u{FFFD}ma");
        assert_eq!(on.docs[0].length, 6);
        assert_eq!(
            on.covered,
            (first.len() + user(2, "gam\\u0000ma").len()) as u64
        );
        assert_eq!(on.next_seq, 3);
    }

    #[test]
    fn damage_before_a_turn_end_is_unreadable_and_a_wrong_id_too() {
        let vocabulary = Vocabulary::default();
        let log = format!(
            "{HEADER}{}not json\n{{\"type\":\"turn/end\",\"seq\":2,\"time\":2,\"data\":{{}}}}\n",
            user(0, "a")
        );
        let (_, read) = read_whole("s", log.as_bytes(), &vocabulary);
        assert!(matches!(
            read,
            Read::Unreadable(QueryError::CorruptSession { .. })
        ));
        let (_, read) = read_whole("t", HEADER.as_bytes(), &vocabulary);
        assert!(matches!(
            read,
            Read::Unreadable(QueryError::CorruptSession { .. })
        ));
    }
}
