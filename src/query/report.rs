//! The machine-readable shapes of session queries, as `agentlog sessions|events --json` print
//! them and the Python binding returns them: one definition for both. Field names are
//! camelCase, as dsh's own JSON.
//!
//! (`read` and `trace-event` print [`SessionEventWindow`](super::SessionEventWindow) and
//! [`SessionEventTrace`](super::SessionEventTrace) as they serialize, and `trace-session`
//! prints [`SessionLineageTrace::write_json`](super::SessionLineageTrace::write_json).)

use serde::Serialize;
use serde_json::{Value, json};

use crate::query::error::QueryError;
use crate::query::filter::EventFilter;
use crate::query::service::QueryService;
use crate::query::types::{SessionEventRecord, SessionRecord, SurfaceClass};

/// A session as scripts see it: `{id, createdAt, parentSession, cwd, live, persisted}`.
pub fn session_summary_json(record: &SessionRecord) -> Value {
    json!({
        "id": record.header.id,
        "createdAt": record.header.created_at,
        "parentSession": record.header.parent_session,
        "cwd": record.header.cwd,
        "live": record.live,
        "persisted": record.persisted,
    })
}

/// An event as `events --json` lists it: its identity and surface class, without payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventSummary {
    /// Its seq.
    pub seq: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Its time (milliseconds since the epoch, as the log has it).
    pub time: i64,
    /// Its surface class.
    pub surface: SurfaceClass,
}

impl From<&SessionEventRecord> for EventSummary {
    fn from(r: &SessionEventRecord) -> EventSummary {
        EventSummary {
            seq: r.seq,
            event_type: r.event_type.clone(),
            time: r.time,
            surface: r.surface,
        }
    }
}

/// The events of `session_id` as `events --json` selects them: of the given `types` (all when
/// empty), of the `surface` class when given, whose text contains `text` when given. Without a
/// text filter the events are read through the type index, so the cost follows the matches.
///
/// # Errors
///
/// As [`QueryService::list_events`] and [`QueryService::filter_events`].
pub fn select_events(
    service: &QueryService<'_>,
    session_id: &str,
    types: &[String],
    surface: Option<SurfaceClass>,
    text: Option<&str>,
) -> Result<Vec<EventSummary>, QueryError> {
    let mut filters = Vec::new();
    if !types.is_empty() {
        filters.push(EventFilter::Type {
            values: types.to_vec(),
        });
    }
    if let Some(surface) = surface {
        filters.push(EventFilter::Surface {
            values: vec![surface],
        });
    }
    // Text filters match an event's searchable text, so they read whole events.
    let records: Vec<SessionEventRecord> = if let Some(text) = text {
        filters.push(EventFilter::Text {
            text: text.to_owned(),
        });
        service
            .filter_events(session_id, &filters)?
            .into_iter()
            .map(|d| d.record)
            .collect()
    } else {
        let records = if types.is_empty() {
            service.list_events(session_id)?
        } else {
            // Through the type index: the cost follows the matches, not the log.
            let types: Vec<&str> = types.iter().map(String::as_str).collect();
            service.list_events_of_types(session_id, &types)?
        };
        records
            .into_iter()
            .filter(|r| surface.is_none_or(|w| r.surface == w))
            .collect()
    };
    Ok(records.iter().map(EventSummary::from).collect())
}
