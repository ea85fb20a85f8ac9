//! The archive: the one thing agentlog keeps that nothing can rebuild. Every complete line of
//! every transcript is copied, compressed, into a per-user data directory ([`data_dir`]), so
//! that a session the agent has cleaned up still answers and can be put back byte for byte.
//!
//! * Format (docs/FORMAT.md, "The archive"): a `frames` file of checksummed zstd frames, each
//!   holding whole lines, and an `index` file of checksummed records, each naming a frame and
//!   the source, version and byte range it holds. Both are append-only.
//! * [`archive`] appends what is new (O(new bytes); one stat for a file with nothing new); a
//!   source rewritten since (shorter, its head or archived tail changed) starts a new version.
//! * [`Archive`] reads it: [`Archive::list`], [`Archive::read`], [`verify`], [`restore`].
//! * The readers see it (and [`session_catalog`], the sessions the viewer and the MCP server
//!   list): [`usage`] and [`report`] read the archived versions the originals no
//!   longer hold from copies in the cache directory, through the transcript machinery.

mod catalog;
mod copies;
mod error;
mod files;
pub(crate) mod frame;
mod list;
mod pending;
mod reader;
mod readers;
mod record;
mod restore;
mod run;
mod sessions;
mod verify;
mod writer;

pub use copies::{
    ArchivedCopy, ArchivedSources, COPIES_DIR, archived_sources, copy_path, original_of,
};
pub use error::ArchiveError;
pub use files::{DATA_DIR_ENV, data_dir, default_archive_dir};
pub use frame::FrameDamage;
pub use list::{ArchiveListing, ListedSource, ListedVersion};
pub use pending::{WARN_AGE, unarchived_older_than};
pub use reader::{Archive, ArchiveDamage, ArchivedBytes};
pub use readers::{copies_dir, gone_copies, report, usage, usage_and_unarchived};
pub use restore::{RestoreOptions, Restored, RestoredFile, restore};
pub use run::{ArchiveOptions, ArchiveReport, ArchiveSkipped, archive};
pub use sessions::{CatalogOptions, session_catalog};
pub use verify::{ArchiveVerification, IndexDamage, verify};

#[cfg(test)]
mod tests;
