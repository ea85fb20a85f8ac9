//! A reader's open of the agent log's index on the core's sequence (`derived/sequence.rs`):
//! the answer from a commit that covers the log, from the last commit plus the lines after it
//! folded in memory, or from the index held for writing and brought up to date (catch up or
//! rebuild, `open.rs`). A reader never keeps the index open for writing, so it never blocks
//! the agent's writer.

use std::fs::File;
use std::sync::OnceLock;

use redb::ReadOnlyDatabase;

use super::derived::cause::Cause;
use super::derived::contain::Held;
use super::derived::sequence::{Derived, Found, NoCommit, Target, Unwritable};
use super::derived::storage::Opened;
use super::derived::unsynced::Syncs;
use super::derived::validate::SourceCheck;
use super::open::{Progress, Then, WritableIndex, log_len};
use super::rows::TypeMap;
use super::schema::Meta;
use super::validate::{self, LogChecks};
use super::{IndexError, IndexOptions, IndexOutcome, ReadOnlyReason};
use crate::event::{EventKind, FoldState, Folded, Folder, GenerationStart, Totals};
use crate::log::{Line, LineScanner, LogPaths};

/// What an in-memory scan after the watermark found, beyond the fold state.
#[derive(Clone, Debug, Default)]
pub(super) struct Tail {
    /// Boundaries found after the watermark.
    pub(super) boundaries: Vec<GenerationStart>,
    /// (offset, totals after) of token events after the watermark.
    pub(super) prefix: Vec<(u64, Totals)>,
}

/// What an open found, for the reader's handle ([`Index`](super::Index)).
pub(super) struct View {
    /// The committed meta record the answers start from.
    pub(super) meta: Meta,
    /// The fold over every complete line: `meta.fold` plus the in-memory tail.
    pub(super) state: FoldState,
    pub(super) tail: Tail,
    /// The read-only handle that found the commit, or one opened on the first query that
    /// needs rows.
    pub(super) db: OnceLock<Held<ReadOnlyDatabase>>,
    pub(super) types: TypeMap,
    pub(super) outcome: IndexOutcome,
    pub(super) repaired: bool,
    /// Bytes of the log this open read: validation windows and caught-up or scanned bytes.
    pub(super) bytes_read: u64,
}

/// One reader's open of the index of one log.
pub(super) struct Opening<'a> {
    paths: &'a LogPaths,
    options: &'a IndexOptions,
    log: &'a File,
    checks: LogChecks<'a>,
    progress: Progress<'a>,
    /// The syncs a writable open skips, decided just before it.
    syncs: Syncs,
}

impl<'a> Opening<'a> {
    pub(super) fn new(
        paths: &'a LogPaths,
        options: &'a IndexOptions,
        log: &'a File,
        progress: Progress<'a>,
    ) -> Opening<'a> {
        Opening {
            paths,
            options,
            log,
            checks: LogChecks::new(options, log),
            progress,
            syncs: Syncs::Kept,
        }
    }

    /// The answer from a commit `found` read-only, with the fold and outcome given.
    fn answer(&self, found: Found<LogChecks<'a>>, outcome: IndexOutcome) -> View {
        outcome.trace(&self.paths.index);
        let meta = *found.commit.meta;
        View {
            bytes_read: meta.head.len + meta.tail.len,
            state: meta.fold.clone(),
            meta,
            tail: Tail::default(),
            types: found.commit.loaded,
            outcome,
            repaired: false,
            db: OnceLock::from(found.db),
        }
    }
}

impl<'a> Derived for Opening<'a> {
    type Checks = LogChecks<'a>;
    type Answer = View;
    type Error = IndexError;

    fn target(&self) -> Target<'_, LogChecks<'a>> {
        Target {
            checks: &self.checks,
            index: &self.paths.index,
            settings: self.options.settings(self.syncs),
            read_only: self.options.read_only,
            max_memory_tail: self.options.max_memory_tail,
        }
    }

    fn source_error(&self, e: std::io::Error) -> IndexError {
        IndexError::log_read(&self.paths.log, e)
    }

    fn fresh(&mut self, found: Found<LogChecks<'a>>) -> Result<View, IndexError> {
        Ok(self.answer(found, IndexOutcome::Fresh))
    }

    /// Uses the last commit as it is (validated), folding the bytes after it in memory.
    fn with_tail(
        &mut self,
        found: Found<LogChecks<'a>>,
        why: ReadOnlyReason,
    ) -> Result<View, IndexError> {
        let (paths, log, options) = (self.paths, self.log, self.options);
        let meta = &found.commit.meta;
        let limit = log_len(log, &paths.log)?;
        let read = |e| IndexError::log_read(&paths.log, e);
        let folded = fold_tail(log, &meta.fold, limit, options).map_err(read)?;
        // The commit was validated against the log a moment ago. A log rewritten in place
        // since (against its append-only contract) would stitch the commit to another
        // version's lines, or one version's lines to another's: so the commit is validated
        // again, and the bytes the fold read are read again and must be the same.
        let from = meta.watermark();
        let still_valid = !matches!(
            validate::check(meta, &self.checks.expected, log).map_err(read)?,
            SourceCheck::Changed(_)
        );
        // The fold's crc started afresh at the watermark.
        let unchanged = crate::log::bytes_unchanged(log, (from, 0), folded.end, folded.crc);
        if !still_valid || !unchanged.map_err(read)? {
            return Err(IndexError::LogChanged {
                path: paths.index.clone(),
            });
        }
        let FoldedTail {
            state,
            tail,
            bytes,
            events,
            ..
        } = folded;
        let outcome = if bytes == 0 && why == ReadOnlyReason::SmallTail {
            // Only a torn line follows the commit, which covers every complete line.
            IndexOutcome::Fresh
        } else {
            IndexOutcome::ReadOnly {
                why,
                tail_bytes: bytes,
                tail_events: events,
            }
        };
        let mut view = self.answer(found, outcome);
        view.bytes_read += bytes;
        view.state = state;
        view.tail = tail;
        Ok(view)
    }

    fn without_commit(&mut self, why: ReadOnlyReason, found: NoCommit) -> Result<View, IndexError> {
        let path = self.paths.index.clone();
        Err(match found {
            NoCommit::Stale(reason) => IndexError::StaleReadOnly { path, reason, why },
            NoCommit::Unavailable(cause) => IndexError::Unavailable {
                path,
                detail: format!("{cause}, and {why}"),
                source: cause.source,
            },
        })
    }

    fn prepare(&mut self) -> Result<(), Cause> {
        // A build from scratch of a log that fits one commit skips its syncs (`open.rs`); if
        // the log's length cannot be had, every sync stays (always sound).
        let small =
            log_len(self.log, &self.paths.log).is_ok_and(|len| len <= self.options.commit_bytes);
        self.syncs = if small {
            Syncs::SkippedForNewFile
        } else {
            Syncs::Kept
        };
        Ok(())
    }

    fn write(&mut self, opened: Opened) -> Result<View, Unwritable<IndexError>> {
        let (paths, log, options) = (self.paths, self.log, self.options);
        let progress = &mut *self.progress;
        let (index, outcome) =
            WritableIndex::from_opened(paths, log, options, Then::Close, opened, progress)?;
        let (mut meta, mut types, repaired) =
            (index.meta.clone(), index.types.clone(), index.repaired);
        let mut outcome = outcome;
        if let Some(rebuilt) = index.close_or_rebuild(paths, log, options)? {
            (meta, types, outcome) = rebuilt;
        }
        Ok(View {
            bytes_read: meta.head.len + meta.tail.len + outcome.work().0,
            state: meta.fold.clone(),
            meta,
            tail: Tail::default(),
            types,
            outcome,
            repaired,
            db: OnceLock::new(),
        })
    }
}

/// The lines after a commit, folded in memory.
struct FoldedTail {
    /// The fold over the commit and these lines.
    state: FoldState,
    tail: Tail,
    /// Bytes and events folded.
    bytes: u64,
    events: u64,
    /// Where the scan stopped, and the crc32 of the bytes it read (from the commit's
    /// watermark to `end`).
    end: u64,
    crc: u32,
}

/// Folds `[state.end, limit)` in memory, keeping the boundaries and prefix sums it finds.
fn fold_tail(
    log: &File,
    from: &FoldState,
    limit: u64,
    options: &IndexOptions,
) -> std::io::Result<FoldedTail> {
    let mut folder = Folder::new(options.extractor(), from.clone());
    let mut scanner = LineScanner::new(log, from.end, limit, options.max_line, 0);
    let mut tail = Tail::default();
    while let Some(line) = scanner.next_line()? {
        match line {
            Line::TooLong { offset, len } => folder.fold_too_long(offset, len),
            Line::Complete { offset, bytes } => {
                if let Folded::Event(event) = folder.fold_line(offset, bytes) {
                    let state = folder.state();
                    match event.kind {
                        EventKind::Token => tail.prefix.push((offset, state.totals)),
                        EventKind::Boundary => tail.boundaries.extend(state.latest.clone()),
                        EventKind::Header | EventKind::Other => {}
                    }
                }
            }
        }
    }
    let (end, crc) = (scanner.end(), scanner.crc());
    let state = folder.into_state();
    let (bytes, events) = (state.end - from.end, state.events - from.events);
    Ok(FoldedTail {
        state,
        tail,
        bytes,
        events,
        end,
        crc,
    })
}
