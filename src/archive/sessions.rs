//! The session catalog with the archive: the catalog of `agentlog::transcript` over the
//! originals and the archive's cache copies of what they no longer hold (as `usage` reads
//! them), plus the sessions of any session stores named. The viewer and the MCP server list
//! sessions through [`session_catalog`].

use std::path::{Path, PathBuf};

use super::readers::with_archive;
use crate::query::{QueryConfig, QueryService, Store, StoreConfig};
use crate::transcript::{
    CatalogFile, FactsCache, GroupBy, OpenOptions, PromptText, RowCost, STORE_AGENT,
    SessionCatalog, SessionRow, Skipped, Tally, TranscriptError, UsageOptions, catalog_of_files,
    usage_of_files,
};

/// What a catalog reads beside the transcripts, and how.
#[derive(Clone, Debug, Default)]
pub struct CatalogOptions {
    /// How transcripts are opened (the index directory, where the copies go too).
    pub open: OpenOptions,
    /// Session stores whose sessions are listed too (agent [`STORE_AGENT`], no tokens: a
    /// store's events are not usage).
    pub stores: Vec<PathBuf>,
    /// How a title is found in a line (`agentlog::search::user_prompt`); `None`: no titles
    /// but `OpenCode`'s.
    pub prompt: Option<PromptText>,
}

/// Every session under `paths` (the agents' default places when empty) and in the archive in
/// `archive_dir` (`None`: the originals alone), as `usage --by session` counts them, one row
/// each, newest first, with the sessions of `options.stores`. Titles and times are read
/// through `cache` (only changed files are read again).
pub fn session_catalog(
    paths: &[PathBuf],
    options: &CatalogOptions,
    archive_dir: Option<&Path>,
    cache: &mut FactsCache,
) -> SessionCatalog {
    let index_dir = options.open.index_dir.as_deref();
    let reading = with_archive(paths, index_dir, archive_dir);
    let usage_options = UsageOptions {
        open: options.open.clone(),
        by: GroupBy::Session,
        ..UsageOptions::default()
    };
    let mut report = usage_of_files(
        &reading.request,
        &reading.files,
        reading.skipped,
        &usage_options,
        &|_, _| {},
    );
    report.archive_only_sessions = reading.archive_only_sessions;
    let files: Vec<CatalogFile> = reading
        .files
        .iter()
        .map(|f| CatalogFile {
            path: f.clone(),
            archived: reading
                .copies
                .iter()
                .find(|c| c.copy == *f)
                .map(|c| (c.original.clone(), c.version)),
        })
        .collect();
    let mut catalog = catalog_of_files(&files, report, cache, options.prompt, index_dir);
    for store in &options.stores {
        match store_rows(store) {
            Ok(rows) => catalog.sessions.extend(rows),
            Err(reason) => catalog.skipped.push(Skipped {
                path: store.clone(),
                error: TranscriptError::Unreadable {
                    path: store.clone(),
                    reason,
                },
            }),
        }
    }
    if !options.stores.is_empty() {
        catalog.sort_newest_first();
    }
    catalog
}

/// The sessions of a store: id, working directory as project (else the store's path), and
/// creation time as start and end.
fn store_rows(root: &Path) -> Result<Vec<SessionRow>, String> {
    let store = Store::open(root, StoreConfig::default()).map_err(|e| e.to_string())?;
    let service = QueryService::new(&store, QueryConfig::default()).map_err(|e| e.to_string())?;
    let records = service.list_sessions().map_err(|e| e.to_string())?;
    Ok(records
        .into_iter()
        .map(|r| {
            let created = i64::try_from(r.header.created_at)
                .ok()
                .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
                .map(|t| t.to_string());
            SessionRow {
                session: r.header.id,
                project: r.header.cwd.unwrap_or_else(|| root.display().to_string()),
                agent: STORE_AGENT.to_owned(),
                tally: Tally::default(),
                cost: RowCost::default(),
                last_activity: None,
                title: None,
                start: created.clone(),
                end: created,
                from_archive: false,
                files: Vec::new(),
                error: None,
            }
        })
        .collect())
}
