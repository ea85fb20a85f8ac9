//! What opening an index found and did: a typed value for callers, and a `tracing` event for
//! operators.

use std::fmt;

use serde::Serialize;

/// Why an existing index could not be trusted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StaleReason {
    /// The index was written in another on-disk format.
    FormatChanged {
        /// Format found in the index.
        found: u32,
        /// Format this build writes.
        expected: u32,
    },
    /// The index was built by a parser that may read lines differently.
    ParserChanged {
        /// Parser version found in the index.
        found: u32,
        /// Parser version of this build.
        expected: u32,
    },
    /// The index was built with another profile or maximum line size.
    ProfileChanged,
    /// The log is shorter than what the index covers: truncated or rewritten.
    LogTruncated {
        /// Bytes the index covers.
        indexed: u64,
        /// Bytes the log has now.
        len: u64,
    },
    /// The first bytes of the log changed: replaced, or the index belongs to another log.
    HeadChanged,
    /// The bytes before the watermark changed: rewritten in place (growth is no proof).
    TailChanged,
    /// The index contradicts itself (e.g. its counts disagree with its tables).
    Inconsistent {
        /// What disagreed.
        detail: String,
    },
    /// The index file cannot be read as an index (damaged, foreign, random bytes).
    Unreadable {
        /// What the storage layer said.
        detail: String,
    },
    /// A process died while committing to the index (killed, power lost, or aborted by a
    /// double panic inside redb on a damaged file): the file is not written to again.
    CommitInterrupted,
}

impl fmt::Display for StaleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StaleReason::FormatChanged { found, expected } => {
                write!(f, "index format {found}, this build reads {expected}")
            }
            StaleReason::ParserChanged { found, expected } => {
                write!(
                    f,
                    "built by parser {found}, this build is parser {expected}"
                )
            }
            StaleReason::ProfileChanged => f.write_str("built with another profile or line limit"),
            StaleReason::LogTruncated { indexed, len } => {
                write!(
                    f,
                    "log truncated: index covers {indexed} bytes, log has {len}"
                )
            }
            StaleReason::HeadChanged => {
                f.write_str("log head changed (replaced, or another log's index)")
            }
            StaleReason::TailChanged => f.write_str("log rewritten before the indexed watermark"),
            StaleReason::Inconsistent { detail } => write!(f, "index inconsistent: {detail}"),
            StaleReason::Unreadable { detail } => write!(f, "index unreadable: {detail}"),
            StaleReason::CommitInterrupted => {
                f.write_str("a commit to the index never finished (its process died)")
            }
        }
    }
}

/// Why an index was used read-only instead of being brought up to date on disk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "why", content = "detail", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReadOnlyReason {
    /// Another process (normally the agent's writer) has the index open for writing.
    HeldByAnotherProcess,
    /// The index file or its directory cannot be written.
    NotWritable(String),
    /// The caller asked for read-only access.
    Requested,
    /// The unindexed tail was no longer than `IndexOptions::max_memory_tail`: folded in memory,
    /// cheaper than committing it (the next open that finds more commits it).
    SmallTail,
    /// A transcript with no index and no longer than `max_unindexed_file` (a transcript
    /// option): folded whole in memory, cheaper than creating, syncing and reading an index.
    SmallFile,
    /// A transcript longer than that with no index, read by a usage run that reads every file
    /// (the usage snapshot's full path): folded whole and given none, because the snapshot
    /// answers for it until it grows, and only a file that grows needs an index to catch up.
    NotGrown,
}

impl fmt::Display for ReadOnlyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadOnlyReason::HeldByAnotherProcess => {
                f.write_str("another process holds the index for writing")
            }
            ReadOnlyReason::NotWritable(detail) => write!(f, "index not writable: {detail}"),
            ReadOnlyReason::Requested => f.write_str("read-only access requested"),
            ReadOnlyReason::SmallTail => f.write_str("too few new lines to be worth a commit"),
            ReadOnlyReason::SmallFile => f.write_str("too small a file to be worth an index"),
            ReadOnlyReason::NotGrown => f.write_str("no index until the file grows"),
        }
    }
}

/// What opening (or refreshing) an index found and did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum IndexOutcome {
    /// The index already covered every complete line.
    Fresh,
    /// New complete lines were indexed; nothing else changed.
    CaughtUp {
        /// Bytes newly indexed.
        bytes: u64,
        /// Events newly indexed.
        events: u64,
    },
    /// There was no index; it was built.
    Created {
        /// Bytes indexed.
        bytes: u64,
        /// Events indexed.
        events: u64,
    },
    /// The index could not be trusted and was rebuilt from the log.
    Rebuilt {
        /// Why it was not trusted.
        #[serde(flatten)]
        reason: StaleReason,
        /// Bytes indexed.
        bytes: u64,
        /// Events indexed.
        events: u64,
    },
    /// The index was valid but could not be written: the answer combines its last commit with
    /// an in-memory scan of the bytes after it.
    ReadOnly {
        /// Why it was not written.
        #[serde(flatten)]
        why: ReadOnlyReason,
        /// Bytes scanned after the index's watermark.
        tail_bytes: u64,
        /// Events among them.
        tail_events: u64,
    },
}

impl IndexOutcome {
    /// What a build from the first line did: built a new index, or (`reason`, why the old one
    /// was not used) rebuilt one.
    pub(crate) fn built(reason: Option<StaleReason>, bytes: u64, events: u64) -> IndexOutcome {
        match reason {
            None => IndexOutcome::Created { bytes, events },
            Some(reason) => IndexOutcome::Rebuilt {
                reason,
                bytes,
                events,
            },
        }
    }

    /// What a catch-up of a valid index did: nothing, when no complete line followed it.
    pub(crate) fn updated(bytes: u64, events: u64) -> IndexOutcome {
        if bytes == 0 {
            IndexOutcome::Fresh
        } else {
            IndexOutcome::CaughtUp { bytes, events }
        }
    }

    /// A stable `snake_case` name for scripts.
    pub fn code(&self) -> &'static str {
        self.summary().0
    }

    /// Bytes and events this open indexed or scanned.
    pub fn work(&self) -> (u64, u64) {
        let (_, bytes, events) = self.summary();
        (bytes, events)
    }

    /// The name, and the bytes and events indexed or scanned.
    fn summary(&self) -> (&'static str, u64, u64) {
        match *self {
            IndexOutcome::Fresh => ("fresh", 0, 0),
            IndexOutcome::CaughtUp { bytes, events } => ("caught_up", bytes, events),
            IndexOutcome::Created { bytes, events } => ("created", bytes, events),
            IndexOutcome::Rebuilt { bytes, events, .. } => ("rebuilt", bytes, events),
            IndexOutcome::ReadOnly {
                tail_bytes,
                tail_events,
                ..
            } => ("read_only", tail_bytes, tail_events),
        }
    }

    /// Emits the outcome as a `tracing` event.
    pub(crate) fn trace(&self, index: &std::path::Path) {
        let index = index.display();
        match self {
            IndexOutcome::Fresh => tracing::debug!(%index, "index fresh"),
            IndexOutcome::CaughtUp { bytes, events } => {
                tracing::info!(%index, bytes, events, "index caught up");
            }
            IndexOutcome::Created { bytes, events } => {
                tracing::info!(%index, bytes, events, "index created");
            }
            IndexOutcome::Rebuilt {
                reason,
                bytes,
                events,
            } => tracing::warn!(%index, %reason, bytes, events, "stale index rebuilt"),
            IndexOutcome::ReadOnly {
                why,
                tail_bytes,
                tail_events,
            } => tracing::info!(%index, %why, tail_bytes, tail_events, "index used read-only"),
        }
    }
}

impl fmt::Display for IndexOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexOutcome::Fresh => f.write_str("fresh"),
            IndexOutcome::CaughtUp { bytes, events } => {
                write!(f, "caught up ({events} events, {bytes} bytes)")
            }
            IndexOutcome::Created { bytes, events } => {
                write!(f, "created ({events} events, {bytes} bytes)")
            }
            IndexOutcome::Rebuilt {
                reason,
                bytes,
                events,
            } => write!(f, "rebuilt: {reason} ({events} events, {bytes} bytes)"),
            IndexOutcome::ReadOnly {
                why,
                tail_bytes,
                tail_events,
            } => write!(
                f,
                "read-only: {why}; scanned {tail_events} newer events ({tail_bytes} bytes) in memory"
            ),
        }
    }
}
