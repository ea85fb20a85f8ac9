//! Transcripts the archive does not hold yet although the agent may soon clean them up: what
//! `agentlog usage` warns about.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::catalog::Catalog;
use super::error::ArchiveError;
use crate::transcript::StatsTaken;

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
    Ok(unarchived_in(files, &catalog, age, &StatsTaken::default()))
}

/// Of `files`, those last modified more than `age` ago whose current size `catalog` has not
/// seen; a file's `stat` is taken from `seen` when the run noted one.
pub(crate) fn unarchived_in<'a>(
    files: impl IntoIterator<Item = &'a PathBuf>,
    catalog: &Catalog,
    age: Duration,
    seen: &StatsTaken,
) -> Vec<PathBuf> {
    let cutoff = SystemTime::now()
        .checked_sub(age)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    files
        .into_iter()
        .filter(|path| {
            let (len, modified) = match seen.get(path) {
                Some(stat) => (stat.len, stat.modified()),
                None => match std::fs::metadata(path) {
                    Ok(meta) => (meta.len(), meta.modified().unwrap_or(SystemTime::now())),
                    Err(_) => return false,
                },
            };
            let held = catalog
                .latest(path.as_os_str().as_bytes())
                .is_some_and(|(_, r)| r.seen.size == len || r.end == len);
            modified < cutoff && !held
        })
        .cloned()
        .collect()
}
