//! The tools themselves, without the protocol: each parses its arguments, calls the library,
//! and answers the JSON the CLI's `--json` prints for the same answer, bounded (docs/MCP.md
//! lists each tool's cap). A bad argument or a failed call is a [`ToolError`](super::ToolError).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use jiff::civil::Date;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::args::{ListSessionsArgs, MatchArg, ReadSessionArgs, SearchArgs, StatusArgs, UsageArgs};
use super::error::ToolError;
use super::scope::{McpConfig, Scope, resolve};
use crate::archive::{self, default_archive_dir};
use crate::generation::{
    GenerationRequest, StatusReport, current_generation_at, expected_generation,
};
use crate::log::LogPaths;
use crate::query::{QueryConfig, QueryService, Store, StoreConfig, WindowRequest};
use crate::search::{
    LineAnchor, LineWindowRequest, MatchMode, SearchConfig, SearchIndex, SessionSearchRequest,
    TranscriptSearch, TranscriptSearchRequest, transcript_window,
};
use crate::transcript::sessions::{offset_cursor, parse_cursor, request_print};
use crate::transcript::{
    FactsCache, GroupBy, OpenOptions, ReportOptions, SessionFilter, UsageOptions, parse_agent,
};

/// The most entries of a list beside the answer (files left out, skipped) a tool returns; the
/// rest are counted in `<field>_omitted`.
pub const MAX_LISTED: usize = 50;
/// Usage rows per page when no limit is asked for.
pub const DEFAULT_USAGE_ROWS: u64 = 100;
/// The most usage rows one page holds.
pub const MAX_USAGE_ROWS: u64 = 500;
/// The most generations (and boundaries) a `status` answer lists: the latest ones.
pub const MAX_STATUS_GENERATIONS: usize = 50;

/// The tools, ready to answer: the sources resolved, the transcript search kept open so that a
/// warm search reuses its index connection.
#[derive(Debug)]
pub struct Tools {
    scope: Scope,
    index_dir: Option<PathBuf>,
    /// The archive read beside the originals (`None`: the originals alone).
    archive_dir: Option<PathBuf>,
    search: Mutex<Option<TranscriptSearch>>,
    /// The titles and times of the session catalog, kept across calls (a file is read again
    /// only when it changed).
    facts: Mutex<FactsCache>,
}

fn parse<T: DeserializeOwned>(tool: &str, args: Map<String, Value>) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::bad("invalid_arguments", format!("{tool}: {e}")))
}

fn to_json(answer: &impl Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(answer).map_err(|e| ToolError::bad("internal", e.to_string()))
}

/// A day argument (`YYYY-MM-DD` or `YYYYMMDD`).
fn day(name: &str, text: Option<&str>) -> Result<Option<Date>, ToolError> {
    text.map(|t| {
        crate::transcript::parse_day(t)
            .map_err(|e| ToolError::bad("invalid_arguments", format!("{name} {e}")))
    })
    .transpose()
}

/// Cuts the array `field` of `answer` to [`MAX_LISTED`] entries, counting the rest in
/// `<field>_omitted`.
fn cap_list(answer: &mut Value, field: &str) {
    let Some(Value::Array(list)) = answer.get_mut(field) else {
        return;
    };
    if list.len() <= MAX_LISTED {
        return;
    }
    let omitted = list.len() - MAX_LISTED;
    list.truncate(MAX_LISTED);
    if let Some(object) = answer.as_object_mut() {
        object.insert(format!("{field}_omitted"), omitted.into());
    }
}

impl Tools {
    /// The tools over `config`'s sources.
    pub fn new(config: &McpConfig) -> Tools {
        Tools {
            scope: Scope::new(config),
            index_dir: config.index_dir.clone(),
            archive_dir: (!config.no_archive)
                .then(|| default_archive_dir().ok())
                .flatten(),
            search: Mutex::new(None),
            facts: Mutex::new(FactsCache::default()),
        }
    }

    /// Calls the tool `name` with `args`; `None` when there is no such tool.
    pub fn call(&self, name: &str, args: Map<String, Value>) -> Option<Result<Value, ToolError>> {
        Some(match name {
            "search" => parse(name, args).and_then(|a| self.search(a)),
            "list_sessions" => parse(name, args).and_then(|a| self.list_sessions(a)),
            "read_session" => parse(name, args).and_then(|a| self.read_session(&a)),
            "usage" => parse(name, args).and_then(|a| self.usage(&a)),
            "status" => parse(name, args).and_then(|a| self.status(&a)),
            _ => return None,
        })
    }

    fn open_options(&self) -> OpenOptions {
        OpenOptions {
            index_dir: self.index_dir.clone(),
            ..OpenOptions::default()
        }
    }

    fn search(&self, args: SearchArgs) -> Result<Value, ToolError> {
        let mode = match args.match_mode {
            MatchArg::Phrase => MatchMode::Phrase,
            MatchArg::All => MatchMode::All,
        };
        let mut answer = if let Some(store) = &args.store {
            let root = self.scope.store(store)?;
            let store = Store::open(&root, StoreConfig::default())
                .map_err(|e| ToolError::bad(e.code(), e.to_string()))?;
            let page = SearchIndex::new(&store, SearchConfig::default()).search_sessions(
                &SessionSearchRequest {
                    query: args.query,
                    limit: args.limit,
                    cursor: args.cursor,
                    mode,
                    ..SessionSearchRequest::default()
                },
            )?;
            to_json(&page)?
        } else {
            // A poisoned lock only means an earlier call panicked; the search holds no state
            // a panic could leave half-changed (its index is caught up on every search).
            let mut search = self
                .search
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if search.is_none() {
                *search = Some(TranscriptSearch::new(
                    self.index_dir.clone(),
                    SearchConfig::default(),
                )?);
            }
            let Some(search) = search.as_mut() else {
                return Err(ToolError::bad("internal", "no transcript search"));
            };
            let page = search.search(&TranscriptSearchRequest {
                query: args.query,
                paths: self.scope.transcripts.clone(),
                limit: args.limit,
                cursor: args.cursor,
                mode,
            })?;
            to_json(&page)?
        };
        cap_list(&mut answer, "unreadable");
        Ok(answer)
    }

    fn list_sessions(&self, args: ListSessionsArgs) -> Result<Value, ToolError> {
        let filter = SessionFilter {
            agent: args.agent,
            project: args.project,
            since: day("since", args.since.as_deref())?,
            until: day("until", args.until.as_deref())?,
        };
        let invalid = |e: crate::transcript::SessionListError| {
            ToolError::bad("invalid_arguments", e.to_string())
        };
        filter.check().map_err(invalid)?;
        let options = archive::CatalogOptions {
            open: self.open_options(),
            stores: self.scope.stores().to_vec(),
            prompt: Some(crate::search::user_prompt),
        };
        let catalog = {
            // A poisoned lock only means an earlier call panicked: the cache is then rebuilt.
            let mut facts = self
                .facts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            archive::session_catalog(
                &self.scope.transcripts,
                &options,
                self.archive_dir.as_deref(),
                &mut facts,
            )
        };
        let page = catalog
            .page(&filter, args.limit, args.cursor.as_deref())
            .map_err(invalid)?;
        let mut answer = to_json(&page)?;
        cap_list(&mut answer, "skipped");
        Ok(answer)
    }

    fn read_session(&self, args: &ReadSessionArgs) -> Result<Value, ToolError> {
        if args.offset.is_some() && args.seq.is_some() {
            return Err(ToolError::bad(
                "invalid_arguments",
                "read_session: give offset or seq, not both",
            ));
        }
        if let Some(store) = &args.store {
            return self.read_store_session(store, args);
        }
        let file = if args.session.contains('/') {
            self.scope.transcript_file(&args.session)?
        } else {
            match self.scope.session_files(&args.session).as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(ToolError::bad(
                        "session_not_found",
                        format!("no session {:?} in the transcript sources", args.session),
                    ));
                }
                several => {
                    let files: Vec<String> = several
                        .iter()
                        .take(10)
                        .map(|f| f.display().to_string())
                        .collect();
                    return Err(ToolError::bad(
                        "ambiguous_session",
                        format!(
                            "{} sessions are named {:?}; pass one's file as session: {}",
                            several.len(),
                            args.session,
                            files.join(", ")
                        ),
                    ));
                }
            }
        };
        let defaults = LineWindowRequest::default();
        let request = LineWindowRequest {
            at: match (args.offset, args.seq) {
                (_, Some(line)) => LineAnchor::Line(line),
                (offset, None) => LineAnchor::Offset(offset.unwrap_or(0)),
            },
            before: args.before.unwrap_or(defaults.before),
            after: args.after.unwrap_or(defaults.after),
            max_chars: args.max_chars.unwrap_or(defaults.max_chars),
            raw: args.raw,
        };
        let window = transcript_window(&file, &request).map_err(|e| {
            let code = if e.is_bad_request() {
                "invalid_arguments"
            } else {
                "unreadable_transcript"
            };
            ToolError::bad(code, e.to_string())
        })?;
        to_json(&window)
    }

    fn read_store_session(&self, store: &str, args: &ReadSessionArgs) -> Result<Value, ToolError> {
        let root = self.scope.store(store)?;
        let Some(seq) = args.seq else {
            return Err(ToolError::bad(
                "invalid_arguments",
                "read_session: a store session is read around an event: give seq",
            ));
        };
        let query = |e: crate::query::QueryError| ToolError::bad(e.code(), e.to_string());
        let store = Store::open(&root, StoreConfig::default()).map_err(query)?;
        let service = QueryService::new(&store, QueryConfig::default()).map_err(query)?;
        let request = WindowRequest::new(&args.session, seq)
            .with_neighbours(args.before.unwrap_or(0), args.after.unwrap_or(0));
        to_json(&service.read_event(&request).map_err(query)?)
    }

    fn usage(&self, args: &UsageArgs) -> Result<Value, ToolError> {
        let by = match args.by.as_deref() {
            None => GroupBy::Day,
            Some(name) => name
                .parse::<GroupBy>()
                .map_err(|e| ToolError::bad("invalid_arguments", e.to_string()))?,
        };
        // Days, weeks and months are cut in this zone (IANA name; default: the system's).
        let timezone = crate::transcript::parse_timezone(args.timezone.as_deref())
            .map_err(|e| ToolError::bad("invalid_arguments", format!("timezone {e}")))?;
        let limit = args.limit.unwrap_or(DEFAULT_USAGE_ROWS);
        if !(1..=MAX_USAGE_ROWS).contains(&limit) {
            return Err(ToolError::bad(
                "invalid_arguments",
                format!("limit must be between 1 and {MAX_USAGE_ROWS}, not {limit}"),
            ));
        }
        let agents = match &args.agent {
            None => Vec::new(),
            Some(name) => vec![
                parse_agent(name)
                    .map_err(|e| ToolError::bad("invalid_arguments", e.to_string()))?,
            ],
        };
        let print = request_print(&format!(
            "usage\0{}\0{:?}\0{:?}\0{:?}\0{:?}\0{limit}",
            by.name(),
            args.agent,
            args.since,
            args.until,
            args.timezone
        ));
        let offset = match &args.cursor {
            None => 0,
            Some(c) => parse_cursor(c, &print).ok_or_else(|| {
                ToolError::bad(
                    "invalid_cursor",
                    "the cursor is not a next_cursor of this report (same by, agent, days and limit)",
                )
            })?,
        };
        let options = UsageOptions {
            open: self.open_options(),
            by,
            agents,
            since: day("since", args.since.as_deref())?,
            until: day("until", args.until.as_deref())?,
            timezone,
            ..UsageOptions::default()
        };
        let report = archive::usage(
            &self.scope.transcripts,
            &options,
            self.archive_dir.as_deref(),
            &|_, _| {},
        );
        let mut answer = to_json(&report)?;
        if let Some(Value::Array(rows)) = answer.get_mut("rows") {
            let total = rows.len() as u64;
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(rows.len());
            let end = usize::try_from(offset.saturating_add(limit))
                .unwrap_or(usize::MAX)
                .min(rows.len());
            *rows = rows.drain(start..end).collect();
            if let Some(object) = answer.as_object_mut() {
                object.insert("total_rows".into(), total.into());
                if (end as u64) < total {
                    object.insert(
                        "next_cursor".into(),
                        offset_cursor(end as u64, &print).into(),
                    );
                }
            }
        }
        cap_list(&mut answer, "skipped");
        Ok(answer)
    }

    fn status(&self, args: &StatusArgs) -> Result<Value, ToolError> {
        let path = match resolve(&args.path) {
            Ok(path) => path,
            // A transcript whose file is gone: the archive may hold it.
            Err(_) if self.archive_dir.is_some() => {
                return self.transcript_status(&self.scope.gone_transcript(&args.path)?);
            }
            Err(e) => return Err(e),
        };
        if path.is_dir() {
            let dir = self.scope.agent_dir(&path, &args.path)?;
            let generation = |e: crate::generation::GenerationError| {
                ToolError::bad("unreadable_log", e.to_string())
            };
            let expected = expected_generation(&dir, None).map_err(|e| generation(e.into()))?;
            let mut request = GenerationRequest::latest();
            request.expected_molt_count = expected.map(|(n, _)| n);
            let current = current_generation_at(&LogPaths::for_agent_dir(&dir), &request)
                .map_err(generation)?;
            return to_json(&StatusReport::new(&dir, &current, expected));
        }
        self.transcript_status(&self.scope.transcript_file(&args.path)?)
    }

    /// The `status` of a transcript: its report, from the archive when the file is gone.
    fn transcript_status(&self, file: &Path) -> Result<Value, ToolError> {
        let report = archive::report(
            file,
            &ReportOptions {
                open: self.open_options(),
                subagents: false,
            },
            self.archive_dir.as_deref(),
        )
        .map_err(|e| match e {
            crate::transcript::ReportError::Transcript(
                crate::transcript::TranscriptError::NotFound { .. },
            ) => ToolError::bad("not_found", e.to_string()),
            e => ToolError::bad("unreadable_transcript", e.to_string()),
        })?;
        let mut answer = to_json(&report)?;
        for field in ["generations", "boundaries"] {
            if let Some(Value::Array(list)) = answer.get_mut(field)
                && list.len() > MAX_STATUS_GENERATIONS
            {
                let omitted = list.len() - MAX_STATUS_GENERATIONS;
                list.drain(..omitted);
                if let Some(object) = answer.as_object_mut() {
                    object.insert(format!("{field}_omitted"), omitted.into());
                }
            }
        }
        Ok(answer)
    }
}
