//! `agentlog archive --restore`: a session's archived files written back byte for byte, a
//! Claude Code session with its subagent files, never over an existing file.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::ArchiveError;
use super::reader::{Archive, path_of};

/// What to restore and where.
#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    /// Version N of each file (the latest when `None`), as `--list` numbers them.
    pub version: Option<u32>,
    /// Write under this directory, keeping the files' names and their layout relative to each
    /// other, instead of at the original paths.
    pub to: Option<PathBuf>,
}

/// One file written back.
#[derive(Clone, Debug, Serialize)]
pub struct RestoredFile {
    /// The original path.
    pub original: PathBuf,
    /// Where it was written.
    pub path: PathBuf,
    /// The version written.
    pub version: u32,
    /// Its bytes.
    pub bytes: u64,
}

/// What a restore wrote: `agentlog archive --restore ... --json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Restored {
    /// The files, by original path.
    pub files: Vec<RestoredFile>,
}

/// Restores `what`: a session id (every file of that session: a Claude Code transcript with
/// its subagent files) or an original path (that file, with the rest of its session). Every
/// file is read and checked, and every target checked free, before anything is written; a
/// target that exists, or a version with a damaged frame, fails the whole restore with
/// nothing written.
pub fn restore(
    archive: &Archive,
    what: &str,
    options: &RestoreOptions,
) -> Result<Restored, ArchiveError> {
    let sources = select(archive, what)?;
    let mut chosen = Vec::new();
    for path in &sources {
        let versions = archive.versions(path);
        let version = match options.version {
            None => versions.last().copied(),
            Some(n) => versions.contains(&n).then_some(n),
        };
        if let Some(version) = version {
            chosen.push((path.clone(), version));
        }
    }
    if chosen.is_empty() {
        return Err(ArchiveError::NoMatch {
            what: format!("version {} of {what}", options.version.unwrap_or(0)),
        });
    }
    let base = common_dir(chosen.iter().map(|(p, _)| p.as_path()));
    let mut planned = Vec::new();
    for (original, version) in chosen {
        let target = match (&options.to, &base) {
            (Some(to), Some(base)) => to.join(original.strip_prefix(base).unwrap_or(&original)),
            (Some(to), None) => to.join(original.file_name().unwrap_or_default()),
            (None, _) => original.clone(),
        };
        if target.symlink_metadata().is_ok() {
            return Err(ArchiveError::Exists { path: target });
        }
        // Two threads decompress a whole version; one that is not is read again frame by
        // frame to name the damage.
        let found = archive.version(&original, Some(version))?;
        let parts = if let Some(parts) = archive.read_in_two(found) {
            parts
        } else {
            let read = archive.read_version(&original, found);
            if let Some(d) = read.damage.first() {
                return Err(ArchiveError::Incomplete {
                    path: original,
                    version,
                    why: format!("bytes {}..{}: {}", d.start, d.end, d.what),
                });
            }
            [read.bytes, Vec::new()]
        };
        planned.push((original, version, target, parts));
    }
    let mut files = Vec::new();
    for (original, version, target, parts) in planned {
        write_new(&target, &parts)?;
        files.push(RestoredFile {
            original,
            path: target,
            version,
            bytes: parts.iter().map(|p| p.len() as u64).sum(),
        });
    }
    Ok(Restored { files })
}

/// The sources `what` names: those of the session it is the id of, or the session of the
/// source at that path.
fn select(archive: &Archive, what: &str) -> Result<Vec<PathBuf>, ArchiveError> {
    let as_path = std::path::absolute(Path::new(what)).unwrap_or_else(|_| PathBuf::from(what));
    let key = archive
        .catalog
        .sources
        .contains_key(as_path.as_os_str().as_bytes())
        .then(|| archive.names(&as_path))
        .flatten()
        .map(|(s, p, _)| (s.to_owned(), Some(p.to_owned())));
    let (session, project) = key.unwrap_or_else(|| (what.to_owned(), None));
    let paths: Vec<PathBuf> = archive
        .catalog
        .sources
        .keys()
        .map(|k| path_of(k))
        .filter(|p| {
            archive.names(p).is_some_and(|(s, proj, _)| {
                s == session && project.as_deref().is_none_or(|want| want == proj)
            })
        })
        .collect();
    if paths.is_empty() {
        return Err(ArchiveError::NoMatch {
            what: what.to_owned(),
        });
    }
    Ok(paths)
}

/// The deepest directory holding every path (`None` for no path).
fn common_dir<'a>(mut paths: impl Iterator<Item = &'a Path>) -> Option<PathBuf> {
    let mut base = paths.next()?.parent()?.to_path_buf();
    for p in paths {
        while !p.starts_with(&base) {
            base = base.parent()?.to_path_buf();
        }
    }
    Some(base)
}

/// Writes `parts`, one after another, to a new file at `target` (mode 0600): through a temporary file beside it,
/// linked into place, so a file that appears meanwhile is never overwritten and a cut-short
/// write never leaves a partial file under the target's name.
fn write_new(target: &Path, parts: &[Vec<u8>]) -> Result<(), ArchiveError> {
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| ArchiveError::io("create", dir, e))?;
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.agentlog-restore-{}", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            for part in parts {
                f.write_all(part)?;
            }
            f.sync_all()
        })
        .map_err(|e| ArchiveError::io("write", &tmp, e));
    let linked = written.and_then(|()| {
        std::fs::hard_link(&tmp, target).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => ArchiveError::Exists {
                path: target.to_path_buf(),
            },
            _ => ArchiveError::io("link", target, e),
        })
    });
    let _ = std::fs::remove_file(&tmp);
    linked
}
