//! `agentlog archive --list`: every archived source with its versions, sizes and times, and
//! whether its original is still there.

use std::path::PathBuf;

use serde::Serialize;

use super::reader::{Archive, path_of};

/// One version of a source, as listed.
#[derive(Clone, Debug, Serialize)]
pub struct ListedVersion {
    /// The version number (from 1).
    pub version: u32,
    /// Bytes archived.
    pub bytes: u64,
    /// Complete lines archived.
    pub lines: u64,
    /// The first `timestamp` of its lines, as written.
    pub first_time: Option<String>,
    /// The last one.
    pub last_time: Option<String>,
}

/// One archived source.
#[derive(Clone, Debug, Serialize)]
pub struct ListedSource {
    /// The original path.
    pub path: PathBuf,
    /// The agent format (`claude-code`, `codex`, `pi`, or `unknown`).
    pub agent: String,
    /// The session id.
    pub session: String,
    /// The project.
    pub project: String,
    /// Bytes of the latest version.
    pub bytes: u64,
    /// The first `timestamp` of the latest version.
    pub first_time: Option<String>,
    /// The last `timestamp` of the latest version.
    pub last_time: Option<String>,
    /// Whether a file is still at the original path.
    pub original_exists: bool,
    /// Every version, oldest first.
    pub versions: Vec<ListedVersion>,
}

/// The archive's contents: `agentlog archive --list --json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct ArchiveListing {
    /// The archive directory.
    pub archive: PathBuf,
    /// The sources, by original path.
    pub sources: Vec<ListedSource>,
}

impl Archive {
    /// Lists every source.
    pub fn list(&self) -> ArchiveListing {
        let mut sources = Vec::new();
        for (key, versions) in &self.catalog.sources {
            let listed: Vec<ListedVersion> = versions
                .iter()
                .map(|v| {
                    let records: Vec<_> = v
                        .records
                        .iter()
                        .filter_map(|&i| self.catalog.record(i))
                        .collect();
                    ListedVersion {
                        version: v.number,
                        bytes: records.iter().map(|r| r.end).max().unwrap_or(0),
                        lines: records.iter().map(|r| r.lines).sum(),
                        first_time: records.iter().find_map(|r| r.first_time.clone()),
                        last_time: records.iter().rev().find_map(|r| r.last_time.clone()),
                    }
                })
                .collect();
            let Some((_, last)) = self.catalog.latest(key) else {
                continue;
            };
            let latest = listed.last().cloned();
            let path = path_of(key);
            sources.push(ListedSource {
                original_exists: path.is_file(),
                path,
                agent: last.agent.clone(),
                session: last.session.clone(),
                project: last.project.clone(),
                bytes: latest.as_ref().map_or(0, |v| v.bytes),
                first_time: latest.as_ref().and_then(|v| v.first_time.clone()),
                last_time: latest.and_then(|v| v.last_time),
                versions: listed,
            });
        }
        ArchiveListing {
            archive: self.dir().to_path_buf(),
            sources,
        }
    }
}
