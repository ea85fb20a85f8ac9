//! Parquet export: agent logs, session stores and transcripts as a Hive-partitioned dataset
//! that DuckDB, Spark and Trino read as it is (`docs/EXPORT.md`).
//!
//! Incremental and exact: each source's export state records how far its log is exported and
//! the log's checksums there (the index's own validation), so the next export reads only the
//! new bytes, and a rewritten or truncated log is exported again whole, its old parts replaced.
//! Part files and states are written under temporary names and renamed once complete, in an
//! order that leaves every row visible at most once whenever the process dies, and exactly once
//! after the next export (`docs/EXPORT.md`, "Commit protocol").
//!
//! ```
//! use agentlog::export::{ExportOptions, export};
//! use agentlog::index::{Writer, WriterOptions};
//! use agentlog::log::LogPaths;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = tempfile::tempdir()?;
//! let mut writer = Writer::open(&LogPaths::for_agent_dir(agent.path()), WriterOptions::default())?;
//! writer.append_json(br#"{"type": "llm_response", "ts": 1786000000, "input_tokens": 7}"#)?;
//! writer.close()?;
//! let out = tempfile::tempdir()?;
//! let options = ExportOptions::new(out.path());
//! let first = export(&[agent.path().to_path_buf()], &options, &mut |_| {})?;
//! assert_eq!(first.rows, 1);
//! let again = export(&[agent.path().to_path_buf()], &options, &mut |_| {})?;
//! assert_eq!(again.rows, 0); // nothing new: nothing written
//! # Ok(())
//! # }
//! ```

mod commit;
mod compact;
mod error;
mod layout;
mod opencode;
mod part;
mod probe;
mod rows;
mod run;
mod scan;
mod schema;
mod source;
mod state;
mod transcript;

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use compact::{CompactReport, compact};
pub use error::ExportError;
pub use layout::{NO_DATE, Table, default_host, validate_host};
pub use rows::{ExportedGeneration, SessionRow};
pub use run::{FileReport, SourceReport};
pub use schema::{ColumnKind, ColumnSpec, EVENT_COLUMNS, GENERATION_COLUMNS, SESSION_COLUMNS};
pub use source::{Source, SourceKind, resolve};
pub use state::{Part, STATE_MAGIC, STATE_VERSION, SourceState, StateError};

use commit::{Steps, create_dir};
use layout::{list_ours, state_dir};

/// How to export.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The dataset directory.
    pub out: PathBuf,
    /// The `host` column and the host part of file names; several hosts can export into one
    /// dataset. Default: this machine's host name.
    pub host: String,
    /// Whether event rows carry the line's JSON text (the `json` column; null when off).
    pub json_text: bool,
    /// Where transcripts' indexes are kept (default: the per-user cache directory, as
    /// `agentlog transcript` keeps them; never beside the transcript).
    pub transcript_index_dir: Option<PathBuf>,
    /// Crash tests only: abort the process at this file-system step (1-based), as a kill
    /// there would.
    #[cfg(feature = "testing")]
    pub abort_at_step: Option<u64>,
    /// Crash tests only: stop with [`ExportError::Interrupted`] at this file-system step.
    #[cfg(feature = "testing")]
    pub fail_at_step: Option<u64>,
}

impl ExportOptions {
    /// Exports into `out` under this machine's host name, with JSON text.
    pub fn new(out: impl Into<PathBuf>) -> ExportOptions {
        ExportOptions {
            out: out.into(),
            host: default_host(),
            json_text: true,
            transcript_index_dir: None,
            #[cfg(feature = "testing")]
            abort_at_step: None,
            #[cfg(feature = "testing")]
            fail_at_step: None,
        }
    }

    /// The file-system steps of a run, armed with the crash-test faults when there are any.
    #[cfg_attr(
        not(feature = "testing"),
        allow(clippy::unused_self, reason = "no faults to read")
    )]
    pub(crate) fn steps(&self) -> Steps {
        #[cfg(feature = "testing")]
        return Steps::new(self.abort_at_step, self.fail_at_step);
        #[cfg(not(feature = "testing"))]
        Steps::new(None, None)
    }
}

/// How far an export is, in bytes of log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportProgress {
    /// Bytes read so far.
    pub done: u64,
    /// Bytes to read in all.
    pub total: u64,
}

/// What an export wrote.
#[derive(Clone, Debug, Serialize)]
pub struct ExportReport {
    /// The dataset directory.
    pub out: PathBuf,
    /// The host name used.
    pub host: String,
    /// One entry per source, in the order exported.
    pub sources: Vec<SourceReport>,
    /// Files written.
    pub files: usize,
    /// Event rows written.
    pub rows: u64,
    /// Bytes of Parquet written.
    pub bytes: u64,
    /// Bytes of log read.
    pub log_bytes: u64,
    /// Files deleted (replaced parts, leftovers of interrupted exports).
    pub removed: usize,
    /// File-system steps taken (each part written, state written, rename or delete).
    pub steps: u64,
}

/// Exports every log that `sources` name into `options.out`, incrementally.
///
/// # Errors
///
/// A SOURCE that is none of the exportable kinds is an error before anything is written. A
/// failure part way leaves the sources exported so far committed, and the failed one as its
/// last export left it.
pub fn export(
    sources: &[PathBuf],
    options: &ExportOptions,
    progress: &mut dyn FnMut(ExportProgress),
) -> Result<ExportReport, ExportError> {
    validate_host(&options.host)?;
    let mut logs: Vec<Source> = Vec::new();
    for path in sources {
        let index_dir = options.transcript_index_dir.as_ref();
        for source in opencode::expand(resolve(path)?, index_dir)? {
            if !logs
                .iter()
                .any(|s| s.log == source.log && s.id == source.id)
            {
                logs.push(source);
            }
        }
    }
    let out = options.out.as_path();
    let states = state_dir(out, &options.host);
    create_dir(&states)?;
    let _lock = lock(&states, &options.host)?;
    let found = list_ours(out, &options.host)?;
    let ctx = run::Context {
        out,
        host: &options.host,
        state_dir: &states,
        json_text: options.json_text,
        transcript_index_dir: options.transcript_index_dir.as_ref(),
        found: &found,
        opencode: std::cell::RefCell::new(None),
    };
    let total = logs.iter().map(|s| pending_bytes(&states, s)).sum();
    let mut steps = options.steps();
    let mut done = 0;
    let mut report = ExportReport {
        out: out.to_path_buf(),
        host: options.host.clone(),
        sources: Vec::new(),
        files: 0,
        rows: 0,
        bytes: 0,
        log_bytes: 0,
        removed: 0,
        steps: 0,
    };
    for source in logs {
        let prepared = run::prepare(&ctx, source, &mut steps)?;
        let source_report = run::run(
            &ctx,
            prepared,
            &mut |bytes| {
                done += bytes;
                progress(ExportProgress { done, total });
            },
            &mut steps,
        )?;
        report.files += source_report.files.len();
        report.rows += source_report.rows;
        report.bytes += source_report.files.iter().map(|f| f.bytes).sum::<u64>();
        report.log_bytes += source_report.to.saturating_sub(source_report.from);
        report.removed += source_report.removed;
        report.sources.push(source_report);
    }
    report.steps = steps.done();
    Ok(report)
}

/// Bytes of `source`'s log not yet exported, for progress (an estimate: the state is only
/// checked when the source's turn comes).
fn pending_bytes(states: &Path, source: &Source) -> u64 {
    if source.is_opencode() {
        // A database is read whole, not by bytes.
        return 0;
    }
    let len = std::fs::metadata(&source.log).map_or(0, |m| m.len());
    let key = source.key();
    let exported = std::fs::read(states.join(format!("{key}.state")))
        .ok()
        .and_then(|bytes| SourceState::decode(&bytes).ok())
        .map_or(0, |s| s.coverage.end);
    len.saturating_sub(exported)
}

/// The lock that lets one export at a time write a host's files in a dataset.
pub(crate) struct ExportLock(File);

impl Drop for ExportLock {
    /// Unlocks explicitly: a child process that another thread forked keeps a copy of the
    /// descriptor until it execs, and the lock would outlive the export until then.
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Takes the lock that lets one export at a time write `host`'s files in a dataset.
fn lock(states: &Path, host: &str) -> Result<ExportLock, ExportError> {
    let path = states.join("lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| ExportError::io("open", &path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(ExportLock(file)),
        Err(TryLockError::WouldBlock) => Err(ExportError::Locked {
            host: host.to_owned(),
            path,
        }),
        Err(TryLockError::Error(e)) => Err(ExportError::io("lock", &path, e)),
    }
}
