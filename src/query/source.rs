//! The persisted side: the [`PersistedSource`] trait and its plain-JSONL implementation.
//!
//! The query layer reads stored sessions only through this narrow trait, so the engine
//! can back it with its redb index (seq → offset, type → offsets) without any change
//! above. The trait's reads are shaped for an index: by seq range and by type, neither
//! of which requires an implementation to load the whole log.
//!
//! On-disk layout of a store: `ROOT/<session-id>/events.jsonl`; the first line is the
//! header, then one event per line. A final line without `\n` is a torn tail (a write in
//! progress or cut by a crash) and is never returned.

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use memchr::memchr;
use serde_json::Value;

use crate::query::envelope::parse_header;
use crate::query::error::{QueryError, SourceError};
use crate::query::stored::RegionJudge;
use crate::query::types::{SessionEvent, SessionHeader};

/// Name of the log file inside a session directory.
pub const LOG_FILE_NAME: &str = "events.jsonl";

/// Stored events with the header they were stored under.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSlice {
    /// The stored header.
    pub header: SessionHeader,
    /// The requested committed events, ascending seq, each passing the rules one stored line
    /// is checked for, *as stored* (not legacy-normalized).
    pub events: Vec<SessionEvent>,
}

/// Read access to stored sessions.
///
/// Contract for every method:
/// - events are committed events only (never a torn tail), in ascending seq, each passing
///   the rules one stored line is checked for (the envelope, the surface fields, the message
///   and legacy shapes: docs/SESSIONS.md, "Torn tails and corruption"), exactly as stored;
/// - a session that is not stored is [`SourceError::NotFound`]; damage in acknowledged
///   history, or a committed event that breaks one of those rules, is
///   [`SourceError::Corrupt`], a foreign format version [`SourceError::Unsupported`],
///   and anything else [`SourceError::Failed`];
/// - the header returned with events is the one stored with them (the caller compares it
///   with the listed header to detect a log replaced between two calls).
pub trait PersistedSource: Send + Sync {
    /// Headers of every stored session. Sessions created but never given an event are
    /// not stored, so they are absent.
    fn list_headers(&self) -> Result<Vec<SessionHeader>, SourceError>;

    /// The stored header of one session.
    fn read_header(&self, session_id: &str) -> Result<SessionHeader, SourceError>;

    /// Events with `from <= seq <= to` (fewer when the log is shorter).
    fn read_range(&self, session_id: &str, from: u64, to: u64) -> Result<StoredSlice, SourceError>;

    /// Events whose type is one of `types`.
    fn read_types(&self, session_id: &str, types: &[&str]) -> Result<StoredSlice, SourceError>;

    /// Every committed event.
    fn read_all(&self, session_id: &str) -> Result<StoredSlice, SourceError> {
        self.read_range(session_id, 0, u64::MAX)
    }

    /// The event types of the log, each once, in no particular order: at least those of the
    /// committed events, and possibly some found only past the committed region. Readers use
    /// it to look for retired and unknown types without reading every event, so an
    /// implementation should answer it from an index when it has one; the default reads all.
    fn event_types(&self, session_id: &str) -> Result<Vec<String>, SourceError> {
        let mut types: Vec<String> = self
            .read_all(session_id)?
            .events
            .into_iter()
            .map(|e| e.event_type)
            .collect();
        types.sort_unstable();
        types.dedup();
        Ok(types)
    }
}

/// Checks that `id` can safely be used as one directory name.
///
/// The rule: 1 to 255 bytes; no `/`, `\` or `:` (so never a path, an absolute path or a
/// Windows drive); no NUL or other control character; no `..` anywhere; no leading `.`
/// (no `.`, `..` or hidden directories). Everything else, including non-ASCII, is kept
/// as is, so ids and directory names correspond one to one.
pub fn validate_session_id(id: &str) -> Result<(), QueryError> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > 255 {
        Some("it is longer than 255 bytes")
    } else if id.contains(['/', '\\', ':']) {
        Some("it contains a path separator or drive colon")
    } else if id.chars().any(char::is_control) {
        Some("it contains NUL or a control character")
    } else if id.contains("..") {
        Some("it contains '..'")
    } else if id.starts_with('.') {
        Some("it starts with '.'")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(QueryError::InvalidSessionId {
            id: id.to_string(),
            reason: reason.to_string(),
        }),
        None => Ok(()),
    }
}

/// The log path of session `id` under `root`, after validating the id.
pub(crate) fn session_log_path(root: &Path, id: &str) -> Result<PathBuf, QueryError> {
    validate_session_id(id)?;
    Ok(root.join(id).join(LOG_FILE_NAME))
}

/// The plain-JSONL [`PersistedSource`]: scans the files, no index.
#[derive(Debug, Clone)]
pub struct JsonlSource {
    root: PathBuf,
}

impl JsonlSource {
    /// A source over the store directory `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, id: &str) -> Result<PathBuf, SourceError> {
        stored_log_path(&self.root, id)
    }

    /// The header and the events `keep` keeps of the session `id`.
    fn slice(
        &self,
        id: &str,
        keep: impl Fn(&SessionEvent) -> bool,
    ) -> Result<StoredSlice, SourceError> {
        let scanned = self.scan(id)?;
        Ok(StoredSlice {
            header: scanned.header,
            events: scanned.events.into_iter().filter(keep).collect(),
        })
    }

    fn scan(&self, id: &str) -> Result<ScannedLog, SourceError> {
        let path = self.path(id)?;
        let bytes = std::fs::read(&path)
            .map_err(|e| SourceError::io(format!("reading {}", path.display()), e))?;
        let scanned = scan_log(&bytes)?;
        if scanned.header.id != id {
            return Err(SourceError::corrupt(format!(
                "{} holds session \"{}\", not \"{id}\"",
                path.display(),
                scanned.header.id
            )));
        }
        Ok(scanned)
    }
}

/// The log path of a stored session, refusing symbolic links: a store holds its sessions, it
/// does not point at files elsewhere, so neither `ROOT/<id>` nor its `events.jsonl` may be a
/// link. An id that cannot be a directory name cannot be stored ([`SourceError::NotFound`]).
pub(crate) fn stored_log_path(root: &Path, id: &str) -> Result<PathBuf, SourceError> {
    stored_log(root, id).map(|(path, _)| path)
}

/// [`stored_log_path`], with the log's metadata as that check read it (the log is not a link,
/// so it is the file's own), or why it could not be read.
pub(crate) fn stored_log(
    root: &Path,
    id: &str,
) -> Result<(PathBuf, io::Result<std::fs::Metadata>), SourceError> {
    let path = session_log_path(root, id).map_err(|_| SourceError::NotFound)?;
    let is_link = |m: &std::fs::Metadata| m.file_type().is_symlink();
    let link = |candidate: &Path| {
        SourceError::corrupt(format!(
            "{} is a symbolic link; agentlog does not follow links out of a session store",
            candidate.display()
        ))
    };
    if let Some(dir) = path.parent()
        && std::fs::symlink_metadata(dir).is_ok_and(|m| is_link(&m))
    {
        return Err(link(dir));
    }
    let metadata = std::fs::symlink_metadata(&path);
    if metadata.as_ref().is_ok_and(is_link) {
        return Err(link(&path));
    }
    Ok((path, metadata))
}

/// The header of session `session_id`'s log at `path` (from [`stored_log_path`]), which must
/// name that session.
pub(crate) fn read_stored_header(
    path: &Path,
    session_id: &str,
) -> Result<SessionHeader, SourceError> {
    let header = read_header_file(path)?;
    if header.id != session_id {
        return Err(SourceError::corrupt(format!(
            "the log of \"{session_id}\" holds session \"{}\"",
            header.id
        )));
    }
    Ok(header)
}

/// Reads the header line of a log file.
fn read_header_file(path: &Path) -> Result<SessionHeader, SourceError> {
    let file = std::fs::File::open(path)
        .map_err(|e| SourceError::io(format!("opening {}", path.display()), e))?;
    let mut line = Vec::new();
    io::BufReader::new(file)
        .read_until(b'\n', &mut line)
        .map_err(|e| SourceError::io(format!("reading {}", path.display()), e))?;
    if line.last() != Some(&b'\n') {
        return Err(SourceError::corrupt("the header line is incomplete"));
    }
    let value: Value = serde_json::from_slice(&line).map_err(header_not_json)?;
    Ok(parse_header(&value)?)
}

impl PersistedSource for JsonlSource {
    fn list_headers(&self) -> Result<Vec<SessionHeader>, SourceError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(SourceError::io(
                    format!("listing {}", self.root.display()),
                    e,
                ));
            }
        };
        let mut headers = Vec::new();
        for entry in entries {
            let entry = entry
                .map_err(|e| SourceError::io(format!("listing {}", self.root.display()), e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let path = match stored_log_path(&self.root, &name) {
                Ok(path) => path,
                // Not a session directory (temp files, foreign names).
                Err(SourceError::NotFound) => continue,
                Err(e) => {
                    tracing::warn!(session = %name, error = %e, "skipped in listing");
                    continue;
                }
            };
            match read_header_file(&path) {
                Ok(h) if h.id == name => headers.push(h),
                Ok(h) => {
                    tracing::warn!(dir = %name, header_id = %h.id, "session directory holds another session's log; skipped in listing");
                }
                Err(SourceError::NotFound) => {}
                Err(e) => {
                    tracing::warn!(session = %name, error = %e, "unreadable session header; skipped in listing");
                }
            }
        }
        Ok(headers)
    }

    fn read_header(&self, session_id: &str) -> Result<SessionHeader, SourceError> {
        read_stored_header(&self.path(session_id)?, session_id)
    }

    fn read_range(&self, session_id: &str, from: u64, to: u64) -> Result<StoredSlice, SourceError> {
        self.slice(session_id, |e| e.seq >= from && e.seq <= to)
    }

    fn read_types(&self, session_id: &str, types: &[&str]) -> Result<StoredSlice, SourceError> {
        self.slice(session_id, |e| types.contains(&e.event_type.as_str()))
    }
}

/// A scanned log file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedLog {
    /// The header.
    pub header: SessionHeader,
    /// The committed events.
    pub events: Vec<SessionEvent>,
    /// Bytes up to the end of the last committed record (where a repair would truncate).
    pub committed_bytes: usize,
}

/// Scans a whole log file (docs/SESSIONS.md, "Torn tails and corruption"): its header, then
/// each complete line judged by the region rules (`RegionJudge`). A final line without `\n` is
/// a torn tail.
pub fn scan_log(bytes: &[u8]) -> Result<ScannedLog, SourceError> {
    let header_end = memchr(b'\n', bytes)
        .ok_or_else(|| SourceError::corrupt("the header line is incomplete"))?;
    let header_line = bytes.get(..header_end).unwrap_or_default();
    let header_value: Value = serde_json::from_slice(header_line).map_err(header_not_json)?;
    let header = parse_header(&header_value)?;

    let mut events = Vec::new();
    let mut pos = header_end + 1;
    let mut judge = RegionJudge::new(&header.id, pos as u64);
    while let Some(rest) = bytes.get(pos..) {
        let Some(len) = memchr(b'\n', rest) else {
            if !rest.is_empty() {
                tracing::debug!(offset = pos, "ignoring torn tail");
            }
            break;
        };
        if let Some(event) = judge.line(pos as u64, Some(rest.get(..len).unwrap_or_default()))? {
            events.push(event);
        }
        pos += len + 1;
    }
    let (_, committed_bytes) = judge.finish();
    Ok(ScannedLog {
        header,
        events,
        // Never past `bytes.len()`, which is a usize.
        committed_bytes: usize::try_from(committed_bytes).unwrap_or(usize::MAX),
    })
}

fn header_not_json(e: serde_json::Error) -> SourceError {
    SourceError::corrupt_by(format!("the header line is not JSON: {e}"), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":0,"id":"s","createdAt":1}"#;

    fn log(lines: &[&str], tail: &str) -> Vec<u8> {
        let mut s = format!("{HEADER}\n");
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str(tail);
        s.into_bytes()
    }

    fn ev(seq: u64, ty: &str) -> String {
        format!(
            r#"{{"type":"{ty}","seq":{seq},"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#
        )
    }

    #[test]
    fn header_only_log_has_no_events() {
        let bytes = log(&[], "");
        let s = scan_log(&bytes).unwrap();
        assert!(s.events.is_empty());
        assert_eq!(s.committed_bytes, HEADER.len() + 1);
    }

    #[test]
    fn torn_tail_is_never_returned() {
        let bytes = log(&[&ev(0, "turn/start")], r#"{"type":"turn/end","seq":1"#);
        assert_eq!(scan_log(&bytes).unwrap().events.len(), 1);
    }

    /// A complete log of the events `(seq, type)`.
    fn events(list: &[(u64, &str)]) -> Vec<u8> {
        let lines: Vec<String> = list.iter().map(|&(seq, ty)| ev(seq, ty)).collect();
        log(&lines.iter().map(String::as_str).collect::<Vec<_>>(), "")
    }

    /// What `scan_log` says of a log it refuses.
    fn corruption(bytes: &[u8]) -> String {
        scan_log(bytes).unwrap_err().to_string()
    }

    #[test]
    fn seq_gap_after_the_last_turn_end_is_tolerated() {
        let bytes = events(&[(0, "turn/start"), (1, "turn/end"), (3, "turn/start")]);
        assert_eq!(scan_log(&bytes).unwrap().events.len(), 2);
    }

    #[test]
    fn seq_gap_before_a_later_turn_end_is_corruption() {
        let err = corruption(&events(&[
            (0, "turn/start"),
            (2, "step/start"),
            (3, "turn/end"),
        ]));
        assert!(err.contains("seq gap in committed region"), "{err}");
    }

    #[test]
    fn corrupt_line_before_a_later_turn_end_is_corruption() {
        let err = corruption(&log(
            &[&ev(0, "turn/start"), "{not json", &ev(2, "turn/end")],
            "",
        ));
        assert!(err.contains("unparsable committed event"), "{err}");
    }

    #[test]
    fn header_without_newline_is_corrupt_and_newer_version_is_unsupported() {
        assert!(matches!(
            scan_log(HEADER.as_bytes()),
            Err(SourceError::Corrupt { .. })
        ));
        let newer = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"createdAt\":1}\n";
        assert!(matches!(scan_log(newer), Err(SourceError::Unsupported(_))));
    }

    #[test]
    fn session_ids_that_could_escape_the_root_are_rejected() {
        for bad in [
            "", ".", "..", "a/b", "a\\b", "/abs", "C:x", "a\0b", ".hidden", "x..y", "tab\tid",
        ] {
            assert_eq!(
                validate_session_id(bad).unwrap_err().code(),
                "invalid_session_id",
                "{bad:?}"
            );
        }
        for good in ["session-1", "a.b", "ünïcode", "UPPER_lower-123"] {
            validate_session_id(good).unwrap();
        }
        assert!(validate_session_id(&"x".repeat(256)).is_err());
    }
}
