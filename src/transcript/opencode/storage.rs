//! `OpenCode`'s older JSON storage: `storage/message/<session>/msg_*.json` (one message each,
//! the same `data` as a database row), `storage/part/<message>/prt_*.json` (one part each) and
//! `storage/session/<project>/<session>.json` (a session's title, directory and parent). Read
//! in place; nothing is written.

use std::path::Path;

use serde::Deserialize;

use super::{PartRow, Parts, Row, SessionInfo, Store};
use crate::transcript::error::TranscriptError;
use crate::transcript::json::{Text, parse_line};

/// Every entry of a directory (none if it cannot be listed), sorted by name.
fn entries(dir: &Path) -> Vec<std::fs::DirEntry> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    out.sort_by_key(std::fs::DirEntry::file_name);
    out
}

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Reads the storage directory `storage` (the one holding `message/` and `session/`).
pub(crate) fn read_storage(storage: &Path, want: Parts) -> Result<Store, TranscriptError> {
    let messages = storage.join("message");
    let listing =
        std::fs::read_dir(&messages).map_err(|e| TranscriptError::at("list", &messages, e));
    drop(listing?);
    let mut rows = Vec::new();
    for session in entries(&messages) {
        let session_id = session.file_name().to_string_lossy().into_owned();
        for file in entries(&session.path()) {
            let path = file.path();
            if !is_json(&path) || !file.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let data = std::fs::read(&path).map_err(|e| TranscriptError::io("read", &path, e))?;
            let id = path
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
            rows.push(Row {
                id,
                session: session_id.clone(),
                data,
                file: Some(path),
            });
        }
    }
    let mut sessions = Vec::new();
    for project in entries(&storage.join("session")) {
        for file in entries(&project.path()) {
            let path = file.path();
            if is_json(&path)
                && let Ok(bytes) = std::fs::read(&path)
                && let Some(info) = session_info(&bytes)
            {
                sessions.push(info);
            }
        }
    }
    // A part file that cannot be read is skipped (its message still counts).
    let mut parts = Vec::new();
    let mut skipped_parts = 0;
    let part_dir = storage.join("part");
    let messages = match want {
        Parts::Read => entries(&part_dir),
        Parts::Skip => Vec::new(),
    };
    for message in messages {
        let message_id = message.file_name().to_string_lossy().into_owned();
        for file in entries(&message.path()) {
            let path = file.path();
            if !is_json(&path) || !file.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let Ok(data) = std::fs::read(&path) else {
                skipped_parts += 1;
                continue;
            };
            parts.push(PartRow {
                id: path
                    .file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
                message: message_id.clone(),
                data,
            });
        }
    }
    Ok(Store {
        path: storage.to_path_buf(),
        rows,
        parts,
        skipped_parts,
        sessions,
        wal: false,
    })
}

#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct SessionFile<'a> {
    id: Text<'a>,
    #[serde(rename = "parentID")]
    parent: Text<'a>,
    title: Text<'a>,
    directory: Text<'a>,
}

fn session_info(bytes: &[u8]) -> Option<SessionInfo> {
    let s: SessionFile = parse_line(bytes)?;
    let text = |t: &Text<'_>| t.non_empty().map(str::to_owned);
    Some(SessionInfo {
        id: text(&s.id)?,
        parent: text(&s.parent),
        title: text(&s.title),
        directory: text(&s.directory),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_files_are_read_beside_the_messages() {
        let dir = tempfile::tempdir().unwrap();
        let storage = dir.path().join("storage");
        let write = |rel: &str, body: &str| {
            let path = storage.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        };
        write(
            "message/ses_1/msg_1.json",
            r#"{"role":"user","time":{"created":5}}"#,
        );
        write("part/msg_1/prt_2.json", r#"{"type":"text","text":"two"}"#);
        write("part/msg_1/prt_1.json", r#"{"type":"text","text":"one"}"#);
        write("part/msg_1/prt_3.json", "not json");
        write("part/msg_1/notes.txt", "ignored");
        let store = read_storage(&storage, Parts::Read).unwrap();
        assert_eq!(store.parts.len(), 3);
        let c = super::super::conversation(&store);
        assert_eq!(c.messages.len(), 1);
        let texts: Vec<_> = c.messages[0]
            .parts
            .iter()
            .map(|p| p.text.as_deref())
            .collect();
        assert_eq!(texts, [Some("one"), Some("two")]);
        assert_eq!(c.skipped_parts, 1, "the part that is not JSON");
    }
}
