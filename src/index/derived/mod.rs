//! The derived-index core: one mechanism for every index agentlog keeps of a file another
//! program writes (the agent log's index, each transcript's index), so that each index keeps
//! only its schema and its fold.
//!
//! * Storage ([`storage`]): the redb file, opened read-only or for writing, failures
//!   classified into busy, not writable or damaged, repair after a crash bounded, syncs
//!   skipped behind a durable marker when asked ([`unsynced`]), the file and its markers
//!   removed together ([`files`]).
//! * Panic containment ([`contain`]): a damaged file may make redb panic; no panic reaches
//!   the caller, and a handle redb panicked in is never touched again.
//! * The layout every index shares ([`record`]): a `meta` table with the format version and
//!   the meta record, every value checksummed.
//! * The checks ([`validate`]): format, versions and identity, tables, then the source
//!   against what the last commit covers.
//! * The sequence ([`sequence`]): open → validate → answer from the commit, or catch up in
//!   O(new bytes), build or rebuild holding the write lock, or step aside (the last commit
//!   plus a fold in memory of the tail), with one typed outcome ([`outcome`]).
//!
//! A kind of index plugs in with two traits: [`Checks`](validate::Checks) (its meta record,
//! how it checks itself, how its source is checked) and [`Derived`](sequence::Derived) (its
//! answers, and how it writes itself up to date with its fold).
//!
//! A new kind of source plugs in at [`Checks::check_source`](validate::Checks::check_source).
//! Append-only files of lines (JSONL: agent logs, Claude Code, Codex, pi) use
//! [`check_lines`](validate::check_lines): length, head and tail windows, catch-up from the
//! commit's end. A source that is not append-only (a JSON document rewritten whole, an SQLite
//! database with its WAL) keeps its own cheap identity check in its meta record and answers
//! current or changed, never grown: the sequence then answers from the commit or rebuilds.

pub(crate) mod cause;
pub(crate) mod contain;
pub(crate) mod files;
pub(crate) mod outcome;
pub(crate) mod record;
pub(crate) mod sequence;
pub(crate) mod storage;
pub(crate) mod unsynced;
pub(crate) mod validate;
