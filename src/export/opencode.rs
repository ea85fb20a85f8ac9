//! `OpenCode` sessions as export sources: a database holds many sessions, each one source
//! (its `source_id` the session id), one event row per message in the session's time order
//! (the message's index is its `offset`, `line - 1` and `seq`), one generation, one session row
//! (`docs/EXPORT.md`, `OpenCode`).
//!
//! A database is not a log that grows: its sessions are read whole through the `OpenCode`
//! reader's private copy, and a session whose messages or parts changed since its last export
//! (their checksum, kept where a log keeps its crc) is exported whole again, its old parts
//! replaced.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::ExportError;
use super::layout::utc_date;
use super::rows::{EventRow, ExportedGeneration, SessionRow, TranscriptUsage};
use super::scan::{Batch, ScanOptions, Scanned};
use super::source::{Source, SourceKind};
use crate::event::FoldState;
use crate::log::Coverage;
use crate::transcript::{
    Conversation, ConversationMessage, Format, Money, conversation_of_database, opencode_root_of,
    parse_opencode_message,
};

/// Reads a database for export.
pub fn read(db: &Path, index_dir: Option<&PathBuf>) -> Result<Arc<Conversation>, ExportError> {
    conversation_of_database(db, index_dir.map(PathBuf::as_path))
        .map(Arc::new)
        .map_err(|source| ExportError::Transcript {
            path: db.to_path_buf(),
            source,
        })
}

/// One source per session of the database at `db`, in session id order.
pub fn sources(db: &Path, index_dir: Option<&PathBuf>) -> Result<Vec<Source>, ExportError> {
    let conversation = read(db, index_dir)?;
    let mut ids: Vec<&str> = conversation
        .messages
        .iter()
        .map(|m| m.session.as_str())
        .collect();
    ids.dedup();
    Ok(ids
        .into_iter()
        .map(|id| Source {
            kind: SourceKind::Transcript,
            id: id.to_owned(),
            log: db.to_path_buf(),
        })
        .collect())
}

/// The messages of one session.
fn messages<'c>(conversation: &'c Conversation, session: &str) -> Vec<&'c ConversationMessage> {
    conversation
        .messages
        .iter()
        .filter(|m| m.session == session)
        .collect()
}

/// What an export compares to tell whether a session changed: a crc of its messages' ids and
/// data and their parts' data, and how many messages it holds.
pub fn fingerprint(conversation: &Conversation, session: &str) -> (u32, u64) {
    let mut crc = crc32fast::Hasher::new();
    let messages = messages(conversation, session);
    for m in &messages {
        for bytes in [m.id.as_bytes(), &m.data]
            .into_iter()
            .chain(m.part_data.iter().map(Vec::as_slice))
        {
            crc.update(&(bytes.len() as u64).to_le_bytes());
            crc.update(bytes);
        }
    }
    (crc.finalize(), messages.len() as u64)
}

/// A message's row JSON: `{"info": <its data>, "parts": [<each part's data>]}` (the shape of
/// `opencode export`); `info` is null when its data is not a JSON object.
fn message_json(m: &ConversationMessage) -> Vec<u8> {
    let info = match std::str::from_utf8(&m.data) {
        Ok(text)
            if serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_object()) =>
        {
            text.trim().as_bytes()
        }
        _ => b"null".as_slice(),
    };
    let mut out = Vec::with_capacity(info.len() + 32);
    out.extend_from_slice(b"{\"info\":");
    out.extend_from_slice(info);
    out.extend_from_slice(b",\"parts\":[");
    for (i, part) in m.part_data.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(part.trim_ascii());
    }
    out.extend_from_slice(b"]}");
    out
}

/// Writes every message of `source`'s session as event rows, with its one generation and its
/// session row.
pub fn scan(
    source: &Source,
    conversation: &Conversation,
    options: &ScanOptions<'_>,
    mut batch: Batch<'_>,
) -> Result<Scanned, ExportError> {
    let messages = messages(conversation, &source.id);
    let mut generation = ExportedGeneration {
        boundary_initiator: "boot".to_owned(),
        ..ExportedGeneration::default()
    };
    let mut sums = [0u64; 6];
    let mut cost = Money::default();
    let mut session = SessionRow::default();
    for m in &messages {
        let ts = m
            .created_ms
            .and_then(|ms| i64::try_from(ms).ok())
            .map(|ms| ms.saturating_mul(1000));
        // Each figure in OpenCode's own terms: output without reasoning, reasoning beside it.
        let usage = parse_opencode_message(&m.data).ok().flatten();
        let tokens = usage.as_ref().map_or([None; 6], |u| {
            let t = &u.usage;
            [
                Some(t.input),
                Some(t.output.saturating_sub(t.reasoning)),
                Some(t.cache_read),
                Some(t.reasoning),
                Some(t.cache_creation),
                Some(t.total()),
            ]
        });
        if let Some(u) = &usage {
            generation.api_calls += 1;
            for (sum, value) in sums.iter_mut().zip(tokens) {
                *sum = sum.saturating_add(value.unwrap_or(0));
            }
            cost = cost.plus(u.cost);
        }
        generation.events += 1;
        if generation.first_ts.is_none() {
            generation.first_ts = ts;
        }
        if session.created_at.is_none() {
            session.created_at = ts;
        }
        if ts.is_some() {
            session.last_ts = ts;
        }
        let json = options.json_text.then(|| message_json(m));
        let row = EventRow {
            source_id: &source.id,
            host: options.host,
            offset: m.index,
            line: m.index + 1,
            seq: m.index,
            type_name: m.role.as_deref(),
            ts,
            generation: 0,
            molt_count: None,
            tokens,
            cost: usage.as_ref().map(|u| u.cost.dollars()),
            message_id: Some(&m.id),
            request_id: None,
            json: json.as_deref(),
        };
        batch.push(ts.and_then(utc_date).as_ref(), &row, 0)?;
    }
    let parts = batch.close(0)?;
    generation.transcript = Some(TranscriptUsage {
        boundary_kind: None,
        tokens: sums.map(Some),
        cost: Some(cost.dollars()),
    });
    let by_id: HashMap<&str, _> = conversation
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s))
        .collect();
    let own = by_id.get(source.id.as_str());
    let root = opencode_root_of(&source.id, &by_id);
    session.cwd = own.and_then(|s| s.directory.clone());
    session.parent_session = own.and_then(|s| s.parent.clone());
    if session.parent_session.is_some() {
        session.origin = Some("subagent".to_owned());
    }
    session.format = Some(Format::OpenCode.name().to_owned());
    // As `usage` names it: the root session's directory.
    session.project = Some(
        by_id
            .get(root)
            .and_then(|s| s.directory.clone())
            .unwrap_or_else(|| "opencode".to_owned()),
    );
    session.path = Some(source.log.display().to_string());
    let (crc, count) = fingerprint(conversation, &source.id);
    Ok(Scanned {
        coverage: Coverage {
            crc,
            ..Coverage::default()
        },
        fold: FoldState {
            lines: count,
            events: count,
            ..FoldState::default()
        },
        generations: vec![generation],
        session: Some(session),
        parts,
        stopped_at: None,
    })
}

/// Each `OpenCode` database among `found` (named by [`resolve`](super::source::resolve), its sessions unknown yet)
/// as one source per session, read through its private copy under `index_dir`.
pub(crate) fn expand(
    found: Vec<Source>,
    index_dir: Option<&PathBuf>,
) -> Result<Vec<Source>, ExportError> {
    let mut out = Vec::with_capacity(found.len());
    for source in found {
        if source.is_opencode() {
            out.extend(sources(&source.log, index_dir)?);
        } else {
            out.push(source);
        }
    }
    Ok(out)
}
