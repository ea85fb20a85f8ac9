//! The rules of a stored log (docs/SESSIONS.md, "Torn tails and corruption" and "Reading a
//! damaged session"): the rule for one stored event line, and the judge of a log's committed
//! region.
//!
//! A line is an event when it is a JSON object that passes the envelope, carries the surface
//! fields only where they belong, and, once a legacy shape is normalized, a well-formed
//! message. The JSONL scanner applies the rule line by line, and the index applies it as its
//! line validator, so the index knows in O(1) where a log stops being clean, and every read of
//! the session judges it alike. A line that is not JSON or breaks the envelope is *damage*: it
//! ends the committed region (torn, unless a later `turn/end` makes it corrupt). A well-formed
//! event that breaks a read rule is not damage a crash could leave: the session is corrupt
//! wherever it stands. [`RegionJudge`] applies this line by line together with what one line
//! cannot show alone but a pass in order can: seq contiguity and a legacy rewrite's inherited
//! id. The surface fold, retired and unknown types are checked by the readers.

use memchr::memmem;
use serde_json::Value;

use crate::query::envelope::parse_event;
use crate::query::error::SourceError;
use crate::query::error::{Cause, Violation};
use crate::query::legacy::{LegacyReader, check_event_alone};
use crate::query::types::SessionEvent;

/// Why a stored line is not an event.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineFault {
    /// Not a JSON value: damage.
    #[error("{0}")]
    Json(serde_json::Error),
    /// JSON that breaks the envelope: damage.
    #[error("{0}")]
    Envelope(Violation),
    /// An event that breaks a read rule (surface fields, message or legacy shape).
    #[error("{0}")]
    Rule(Violation),
}

impl LineFault {
    /// Whether the fault is damage, which ends the committed region, rather than a broken read
    /// rule, which makes the session corrupt.
    pub(crate) fn is_damage(&self) -> bool {
        !matches!(self, Self::Rule(_))
    }

    /// The error that found the fault, for a `source()` chain.
    pub(crate) fn into_cause(self) -> Cause {
        match self {
            Self::Json(e) => Box::new(e),
            Self::Envelope(v) | Self::Rule(v) => Box::new(v),
        }
    }
}

/// The event on `line` (without its `\n`), as stored (not legacy-normalized), if it passes the
/// rules one line can be checked for alone.
pub(crate) fn parse_stored_line(line: &[u8]) -> Result<SessionEvent, LineFault> {
    let value: Value = serde_json::from_slice(line).map_err(LineFault::Json)?;
    let event = parse_event(value).map_err(LineFault::Envelope)?;
    check_event_alone(&event).map_err(LineFault::Rule)?;
    Ok(event)
}

/// Judges a stored log's event lines, fed in file order, the way every reader must: which are
/// committed, and whether the log is corrupt.
///
/// The first line that is damage (not JSON, the envelope broken, a seq out of place, a line
/// too long to read) ends the committed region, *unless* a later line holds a `turn/end`: a
/// completed turn after the damage proves it lies in acknowledged history, which is
/// corruption, not a torn write. A committed event that breaks a read rule (the rule for one
/// line, or a legacy rewrite with no id to inherit) is corruption wherever it stands.
#[derive(Debug)]
pub(crate) struct RegionJudge {
    session_id: String,
    /// The seq the next committed event must have: the committed events are `0..next_seq`.
    next_seq: u64,
    /// The offset just past the last committed line.
    end: u64,
    /// The damage that ended the committed region, and what it becomes if a `turn/end` follows.
    damage: Option<(u64, SourceError)>,
    legacy: LegacyReader,
}

impl RegionJudge {
    /// A judge of session `session_id`'s log, whose first event line starts at `start`.
    pub(crate) fn new(session_id: &str, start: u64) -> RegionJudge {
        RegionJudge {
            session_id: session_id.to_owned(),
            next_seq: 0,
            end: start,
            damage: None,
            legacy: LegacyReader::default(),
        }
    }

    /// Judges the next complete line, at `offset` (`None`: one too long to read); returns its
    /// event when it is committed.
    pub(crate) fn line(
        &mut self,
        offset: u64,
        line: Option<&[u8]>,
    ) -> Result<Option<SessionEvent>, SourceError> {
        if let Some((_, damage)) = self.damage.take_if(|_| line.is_some_and(is_turn_end)) {
            return Err(damage);
        }
        if self.damage.is_some() {
            return Ok(None);
        }
        let Some(line) = line else {
            self.damage = Some((
                offset,
                SourceError::corrupt(format!(
                    "unparsable committed event at byte {offset}: the line is too long to read"
                )),
            ));
            return Ok(None);
        };
        let invalid = |what: String, cause: Cause| {
            SourceError::corrupt_by(
                format!("invalid committed event at byte {offset}: {what}"),
                cause,
            )
        };
        let damage = match parse_stored_line(line) {
            Err(fault) if !fault.is_damage() => {
                return Err(invalid(fault.to_string(), fault.into_cause()));
            }
            Err(fault) => SourceError::corrupt_by(
                format!("unparsable committed event at byte {offset}: {fault}"),
                fault.into_cause(),
            ),
            Ok(event) if event.seq != self.next_seq => SourceError::corrupt(format!(
                "seq gap in committed region at byte {offset}: seq {} where {} was expected",
                event.seq, self.next_seq
            )),
            Ok(event) => {
                self.legacy
                    .check(&self.session_id, &event)
                    .map_err(|v| invalid(v.to_string(), Box::new(v)))?;
                self.next_seq += 1;
                self.end = offset + line.len() as u64 + 1;
                return Ok(Some(event));
            }
        };
        self.damage = Some((offset, damage));
        Ok(None)
    }

    /// How many events are committed, and the offset just past the last of them, once every
    /// complete line was judged.
    pub(crate) fn finish(self) -> (u64, u64) {
        if let Some((offset, issue)) = &self.damage {
            tracing::warn!(offset, %issue, "treating the damaged tail after the last turn/end as torn");
        }
        (self.next_seq, self.end)
    }
}

/// Whether `line` is a `turn/end` event.
fn is_turn_end(line: &[u8]) -> bool {
    memmem::find(line, b"turn/end").is_some()
        && serde_json::from_slice::<Value>(line)
            .ok()
            .is_some_and(|v| v.get("type").and_then(Value::as_str) == Some("turn/end"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_single_line_rule_refuses_a_line() {
        let ok = r#"{"type":"user/message","seq":3,"time":1,"data":{"id":"u","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append","sourceEventSeqs":[0]}"#;
        assert_eq!(parse_stored_line(ok.as_bytes()).unwrap().seq, 3);
        for (line, says) in [
            ("{\"type\":", "EOF while parsing"),
            ("", "EOF while parsing"),
            ("[1]", "not a JSON object"),
            (
                r#"{"type":"step/start","seq":0,"time":1,"data":{},"extra":1}"#,
                "unexpected key",
            ),
            (
                r#"{"type":"user/message","seq":0,"time":1,"data":{"id":"u","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"prepend"}"#,
                "surfaceOp",
            ),
        ] {
            let fault = parse_stored_line(line.as_bytes()).unwrap_err();
            assert!(fault.is_damage(), "{line}");
            assert!(fault.to_string().contains(says), "{line}: {fault}");
        }
        for (line, says) in [
            (
                r#"{"type":"step/start","seq":0,"time":1,"data":{},"surfaceOp":"append"}"#,
                "cannot carry surfaceOp",
            ),
            (
                r#"{"type":"user/message","seq":0,"time":1,"data":{"id":"u","role":"user","source":{"kind":"user"},"content":[]}}"#,
                "requires a surfaceOp",
            ),
            (
                r#"{"type":"user/message","seq":1,"time":1,"data":{"id":"u","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append","sourceEventSeqs":[1]}"#,
                "must reference earlier events",
            ),
            (
                r#"{"type":"user/message","seq":0,"time":1,"data":{"role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append"}"#,
                "non-empty string id",
            ),
            (
                r#"{"type":"turn/end","seq":0,"time":1,"data":{"turn":1}}"#,
                "malformed pre-react-loop turn/end",
            ),
            (
                r#"{"type":"steering/message","seq":0,"time":1,"data":{"x":1},"surfaceOp":"append"}"#,
                "malformed pre-react-loop steering/message",
            ),
        ] {
            let fault = parse_stored_line(line.as_bytes()).unwrap_err();
            assert!(!fault.is_damage(), "{line}");
            assert!(fault.to_string().contains(says), "{line}: {fault}");
        }
    }

    #[test]
    fn legacy_shapes_that_normalize_are_events() {
        for line in [
            r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"trigger":{"kind":"user"}}}"#,
            r#"{"type":"steering/message","seq":0,"time":1,"data":{"turn":1,"content":[],"source":{"kind":"user"}},"surfaceOp":"append"}"#,
            // A pre-identity prune inherits its id from the node it replaces.
            r#"{"type":"tool/result","seq":5,"time":1,"data":{"callId":"c","content":[],"isError":false},"surfaceOp":{"op":"replace","start":2,"end":2},"sourceEventSeqs":[2]}"#,
        ] {
            assert!(parse_stored_line(line.as_bytes()).is_ok(), "{line}");
        }
    }
}
