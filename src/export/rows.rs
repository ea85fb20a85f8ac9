//! The rows of the three tables, and how each lands in its columns.

use serde::{Deserialize, Serialize};

use super::part::{Row, RowSink};
use super::schema::{ColumnSpec, EVENT_COLUMNS, GENERATION_COLUMNS, SESSION_COLUMNS};

/// A count as a Parquet INT64. Counts above `i64::MAX` cannot come from one event (token values
/// stop at 2^53); a sum that large saturates.
pub fn int(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// One event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow<'a> {
    /// Agent directory name, session id or transcript id.
    pub source_id: &'a str,
    /// The host that exported it.
    pub host: &'a str,
    /// Byte offset of the line in the log.
    pub offset: u64,
    /// 1-based line number in the log (header and invalid lines count), as editors show it.
    pub line: u64,
    /// The event's own `seq`, else its 0-based ordinal among the log's lines after a header.
    pub seq: u64,
    /// `type` (else `event`).
    pub type_name: Option<&'a str>,
    /// The event's time, microseconds since the epoch (UTC).
    pub ts: Option<i64>,
    /// 0-based generation, as `agentlog generations` prints it.
    pub generation: u64,
    /// The generation's `molt_count` (0 before any boundary; none when its boundary has no
    /// valid one).
    pub molt_count: Option<u64>,
    /// Input, output, cached, thinking, cache-write and total tokens: an agent's token event
    /// fills the first four; a transcript line with usage, those its format has.
    pub tokens: [Option<u64>; 6],
    /// A transcript line's cost (pi).
    pub cost: Option<f64>,
    /// A transcript line's message key: Claude Code's `message.id`, pi's entry `id`.
    pub message_id: Option<&'a str>,
    /// A Claude Code line's `requestId`.
    pub request_id: Option<&'a str>,
    /// The line's JSON text, unless the export leaves it out.
    pub json: Option<&'a [u8]>,
}

impl Row for EventRow<'_> {
    const COLUMNS: &'static [ColumnSpec] = EVENT_COLUMNS;

    fn push(&self, sink: &mut RowSink<'_>) {
        sink.text(Some(self.source_id.as_bytes()));
        sink.text(Some(self.host.as_bytes()));
        sink.int(Some(int(self.offset)));
        sink.int(Some(int(self.line)));
        sink.int(Some(int(self.seq)));
        sink.text(self.type_name.map(str::as_bytes));
        sink.int(self.ts);
        sink.int(Some(int(self.generation)));
        sink.int(self.molt_count.map(int));
        push_usage(sink, self.tokens, self.cost);
        sink.text(self.message_id.map(str::as_bytes));
        sink.text(self.request_id.map(str::as_bytes));
        sink.text(self.json);
    }
}

/// One generation's facts, as the export state keeps them between runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportedGeneration {
    /// 0 before the first boundary, then 1, 2, ... in file order.
    pub generation: u64,
    /// 0 for the boot generation, else the boundary's valid `molt_count`.
    pub molt_count: Option<u64>,
    /// Offset of the boundary that starts it.
    pub boundary_offset: Option<u64>,
    /// `boot`, or the boundary's initiator.
    pub boundary_initiator: String,
    /// The boundary's time (microseconds).
    pub boundary_ts: Option<i64>,
    /// The boundary's context size before the molt.
    pub before_tokens: Option<u64>,
    /// The boundary's context size after the molt.
    pub after_tokens: Option<u64>,
    /// Time of the generation's first event that has one: its partition date.
    pub first_ts: Option<i64>,
    /// Events in the generation (its boundary included).
    pub events: u64,
    /// Token events in the generation.
    pub api_calls: u64,
    /// Input, output, cached and thinking token sums (agents).
    pub tokens: [u128; 4],
    /// A transcript's generation: its boundary's kind and deduplicated usage, which replace
    /// the agent sums above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<TranscriptUsage>,
}

/// A transcript generation's boundary kind and deduplicated usage, as `agentlog transcript
/// --json` reports it, in the events table's column order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptUsage {
    /// The boundary's kind (`compact_boundary`, `compacted`, ...); none for generation 0.
    pub boundary_kind: Option<String>,
    /// Input, output, cached, thinking, cache-write and total tokens; none where the format
    /// has no such figure.
    pub tokens: [Option<u64>; 6],
    /// pi's summed cost.
    pub cost: Option<f64>,
}

/// One session's header fields (or a transcript's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRow {
    /// The header's format version.
    pub version: Option<u64>,
    /// Creation time (microseconds): the partition date.
    pub created_at: Option<i64>,
    /// The agent's working directory.
    pub cwd: Option<String>,
    /// The session it was forked from or spawned by.
    pub parent_session: Option<String>,
    /// Events inherited from the parent.
    pub seed_length: Option<u64>,
    /// Presentation class (`subagent`).
    pub origin: Option<String>,
    /// Subagent nesting depth.
    pub delegation_depth: Option<u64>,
    /// The preset the agent was composed from.
    pub agent_preset: Option<String>,
    /// Header fields this build does not know, as a JSON object.
    pub extra: Option<String>,
    /// A transcript's format (`claude-code`, `codex`, `pi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A transcript's project, as `agentlog usage` names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// A transcript's path (symbolic links resolved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The time of a transcript's last line that has one (microseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ts: Option<i64>,
}

/// A generation or session row with the columns every row carries.
#[derive(Clone, Copy, Debug)]
pub struct Sourced<'a, T> {
    /// Agent directory name, session id or transcript id.
    pub source_id: &'a str,
    /// The host that exported it.
    pub host: &'a str,
    /// The row.
    pub row: &'a T,
}

/// A small table's row: its own columns, after the `source_id` and `host` that [`Sourced`]
/// gives it.
pub trait SourcedRow {
    /// The table's columns, `source_id` and `host` first.
    const COLUMNS: &'static [ColumnSpec];
    /// Pushes its own values, in the order of [`SourcedRow::COLUMNS`] after the first two.
    fn push(&self, sink: &mut RowSink<'_>);
}

impl<T: SourcedRow> Row for Sourced<'_, T> {
    const COLUMNS: &'static [ColumnSpec] = T::COLUMNS;

    fn push(&self, sink: &mut RowSink<'_>) {
        sink.text(Some(self.source_id.as_bytes()));
        sink.text(Some(self.host.as_bytes()));
        self.row.push(sink);
    }
}

impl SourcedRow for ExportedGeneration {
    const COLUMNS: &'static [ColumnSpec] = GENERATION_COLUMNS;

    fn push(&self, sink: &mut RowSink<'_>) {
        let g = self;
        sink.int(Some(int(g.generation)));
        sink.int(g.molt_count.map(int));
        sink.int(g.boundary_offset.map(int));
        sink.text(Some(g.boundary_initiator.as_bytes()));
        sink.int(g.boundary_ts);
        sink.int(g.before_tokens.map(int));
        sink.int(g.after_tokens.map(int));
        sink.int(g.first_ts);
        let usage = g.transcript.as_ref();
        sink.text(
            usage
                .and_then(|u| u.boundary_kind.as_deref())
                .map(str::as_bytes),
        );
        sink.int(Some(int(g.events)));
        sink.int(Some(int(g.api_calls)));
        let (tokens, cost) = if let Some(u) = usage {
            (u.tokens, u.cost)
        } else {
            // An agent's sums fill the first four (a sum past i64 saturates either way).
            let sums = g.tokens.map(|t| Some(u64::try_from(t).unwrap_or(u64::MAX)));
            let [input, output, cached, thinking] = sums;
            ([input, output, cached, thinking, None, None], None)
        };
        push_usage(sink, tokens, cost);
    }
}

/// The usage columns: input, output, cached, thinking, cache-write and total tokens, then
/// the cost.
fn push_usage(sink: &mut RowSink<'_>, tokens: [Option<u64>; 6], cost: Option<f64>) {
    for value in tokens {
        sink.int(value.map(int));
    }
    sink.float(cost);
}

fn text(value: Option<&str>) -> Option<&[u8]> {
    value.map(str::as_bytes)
}

impl SourcedRow for SessionRow {
    const COLUMNS: &'static [ColumnSpec] = SESSION_COLUMNS;

    fn push(&self, sink: &mut RowSink<'_>) {
        let s = self;
        sink.int(s.version.map(int));
        sink.int(s.created_at);
        sink.text(text(s.cwd.as_deref()));
        sink.text(text(s.parent_session.as_deref()));
        sink.int(s.seed_length.map(int));
        sink.text(text(s.origin.as_deref()));
        sink.int(s.delegation_depth.map(int));
        sink.text(text(s.agent_preset.as_deref()));
        sink.text(text(s.extra.as_deref()));
        sink.text(text(s.format.as_deref()));
        sink.text(text(s.project.as_deref()));
        sink.text(text(s.path.as_deref()));
        sink.int(s.last_ts);
    }
}
