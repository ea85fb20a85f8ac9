//! Transcripts the archive does not hold yet although the agent may soon clean them up: what
//! `agentlog usage` warns about.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::catalog::Catalog;
use super::error::ArchiveError;

/// The age past which an unarchived transcript is warned about: Claude Code cleans up after
/// 30 days by default.
pub const WARN_AGE: Duration = Duration::from_hours(25 * 24);

/// Of `files`, those last modified more than `age` ago whose current size the archive in
/// `dir` has not seen (never archived, or grown since).
pub fn unarchived_older_than<'a>(
    files: impl IntoIterator<Item = &'a PathBuf>,
    dir: &Path,
    age: Duration,
) -> Result<Vec<PathBuf>, ArchiveError> {
    let catalog = Catalog::load(dir)?;
    let cutoff = SystemTime::now()
        .checked_sub(age)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Ok(files
        .into_iter()
        .filter(|path| {
            let Ok(meta) = std::fs::metadata(path) else {
                return false;
            };
            let old = meta.modified().is_ok_and(|m| m < cutoff);
            let held = catalog
                .latest(path.as_os_str().as_bytes())
                .is_some_and(|(_, r)| r.seen.size == meta.len() || r.end == meta.len());
            old && !held
        })
        .cloned()
        .collect())
}
