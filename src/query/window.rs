//! Read windows: one event with a bounded number of raw neighbours (docs/SESSIONS.md, "Read
//! windows").
//!
//! The window is over the *raw* log (chunks, boundaries and shadowed events included) and
//! does not run the surface fold, so it costs the window, not the log: a replace that only the
//! fold finds wrong does not stop it (every check that needs no fold is made first). The
//! bound per side is configurable so a caller cannot turn an exact read into a full scan.

use serde_json::Value;

use crate::query::error::{QueryError, Result};
use crate::query::json::as_safe_u64;
use crate::query::types::SessionEvent;

/// The default and usual maximum of `before` / `after`.
pub const DEFAULT_READ_WINDOW_MAX: u64 = 50;

/// A request to read one event and its neighbours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowRequest {
    /// The session to read.
    pub session_id: String,
    /// The target seq.
    pub seq: u64,
    /// Events to include before the target (absent = 0).
    pub before: Option<u64>,
    /// Events to include after the target (absent = 0).
    pub after: Option<u64>,
}

impl WindowRequest {
    /// A request for the event alone.
    pub fn new(session_id: impl Into<String>, seq: u64) -> Self {
        Self {
            session_id: session_id.into(),
            seq,
            before: None,
            after: None,
        }
    }

    /// This request with `before` and `after` neighbours.
    #[must_use]
    pub fn with_neighbours(mut self, before: u64, after: u64) -> Self {
        self.before = Some(before);
        self.after = Some(after);
        self
    }

    /// Parses `{sessionId, seq, before?, after?}` (e.g. CLI input); a negative or
    /// fractional bound is [`QueryError::InvalidWindow`].
    pub fn from_json(value: &Value) -> Result<Self> {
        let bad = |reason: &str| QueryError::InvalidWindow {
            reason: reason.to_string(),
        };
        let session_id = value
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("sessionId must be a string"))?;
        let seq = value
            .get("seq")
            .and_then(as_safe_u64)
            .ok_or_else(|| bad("seq must be a non-negative safe integer"))?;
        let bound = |key: &str| match value.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => as_safe_u64(v)
                .map(Some)
                .ok_or_else(|| bad(&format!("{key} must be a non-negative integer"))),
        };
        Ok(Self {
            session_id: session_id.to_string(),
            seq,
            before: bound("before")?,
            after: bound("after")?,
        })
    }

    /// The validated `(before, after)`, each at most `max`.
    pub fn bounds(&self, max: u64) -> Result<(u64, u64)> {
        let check = |name: &str, v: Option<u64>| {
            let v = v.unwrap_or(0);
            if v > max {
                Err(QueryError::InvalidWindow {
                    reason: format!("{name} is {v}, above the maximum of {max} events per side"),
                })
            } else {
                Ok(v)
            }
        };
        Ok((check("before", self.before)?, check("after", self.after)?))
    }

    /// The seq range to read: `seq-before ..= seq+after`, clipped at 0 (the end is
    /// clipped by the log's length when reading).
    pub fn seq_range(&self, before: u64, after: u64) -> (u64, u64) {
        (
            self.seq.saturating_sub(before),
            self.seq.saturating_add(after),
        )
    }
}

/// The target and its window, cut from `events` (ascending, contiguous seqs covering at
/// least the window).
///
/// Returns `None` when the target is absent.
pub(crate) fn cut_window(
    events: Vec<SessionEvent>,
    seq: u64,
    before: u64,
    after: u64,
) -> Option<(SessionEvent, Vec<SessionEvent>, u64, u64)> {
    let (lo, hi) = (seq.saturating_sub(before), seq.saturating_add(after));
    let window: Vec<SessionEvent> = events
        .into_iter()
        .filter(|e| e.seq >= lo && e.seq <= hi)
        .collect();
    // `lo <= seq <= hi`: the target is in the window if anywhere.
    let target = window.iter().find(|e| e.seq == seq)?.clone();
    let start = window.first().map_or(seq, |e| e.seq);
    let end = window.last().map_or(seq, |e| e.seq);
    Some((target, window, start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_support::*;
    use serde_json::json;

    #[test]
    fn bounds_above_the_maximum_are_invalid_windows() {
        let req = WindowRequest::new("s", 2).with_neighbours(2, 0);
        assert_eq!(req.bounds(1).unwrap_err().code(), "invalid_window");
        assert_eq!(req.bounds(2).unwrap(), (2, 0));
        assert_eq!(WindowRequest::new("s", 2).bounds(0).unwrap(), (0, 0));
    }

    #[test]
    fn negative_or_fractional_bounds_are_invalid_windows() {
        for bad in [
            json!({"sessionId": "s", "seq": 2, "before": -1}),
            json!({"sessionId": "s", "seq": 2, "after": 0.5}),
        ] {
            assert_eq!(
                WindowRequest::from_json(&bad).unwrap_err().code(),
                "invalid_window"
            );
        }
        let ok =
            WindowRequest::from_json(&json!({"sessionId": "s", "seq": 2, "before": 1})).unwrap();
        assert_eq!(ok.before, Some(1));
    }

    #[test]
    fn window_is_clipped_at_both_ends() {
        let events: Vec<_> = (0..4)
            .map(|s| log_only("turn/start", s, json!({})))
            .collect();
        let (target, window, start, end) = cut_window(events.clone(), 1, 5, 5).unwrap();
        assert_eq!((target.seq, window.len(), start, end), (1, 4, 0, 3));
        assert!(cut_window(events, 9, 1, 1).is_none());
    }
}
