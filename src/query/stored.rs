//! The rule for one stored event line (docs/SESSIONS.md, "Torn tails and corruption" and
//! "Reading a damaged session").
//!
//! A line is an event when it is a JSON object that passes the envelope, carries the surface
//! fields only where they belong, and, once a legacy shape is normalized, a well-formed
//! message. The JSONL scanner applies the rule line by line, and the index applies it as its
//! line validator, so the index knows in O(1) where a log stops being clean, and every read of
//! the session judges it alike. A line that is not JSON or breaks the envelope is *damage*: it
//! ends the committed region (torn, unless a later `turn/end` makes it corrupt). A well-formed
//! event that breaks a read rule is not damage a crash could leave: the session is corrupt
//! wherever it stands. What needs more than one line (seq contiguity, the surface fold,
//! retired and unknown types) is checked by the readers.

use serde_json::Value;

use crate::query::envelope::parse_event;
use crate::query::error::{Cause, Violation};
use crate::query::legacy::check_event_alone;
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
