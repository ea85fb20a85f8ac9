//! Session and event filters (docs/SESSIONS.md, "Filters").
//!
//! Every filter in a list must match, and one of the values inside a clause; an empty value
//! list matches nothing; ranges are inclusive. Filters are validated and compiled into
//! an owned matcher before any data is read, so a bad filter fails fast and a caller
//! changing its filter values afterwards cannot affect a running query.
//!
//! The text filter is a literal, whitespace-tolerant, case-insensitive scan: the query
//! is split on whitespace, and each gap matches any run of whitespace in the text. It is
//! implemented directly (no regex engine) with per-character simple case folding.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::query::error::{QueryError, Result};
use crate::query::types::{SessionEventDocument, SessionRecord, SurfaceClass};

/// Where a session is available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Availability {
    /// Being written through the store in this process.
    Live,
    /// Present on the persisted side.
    Persisted,
}

/// A session filter clause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SessionFilter {
    /// The session id is one of `values`.
    Id {
        /// Accepted ids.
        values: Vec<String>,
    },
    /// The cwd is one of `values`; `None` matches a session without cwd.
    Cwd {
        /// Accepted cwds.
        values: Vec<Option<String>>,
    },
    /// `from <= createdAt <= to` (either bound optional).
    CreatedAt {
        /// Inclusive lower bound, epoch ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<f64>,
        /// Inclusive upper bound, epoch ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<f64>,
    },
    /// The parent is one of `values`; `None` matches a root session.
    Parent {
        /// Accepted parent ids.
        values: Vec<Option<String>>,
    },
    /// The session is available in any of `values`.
    Availability {
        /// Accepted availabilities.
        values: Vec<Availability>,
    },
}

/// An event filter clause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EventFilter {
    /// `from <= seq <= to`.
    Seq {
        /// Inclusive lower bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<f64>,
        /// Inclusive upper bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<f64>,
    },
    /// `from <= time <= to`, epoch ms.
    Time {
        /// Inclusive lower bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<f64>,
        /// Inclusive upper bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<f64>,
    },
    /// The event type is one of `values` (not checked against the vocabulary).
    Type {
        /// Accepted types.
        values: Vec<String>,
    },
    /// The surface class is one of `values`.
    Surface {
        /// Accepted classes.
        values: Vec<SurfaceClass>,
    },
    /// The event's searchable text contains `text`, literally, ignoring case and whitespace width.
    Text {
        /// The text to find; must not be blank.
        text: String,
    },
}

fn invalid(reason: impl Into<String>) -> QueryError {
    QueryError::InvalidFilter {
        reason: reason.into(),
        cause: None,
    }
}

fn unparsable(e: serde_json::Error) -> QueryError {
    QueryError::InvalidFilter {
        reason: e.to_string(),
        cause: Some(e),
    }
}

/// Parses session filters from JSON (`[{"kind": ...}, ...]`), rejecting unknown kinds.
pub fn parse_session_filters(value: &Value) -> Result<Vec<SessionFilter>> {
    let filters: Vec<SessionFilter> = serde_json::from_value(value.clone()).map_err(unparsable)?;
    compile_session_filters(&filters)?;
    Ok(filters)
}

/// Parses event filters from JSON (`[{"kind": ...}, ...]`), rejecting unknown kinds.
pub fn parse_event_filters(value: &Value) -> Result<Vec<EventFilter>> {
    let filters: Vec<EventFilter> = serde_json::from_value(value.clone()).map_err(unparsable)?;
    compile_event_filters(&filters)?;
    Ok(filters)
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Range {
    from: Option<f64>,
    to: Option<f64>,
}

impl Range {
    fn new(name: &str, from: Option<f64>, to: Option<f64>) -> Result<Self> {
        for bound in [from, to].into_iter().flatten() {
            if !bound.is_finite() {
                return Err(invalid(format!(
                    "{name} range bounds must be finite numbers"
                )));
            }
        }
        if let (Some(f), Some(t)) = (from, to)
            && f > t
        {
            return Err(invalid(format!("{name} range has from {f} after to {t}")));
        }
        Ok(Self { from, to })
    }

    fn contains(&self, n: f64) -> bool {
        self.from.is_none_or(|f| n >= f) && self.to.is_none_or(|t| n <= t)
    }
}

/// Validated, owned session filters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SessionMatcher {
    filters: Vec<SessionFilter>,
    created: Vec<Option<Range>>,
}

/// Validates and copies session filters.
pub(crate) fn compile_session_filters(filters: &[SessionFilter]) -> Result<SessionMatcher> {
    let created = filters
        .iter()
        .map(|f| match f {
            SessionFilter::CreatedAt { from, to } => Range::new("created-at", *from, *to).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SessionMatcher {
        filters: filters.to_vec(),
        created,
    })
}

impl SessionMatcher {
    /// Whether `record` passes every clause.
    #[allow(clippy::cast_precision_loss)] // createdAt is a safe integer, exact in f64
    pub fn matches(&self, record: &SessionRecord) -> bool {
        let h = &record.header;
        self.filters
            .iter()
            .zip(&self.created)
            .all(|(filter, range)| match filter {
                SessionFilter::Id { values } => values.contains(&h.id),
                SessionFilter::Cwd { values } => values.contains(&h.cwd),
                SessionFilter::CreatedAt { .. } => {
                    range.is_some_and(|r| r.contains(h.created_at as f64))
                }
                SessionFilter::Parent { values } => values.contains(&h.parent_session),
                SessionFilter::Availability { values } => values.iter().any(|a| match a {
                    Availability::Live => record.live,
                    Availability::Persisted => record.persisted,
                }),
            })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum EventClause {
    Seq(Range),
    Time(Range),
    Type(Vec<String>),
    Surface(Vec<SurfaceClass>),
    Text(TextPattern),
}

/// Validated, owned event filters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventMatcher {
    clauses: Vec<EventClause>,
}

/// Validates and copies event filters (a blank text fails here, before any read).
pub(crate) fn compile_event_filters(filters: &[EventFilter]) -> Result<EventMatcher> {
    let clauses = filters
        .iter()
        .map(|f| {
            Ok(match f {
                EventFilter::Seq { from, to } => EventClause::Seq(Range::new("seq", *from, *to)?),
                EventFilter::Time { from, to } => {
                    EventClause::Time(Range::new("time", *from, *to)?)
                }
                EventFilter::Type { values } => EventClause::Type(values.clone()),
                EventFilter::Surface { values } => EventClause::Surface(values.clone()),
                EventFilter::Text { text } => EventClause::Text(TextPattern::new(text)?),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(EventMatcher { clauses })
}

impl EventMatcher {
    /// Whether `doc` passes every clause.
    #[allow(clippy::cast_precision_loss)] // seqs and times are safe integers, exact in f64
    pub fn matches(&self, doc: &SessionEventDocument) -> bool {
        let r = &doc.record;
        self.clauses.iter().all(|c| match c {
            EventClause::Seq(range) => range.contains(r.seq as f64),
            EventClause::Time(range) => range.contains(r.time as f64),
            EventClause::Type(values) => values.contains(&r.event_type),
            EventClause::Surface(values) => values.contains(&r.surface),
            EventClause::Text(pattern) => pattern.is_match(&doc.text),
        })
    }
}

/// A literal, whitespace-tolerant, case-insensitive pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextPattern {
    parts: Vec<Vec<char>>,
}

impl TextPattern {
    /// Compiles `text`; blank text is an [`QueryError::InvalidFilter`].
    pub fn new(text: &str) -> Result<Self> {
        let parts: Vec<Vec<char>> = text
            .split(is_js_space)
            .filter(|p| !p.is_empty())
            .map(|p| p.chars().map(fold).collect())
            .collect();
        if parts.is_empty() {
            return Err(invalid("text filter must not be blank"));
        }
        Ok(Self { parts })
    }

    /// Whether the pattern occurs anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        let hay: Vec<char> = text.chars().map(fold).collect();
        (0..hay.len()).any(|start| self.matches_at(&hay, start))
    }

    fn matches_at(&self, hay: &[char], start: usize) -> bool {
        let mut pos = start;
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                // A gap is one or more whitespace characters. Parts never start with
                // whitespace, so consuming the whole run is the only way to match.
                let run = hay.get(pos..).map_or(0, |rest| {
                    rest.iter().take_while(|c| is_js_space(**c)).count()
                });
                if run == 0 {
                    return false;
                }
                pos += run;
            }
            match hay.get(pos..pos + part.len()) {
                Some(window) if window == part.as_slice() => pos += part.len(),
                _ => return false,
            }
        }
        true
    }
}

/// JavaScript's `\s`: Unicode `White_Space` plus BOM, without NEL.
fn is_js_space(c: char) -> bool {
    c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}')
}

/// Simple case folding of one character (what a `/iu` regex compares).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::types::{SessionEventRecord, SessionHeader};
    use serde_json::json;

    fn record(
        id: &str,
        cwd: Option<&str>,
        parent: Option<&str>,
        live: bool,
        persisted: bool,
    ) -> SessionRecord {
        let mut header = SessionHeader::new(id, 10);
        header.cwd = cwd.map(str::to_string);
        header.parent_session = parent.map(str::to_string);
        SessionRecord {
            header,
            live,
            persisted,
        }
    }

    fn doc(seq: u64, ty: &str, surface: SurfaceClass, text: &str) -> SessionEventDocument {
        SessionEventDocument {
            record: SessionEventRecord {
                session_id: "s".into(),
                seq,
                event_type: ty.into(),
                time: i64::try_from(seq).unwrap() * 10,
                surface,
            },
            text: text.into(),
        }
    }

    #[test]
    fn every_clause_ors_its_values_and_clauses_and() {
        let m = compile_session_filters(&[
            SessionFilter::Id {
                values: vec!["a".into(), "b".into()],
            },
            SessionFilter::Availability {
                values: vec![Availability::Live, Availability::Persisted],
            },
        ])
        .unwrap();
        assert!(m.matches(&record("a", None, None, false, true)));
        assert!(m.matches(&record("b", None, None, true, false)));
        assert!(!m.matches(&record("c", None, None, true, true)));
    }

    #[test]
    fn null_cwd_and_parent_match_root_sessions_without_cwd() {
        let m = compile_session_filters(&[
            SessionFilter::Cwd { values: vec![None] },
            SessionFilter::Parent { values: vec![None] },
        ])
        .unwrap();
        assert!(m.matches(&record("root", None, None, true, false)));
        assert!(!m.matches(&record("child", None, Some("root"), true, false)));
        assert!(!m.matches(&record("cwd", Some("/w"), None, true, false)));
    }

    #[test]
    fn text_is_literal_whitespace_tolerant_and_case_insensitive() {
        let p = TextPattern::new("hello   (ai)+").unwrap();
        assert!(p.is_match("Hello\n(AI)+"));
        assert!(p.is_match("say hello \t (ai)+!"));
        assert!(!p.is_match("hello(ai)+"));
        assert!(!p.is_match("hello aiii"));
        assert!(TextPattern::new("CAFÉ").unwrap().is_match("un café"));
        assert!(TextPattern::new("a.b").unwrap().is_match("A.B"));
        assert!(!TextPattern::new("a.b").unwrap().is_match("axb"));
    }

    #[test]
    fn blank_text_and_bad_ranges_are_invalid_filters() {
        for f in [
            EventFilter::Text {
                text: "  \n ".into(),
            },
            EventFilter::Seq {
                from: Some(3.0),
                to: Some(1.0),
            },
            EventFilter::Time {
                from: Some(f64::NAN),
                to: None,
            },
        ] {
            let err = compile_event_filters(&[f]).unwrap_err();
            assert_eq!(err.code(), "invalid_filter");
        }
    }

    #[test]
    fn unknown_kinds_and_availabilities_are_invalid_filters() {
        assert_eq!(
            parse_session_filters(&json!([{"kind": "colour", "values": []}]))
                .unwrap_err()
                .code(),
            "invalid_filter"
        );
        assert_eq!(
            parse_session_filters(&json!([{"kind": "availability", "values": ["gone"]}]))
                .unwrap_err()
                .code(),
            "invalid_filter"
        );
        assert_eq!(
            parse_event_filters(&json!({"kind": "seq"}))
                .unwrap_err()
                .code(),
            "invalid_filter"
        );
        let ok = parse_event_filters(
            &json!([{"kind": "seq", "from": 0.5}, {"kind": "surface", "values": ["log-only"]}]),
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
    }

    #[test]
    fn empty_value_lists_match_nothing() {
        let m = compile_event_filters(&[EventFilter::Surface { values: vec![] }]).unwrap();
        assert!(!m.matches(&doc(0, "user/message", SurfaceClass::Current, "x")));
    }

    #[test]
    fn event_ranges_are_inclusive_and_need_not_be_integers() {
        let m = compile_event_filters(&[EventFilter::Seq {
            from: Some(0.5),
            to: Some(2.0),
        }])
        .unwrap();
        let seqs: Vec<u64> = (0..4)
            .filter(|s| m.matches(&doc(*s, "t", SurfaceClass::LogOnly, "x")))
            .collect();
        assert_eq!(seqs, [1, 2]);
    }

    #[test]
    fn mutating_filters_after_compiling_has_no_effect() {
        let mut filters = vec![EventFilter::Type {
            values: vec!["tool/call".into()],
        }];
        let m = compile_event_filters(&filters).unwrap();
        filters[0] = EventFilter::Type { values: vec![] };
        assert!(m.matches(&doc(0, "tool/call", SurfaceClass::LogOnly, "x")));
    }
}
