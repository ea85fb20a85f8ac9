//! How a catalog is built: the files found grouped into sessions as the usage report groups
//! them (`session_of` for line transcripts, the root session for `OpenCode`), each group joined
//! to its report row; a report row no file group matched is still listed, so every session
//! the report counts has its row.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::facts::{Facts, FactsCache, LineFacts, PromptText};
use super::{SessionCatalog, SessionFile, SessionRow};
use crate::transcript::error::TranscriptError;
use crate::transcript::format::Format;
use crate::transcript::opencode::{self, source_path};
use crate::transcript::usage::{Skipped, UsageReport, UsageRow, session_of};

/// A file a catalog reads: a file found under the roots, or the archive's cache copy of an
/// archived version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogFile {
    /// The file read.
    pub path: PathBuf,
    /// For a cache copy: the original's path and the version copied.
    pub archived: Option<(PathBuf, u32)>,
}

/// A session's file with what its head and tail say.
struct Member {
    file: SessionFile,
    facts: LineFacts,
}

/// The catalog of `files` (what the usage `report`, grouped by session, read: line
/// transcripts, `OpenCode` sources, archive copies), their facts read through `cache`
/// (titles found by `prompt`; `OpenCode` databases copied under `index_dir`).
pub fn catalog_of_files(
    files: &[CatalogFile],
    report: UsageReport,
    cache: &mut FactsCache,
    prompt: Option<PromptText>,
    index_dir: Option<&Path>,
) -> SessionCatalog {
    // What each path read stands for, and the paths whose facts are read.
    let mut origin: HashMap<PathBuf, Option<(PathBuf, u32)>> = HashMap::new();
    let mut wanted: Vec<(PathBuf, bool)> = Vec::new();
    for f in files {
        let is_opencode = opencode::wanted(&f.path);
        let path = if is_opencode {
            source_path(&f.path)
        } else {
            f.path.clone()
        };
        if origin.insert(path.clone(), f.archived.clone()).is_none() {
            wanted.push((path, is_opencode));
        }
    }
    let facts = cache.refresh(&wanted, prompt, index_dir);
    let mut groups: BTreeMap<(String, String), Vec<Member>> = BTreeMap::new();
    let mut skipped = report.skipped;
    for (path, _) in &wanted {
        let Some((bytes, facts)) = facts.get(path) else {
            continue;
        };
        let archived = origin.get(path).cloned().flatten();
        let file = |format: Format| SessionFile {
            path: archived
                .as_ref()
                .map_or_else(|| path.clone(), |a| a.0.clone()),
            format,
            bytes: *bytes,
            copy: archived.as_ref().map(|_| path.clone()),
            version: archived.as_ref().map(|a| a.1),
        };
        match facts {
            Facts::Lines(lines) => {
                // A file that shows no format is the usage report's to skip.
                let Some(format) = lines.format else { continue };
                let (session, project) = session_of(path, format);
                groups.entry((project, session)).or_default().push(Member {
                    file: file(format),
                    facts: lines.clone(),
                });
            }
            Facts::OpenCode(Ok(sessions)) => {
                for s in sessions {
                    groups
                        .entry((s.project.clone(), s.session.clone()))
                        .or_default()
                        .push(Member {
                            file: file(Format::OpenCode),
                            facts: LineFacts {
                                format: Some(Format::OpenCode),
                                title: s.title.clone(),
                                start: s.start.clone(),
                                end: s.end.clone(),
                            },
                        });
                }
            }
            Facts::OpenCode(Err(why)) => {
                // Its usage rows are still listed (without files); say why once.
                if !skipped.iter().any(|s| s.path == *path) {
                    skipped.push(Skipped {
                        path: path.clone(),
                        error: TranscriptError::Unreadable {
                            path: path.clone(),
                            reason: why.clone(),
                        },
                    });
                }
            }
        }
    }
    let errors: HashMap<PathBuf, String> = skipped
        .iter()
        .map(|s| (s.path.clone(), s.error.to_string()))
        .collect();
    let mut rows: HashMap<(String, String), UsageRow> = report
        .rows
        .into_iter()
        .map(|r| ((r.project.clone().unwrap_or_default(), r.key.clone()), r))
        .collect();
    let mut sessions = Vec::with_capacity(groups.len() + rows.len());
    for ((project, session), mut members) in groups {
        // The main file first: an original before a copy, then the one named as the session,
        // then the shallowest, then the latest version.
        members.sort_by_key(|m| {
            let named = m.file.path.file_stem().is_some_and(|s| *s == *session);
            (
                m.file.copy.is_some(),
                !named,
                m.file.path.components().count(),
                m.file.path.clone(),
                std::cmp::Reverse(m.file.version),
            )
        });
        let usage = rows.remove(&(project.clone(), session.clone()));
        let main_format = members.first().and_then(|m| m.facts.format);
        let error = members
            .iter()
            .find_map(|m| errors.get(m.file.read_path()).cloned());
        let start = members.iter().filter_map(|m| m.facts.start.clone()).min();
        let end = members.iter().filter_map(|m| m.facts.end.clone()).max();
        let title = members.iter().find_map(|m| m.facts.title.clone());
        let from_archive = members.iter().all(|m| m.file.copy.is_some());
        let mut row = row_of(usage, session, project, main_format);
        row.title = title;
        row.end = end.or_else(|| start.clone());
        row.start = start;
        row.from_archive = from_archive;
        row.files = members.into_iter().map(|m| m.file).collect();
        row.error = error;
        sessions.push(row);
    }
    // A session the report counts that no file showed (a head without a format): listed too.
    for ((project, session), usage) in rows {
        sessions.push(row_of(Some(usage), session, project, None));
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let mut catalog = SessionCatalog {
        sessions,
        archive_only_sessions: report.archive_only_sessions,
        skipped,
    };
    catalog.sort_newest_first();
    catalog
}

/// A row from its usage row (or none: no usage), before its facts.
fn row_of(
    usage: Option<UsageRow>,
    session: String,
    project: String,
    format: Option<Format>,
) -> SessionRow {
    let (agent, tally, cost, last_activity) = match usage {
        Some(u) => {
            let agent = if u.agents.is_empty() {
                format.map_or("unknown", Format::name).to_owned()
            } else {
                u.agent_names()
            };
            (
                agent,
                u.tally,
                u.cost,
                u.last_activity.map(|t| t.to_string()),
            )
        }
        None => (
            format.map_or("unknown", Format::name).to_owned(),
            crate::transcript::tally::Tally::default(),
            crate::transcript::price::RowCost::default(),
            None,
        ),
    };
    SessionRow {
        session,
        project,
        agent,
        tally,
        cost,
        last_activity,
        title: None,
        start: None,
        end: None,
        from_archive: false,
        files: Vec::new(),
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::usage::GroupBy;

    fn usage_row(session: &str, project: &str, agents: Vec<Format>) -> UsageRow {
        UsageRow {
            by: GroupBy::Session,
            key: session.to_owned(),
            project: Some(project.to_owned()),
            agents,
            tally: crate::transcript::tally::Tally::default(),
            cost: crate::transcript::price::RowCost::default(),
            block: None,
            last_activity: None,
        }
    }

    #[test]
    fn a_counted_session_no_file_shows_is_still_listed_once() {
        let report = UsageReport {
            rows: vec![
                usage_row("a", "p", vec![Format::Codex]),
                usage_row("b", "p", vec![Format::ClaudeCode, Format::Kimi]),
            ],
            archive_only_sessions: 1,
            ..UsageReport::default()
        };
        let catalog = catalog_of_files(&[], report, &mut FactsCache::default(), None, None);
        let names: Vec<(&str, &str)> = catalog
            .sessions
            .iter()
            .map(|r| (r.session.as_str(), r.agent.as_str()))
            .collect();
        assert_eq!(names, [("a", "codex"), ("b", "claude-code,kimi")]);
        assert!(
            catalog
                .sessions
                .iter()
                .all(|r| r.files.is_empty() && !r.from_archive)
        );
        assert_eq!(catalog.archive_only_sessions, 1);
    }
}
