//! The session data model: header, events, surface operations and the owned records the
//! query service returns.
//!
//! Deserializing a [`SessionHeader`], [`SessionEvent`] or [`SurfaceOp`] runs the exact
//! envelope rules (implemented beside those rules, so this module depends on nothing else in
//! the query layer), so a value of these types read from JSON has always passed them.
//! Serializing writes the canonical key order
//! (`type, seq, time, data, sourceEventSeqs?, surfaceOp?, ignorable?`), so what we write,
//! we read back byte for byte.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// The one log format version this build reads and writes (`SESSION_FORMAT_VERSION`).
pub const SESSION_FORMAT_VERSION: u64 = 0;

/// The event types that are *surface* events: they carry a model-visible message.
pub const SURFACE_EVENT_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// Whether `event_type` is one of [`SURFACE_EVENT_TYPES`].
pub(crate) fn is_surface_type(event_type: &str) -> bool {
    SURFACE_EVENT_TYPES.contains(&event_type)
}

/// Metadata kept beside the log (the first JSONL line), never an event.
///
/// Immutable after creation. Fields this build does not know are kept in `extra` and
/// written back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHeader {
    /// Log format version; always [`SESSION_FORMAT_VERSION`] for a readable log.
    pub version: u64,
    /// The session id (also its directory name in a [`crate::query::Store`]).
    pub id: String,
    /// Creation time, Unix epoch milliseconds.
    pub created_at: u64,
    /// Absolute working directory of the agent, if any.
    pub cwd: Option<String>,
    /// The session this one was forked from or spawned by.
    pub parent_session: Option<String>,
    /// Number of leading events inherited from the parent.
    pub seed_length: Option<u64>,
    /// Presentation class; only `"subagent"` exists.
    pub origin: Option<String>,
    /// Subagent nesting depth; absent means 0.
    pub delegation_depth: Option<u64>,
    /// The preset the agent was composed from.
    pub agent_preset: Option<String>,
    /// Header fields this build does not know, kept losslessly.
    pub extra: Map<String, Value>,
}

impl SessionHeader {
    /// A root header at the current format version.
    pub fn new(id: impl Into<String>, created_at: u64) -> Self {
        Self {
            version: SESSION_FORMAT_VERSION,
            id: id.into(),
            created_at,
            cwd: None,
            parent_session: None,
            seed_length: None,
            origin: None,
            delegation_depth: None,
            agent_preset: None,
            extra: Map::new(),
        }
    }

    /// The delegation depth, with absence meaning 0.
    pub fn effective_delegation_depth(&self) -> u64 {
        self.delegation_depth.unwrap_or(0)
    }

    /// The first immutable field on which `self` and `other` disagree, as
    /// `(field, self value, other value)`; `None` when they are compatible.
    ///
    /// Compared: version, id, createdAt, cwd, parentSession, seedLength and
    /// delegationDepth (absent = 0). Not compared: origin, agentPreset and unknown
    /// fields, which are presentation only (docs/SESSIONS.md, "The header line").
    pub fn incompatibility(&self, other: &Self) -> Option<(&'static str, String, String)> {
        fn show<T: Serialize>(v: &T) -> String {
            serde_json::to_string(v).unwrap_or_default()
        }
        macro_rules! cmp {
            ($name:literal, $a:expr, $b:expr) => {
                if $a != $b {
                    return Some(($name, show(&$a), show(&$b)));
                }
            };
        }
        cmp!("version", self.version, other.version);
        cmp!("id", self.id, other.id);
        cmp!("createdAt", self.created_at, other.created_at);
        cmp!("cwd", self.cwd, other.cwd);
        cmp!("parentSession", self.parent_session, other.parent_session);
        cmp!("seedLength", self.seed_length, other.seed_length);
        cmp!(
            "delegationDepth",
            self.effective_delegation_depth(),
            other.effective_delegation_depth()
        );
        None
    }
}

impl Serialize for SessionHeader {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", "session")?;
        map.serialize_entry("version", &self.version)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("createdAt", &self.created_at)?;
        entry_if(&mut map, "cwd", self.cwd.as_ref())?;
        entry_if(&mut map, "parentSession", self.parent_session.as_ref())?;
        entry_if(&mut map, "seedLength", self.seed_length.as_ref())?;
        entry_if(&mut map, "origin", self.origin.as_ref())?;
        entry_if(&mut map, "delegationDepth", self.delegation_depth.as_ref())?;
        entry_if(&mut map, "agentPreset", self.agent_preset.as_ref())?;
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Serializes `key: value` if there is a value (an absent optional field is left out).
fn entry_if<M: SerializeMap, T: Serialize>(
    map: &mut M,
    key: &str,
    value: Option<&T>,
) -> Result<(), M::Error> {
    value.map_or(Ok(()), |v| map.serialize_entry(key, v))
}

/// How a surface event changes the surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SurfaceOp {
    /// Push the event onto the end of the surface (`"append"`).
    Append,
    /// Replace the current surface nodes from `start` through `end` *by position*
    /// (`{"op":"replace","start":S,"end":E}`); `start`/`end` are seqs of current nodes.
    Replace {
        /// Seq of the first replaced node.
        start: u64,
        /// Seq of the last replaced node (at or after `start` in surface order).
        end: u64,
    },
}

impl Serialize for SurfaceOp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Append => serializer.serialize_str("append"),
            Self::Replace { start, end } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("op", "replace")?;
                map.serialize_entry("start", start)?;
                map.serialize_entry("end", end)?;
                map.end()
            }
        }
    }
}

/// One event of a session log. Addressed by `(session id, seq)`; it has no id of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEvent {
    /// Slash-namespaced discriminant, e.g. `user/message`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Zero-based, contiguous position in the log.
    pub seq: u64,
    /// Append time, Unix epoch milliseconds (a safe integer).
    pub time: i64,
    /// The payload, kept losslessly.
    pub data: Value,
    /// Earlier events this one was derived from (surface types only).
    #[serde(rename = "sourceEventSeqs", skip_serializing_if = "Option::is_none")]
    pub source_event_seqs: Option<Vec<u64>>,
    /// Required on surface types, forbidden on all others.
    #[serde(rename = "surfaceOp", skip_serializing_if = "Option::is_none")]
    pub surface_op: Option<SurfaceOp>,
    /// `true` lets a reader that does not know this type skip it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ignorable: bool,
}

impl SessionEvent {
    /// A log-only event with no provenance.
    pub fn new(event_type: impl Into<String>, seq: u64, time: i64, data: Value) -> Self {
        Self {
            event_type: event_type.into(),
            seq,
            time,
            data,
            source_event_seqs: None,
            surface_op: None,
            ignorable: false,
        }
    }

    /// This event with a surface operation.
    #[must_use]
    pub fn with_surface_op(mut self, op: SurfaceOp) -> Self {
        self.surface_op = Some(op);
        self
    }

    /// This event citing `seqs` as its sources.
    #[must_use]
    pub fn with_sources(mut self, seqs: Vec<u64>) -> Self {
        self.source_event_seqs = Some(seqs);
        self
    }

    /// This event marked ignorable by readers that do not know its type.
    #[must_use]
    pub fn with_ignorable(mut self) -> Self {
        self.ignorable = true;
        self
    }

    /// Whether this is a surface (message) event.
    pub fn is_surface(&self) -> bool {
        is_surface_type(&self.event_type)
    }

    /// The canonical JSON line of this event, without the trailing newline.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// How the surface fold classifies an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SurfaceClass {
    /// On the final surface: part of what the model sees now.
    Current,
    /// Was on the surface and was replaced.
    Shadowed,
    /// Never on the surface (every non-surface event).
    LogOnly,
}

/// One replacement recorded by the fold, in event order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    /// The replacing event.
    pub seq: u64,
    /// The `start` of its replace range.
    pub start: u64,
    /// The `end` of its replace range.
    pub end: u64,
    /// The nodes it removed, in surface order.
    pub shadowed_seqs: Vec<u64>,
}

/// A session as the corpus sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRecord {
    /// The header (the live one when the session is live).
    pub header: SessionHeader,
    /// Being written through the store in this process.
    pub live: bool,
    /// Present on the persisted side.
    pub persisted: bool,
}

/// One event's identity and class, without its payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventRecord {
    /// Its session.
    pub session_id: String,
    /// Its seq.
    pub seq: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Its time.
    pub time: i64,
    /// Its surface class.
    pub surface: SurfaceClass,
}

/// An event record with its searchable text; only events with text have one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionEventDocument {
    /// The event.
    #[serde(flatten)]
    pub record: SessionEventRecord,
    /// Its searchable text, never empty.
    pub text: String,
}

/// A whole, validated session log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionLogSnapshot {
    /// The header.
    pub session: SessionHeader,
    /// Every event, ascending seq, in current shapes (legacy normalized).
    pub events: Vec<SessionEvent>,
}

/// The current surface of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSurfaceSnapshot {
    /// The header.
    pub session: SessionHeader,
    /// The last seq the fold saw (`None` for an empty log).
    pub captured_through_seq: Option<u64>,
    /// The current surface events, in surface (not seq) order.
    pub events: Vec<SessionEvent>,
}

/// An event and its raw neighbours.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventWindow {
    /// The header.
    pub session: SessionHeader,
    /// The event asked for.
    pub target: SessionEvent,
    /// Every raw event with seq in `start_seq..=end_seq`, including the target.
    pub events: Vec<SessionEvent>,
    /// First seq of the window.
    pub start_seq: u64,
    /// Last seq of the window.
    pub end_seq: u64,
}

/// A session and the sessions below it: `{session, descendants: [...]}` in JSON.
///
/// Lineages can be thousands of sessions deep, so everything that walks the tree (clone,
/// comparison, debug output, drop, [`SessionLineageTrace::write_json`]) uses an explicit
/// stack; there is no `Serialize`, because serde's serializers recurse once per level.
pub struct SessionLineageNode {
    /// The session.
    pub session: SessionRecord,
    /// Its children, by createdAt then id, each with its own descendants.
    pub descendants: Vec<SessionLineageNode>,
}

impl Drop for SessionLineageNode {
    fn drop(&mut self) {
        let mut stack = std::mem::take(&mut self.descendants);
        while let Some(mut node) = stack.pop() {
            stack.append(&mut node.descendants);
        }
    }
}

impl Clone for SessionLineageNode {
    fn clone(&self) -> Self {
        Self {
            session: self.session.clone(),
            descendants: clone_lineage_nodes(&self.descendants),
        }
    }
}

/// Copies `nodes` and their subtrees, depth first with a stack of open levels.
fn clone_lineage_nodes(nodes: &[SessionLineageNode]) -> Vec<SessionLineageNode> {
    let mut copied = Vec::with_capacity(nodes.len());
    let mut rest = nodes.iter();
    // Nodes being copied: (their children still to copy, their session, their copied children).
    let mut open: Vec<(
        std::slice::Iter<'_, SessionLineageNode>,
        &SessionRecord,
        Vec<_>,
    )> = Vec::new();
    loop {
        let next = match open.last_mut() {
            Some((children, _, _)) => children.next(),
            None => rest.next(),
        };
        if let Some(node) = next {
            let children = Vec::with_capacity(node.descendants.len());
            open.push((node.descendants.iter(), &node.session, children));
            continue;
        }
        let Some((_, session, descendants)) = open.pop() else {
            return copied;
        };
        let copy = SessionLineageNode {
            session: session.clone(),
            descendants,
        };
        match open.last_mut() {
            Some((_, _, siblings)) => siblings.push(copy),
            None => copied.push(copy),
        }
    }
}

impl PartialEq for SessionLineageNode {
    fn eq(&self, other: &Self) -> bool {
        let mut stack = vec![(self, other)];
        while let Some((a, b)) = stack.pop() {
            if a.session != b.session || a.descendants.len() != b.descendants.len() {
                return false;
            }
            stack.extend(a.descendants.iter().zip(&b.descendants));
        }
        true
    }
}

impl std::fmt::Debug for SessionLineageNode {
    /// The derived format on one line (`{:#?}` too: indenting a deep tree would be quadratic).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut stack = vec![std::slice::from_ref(self).iter()];
        let mut first = true;
        while let Some(level) = stack.last_mut() {
            if let Some(node) = level.next() {
                if !first {
                    f.write_str(", ")?;
                }
                write!(
                    f,
                    "SessionLineageNode {{ session: {:?}, descendants: [",
                    node.session
                )?;
                first = true;
                stack.push(node.descendants.iter());
            } else {
                stack.pop();
                // The outermost level is `self` alone, which has no brackets of its own.
                if !stack.is_empty() {
                    f.write_str("] }")?;
                }
                first = false;
            }
        }
        Ok(())
    }
}

/// Whether the ancestor walk reached a root.
#[derive(Debug, Clone, PartialEq)]
pub enum LineageResolution {
    /// Every ancestor is in the corpus; `root` is the outermost one (or the target).
    Complete {
        /// The root session.
        root: SessionRecord,
    },
    /// The walk stopped at a parent id that is not in the corpus.
    Unresolved {
        /// The missing parent id.
        unresolved_parent_id: String,
    },
}

/// A session's lineage through `parentSession`.
///
/// Its JSON ([`SessionLineageTrace::write_json`]) is
/// `{target, ancestors, descendants, complete: true, root}` or
/// `{target, ancestors, descendants, complete: false, unresolvedParentId}`, where each
/// descendant is `{session, descendants: [...]}` and each session a [`SessionRecord`].
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLineageTrace {
    /// The traced session.
    pub target: SessionRecord,
    /// Its ancestors, immediate parent first.
    pub ancestors: Vec<SessionRecord>,
    /// Its children, each with its descendants.
    pub descendants: Vec<SessionLineageNode>,
    /// Whether the ancestors reach a root.
    pub resolution: LineageResolution,
}

impl SessionLineageTrace {
    /// Writes the trace as one JSON object (see the type's documentation), compact.
    ///
    /// The descendant tree is written with an explicit stack, so a lineage of any depth is
    /// written in constant stack space. Pass a buffered writer: the tree is written in small
    /// pieces.
    pub fn write_json<W: std::io::Write>(&self, mut writer: W) -> serde_json::Result<()> {
        let w = &mut writer;
        put(w, b"{\"target\":")?;
        serde_json::to_writer(&mut *w, &self.target)?;
        put(w, b",\"ancestors\":")?;
        serde_json::to_writer(&mut *w, &self.ancestors)?;
        put(w, b",\"descendants\":")?;
        write_lineage_nodes(w, &self.descendants)?;
        match &self.resolution {
            LineageResolution::Complete { root } => {
                put(w, b",\"complete\":true,\"root\":")?;
                serde_json::to_writer(&mut *w, root)?;
            }
            LineageResolution::Unresolved {
                unresolved_parent_id,
            } => {
                put(w, b",\"complete\":false,\"unresolvedParentId\":")?;
                serde_json::to_writer(&mut *w, unresolved_parent_id)?;
            }
        }
        put(w, b"}")
    }

    /// [`SessionLineageTrace::write_json`] into a string.
    pub fn to_json_string(&self) -> serde_json::Result<String> {
        let mut out = Vec::new();
        self.write_json(&mut out)?;
        // serde_json writes UTF-8 only, and every literal above is ASCII.
        String::from_utf8(out).map_err(|e| serde_json::Error::io(std::io::Error::other(e)))
    }
}

fn put(w: &mut impl std::io::Write, bytes: &[u8]) -> serde_json::Result<()> {
    w.write_all(bytes).map_err(serde_json::Error::io)
}

/// Writes `nodes` as a JSON array of `{session, descendants}`, depth first with a stack of
/// sibling iterators: each open level is one iterator, not one call frame.
fn write_lineage_nodes(
    w: &mut impl std::io::Write,
    nodes: &[SessionLineageNode],
) -> serde_json::Result<()> {
    put(w, b"[")?;
    let mut stack = vec![nodes.iter()];
    let mut first = true;
    while let Some(level) = stack.last_mut() {
        if let Some(node) = level.next() {
            put(
                w,
                if first {
                    b"{\"session\":"
                } else {
                    b",{\"session\":"
                },
            )?;
            serde_json::to_writer(&mut *w, &node.session)?;
            put(w, b",\"descendants\":[")?;
            first = true;
            stack.push(node.descendants.iter());
        } else {
            stack.pop();
            // Closes this level's array, and the node that held it (the outermost array
            // is closed below).
            if !stack.is_empty() {
                put(w, b"]}")?;
            }
            first = false;
        }
    }
    put(w, b"]")
}

/// How one event relates to the others through replacements and provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventTrace {
    /// The traced event.
    pub target: SessionEventRecord,
    /// The replacement that directly shadowed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<u64>,
    /// `replaced_by`, then what replaced that, and so on to the last replacement.
    pub replacement_chain: Vec<u64>,
    /// The nodes this event shadowed, if it is a replacement.
    pub replaced_event_seqs: Vec<u64>,
    /// Its own `sourceEventSeqs`, in recorded order.
    pub source_event_seqs: Vec<u64>,
    /// Later events that cite it in their `sourceEventSeqs`, in log order.
    pub derived_event_seqs: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_serializes_in_canonical_key_order() {
        let e = SessionEvent::new("tool/result", 3, 7, json!({"b": 1, "a": 2}))
            .with_sources(vec![2])
            .with_surface_op(SurfaceOp::Replace { start: 1, end: 2 });
        assert_eq!(
            e.to_line().unwrap(),
            r#"{"type":"tool/result","seq":3,"time":7,"data":{"a":2,"b":1},"sourceEventSeqs":[2],"surfaceOp":{"op":"replace","start":1,"end":2}}"#
        );
        let back: SessionEvent = serde_json::from_str(&e.to_line().unwrap()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn header_keeps_unknown_fields_and_round_trips() {
        let line = r#"{"type":"session","version":0,"id":"s","createdAt":5,"cwd":"/w","delegationDepth":1,"zzFuture":{"x":[1,2]}}"#;
        let h: SessionHeader = serde_json::from_str(line).unwrap();
        assert_eq!(h.extra["zzFuture"], json!({"x": [1, 2]}));
        assert_eq!(serde_json::to_string(&h).unwrap(), line);
    }

    #[test]
    fn headers_differing_only_in_presentation_are_compatible() {
        let mut a = SessionHeader::new("s", 1);
        let mut b = a.clone();
        b.origin = Some("subagent".into());
        b.agent_preset = Some("p".into());
        b.delegation_depth = Some(0);
        assert_eq!(a.incompatibility(&b), None);
        a.cwd = Some("/x".into());
        assert_eq!(a.incompatibility(&b).unwrap().0, "cwd");
    }
}
