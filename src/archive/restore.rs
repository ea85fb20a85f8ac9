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
/// target is checked free before anything is written, and nothing is linked into place before
/// every file is whole: a target that exists, or a version with a damaged frame, fails the
/// whole restore with nothing left behind.
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
        let found = archive.version(&original, Some(version))?;
        planned.push((original, version, target, found));
    }
    let mut staging = Staging::default();
    for (original, version, target, found) in planned {
        let bytes = staging.write(archive, &original, version, found, &target)?;
        staging.files.push(RestoredFile {
            original,
            path: target,
            version,
            bytes,
        });
    }
    staging.link()
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

/// Bytes written between requests to write them to the disk.
const SYNC_EVERY: u64 = 32 << 20;

/// Writes `found` into `file` as it is decompressed, and syncs it. A second thread syncs what
/// is written so far every [`SYNC_EVERY`] bytes, so the disk writes while later frames are
/// decompressed instead of all at the end. `Ok(None)`: a frame is damaged.
fn write_synced(
    archive: &Archive,
    found: &super::catalog::Version,
    file: &mut std::fs::File,
) -> std::io::Result<Option<u64>> {
    let syncer = file.try_clone()?;
    let streamed = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
        scope.spawn(move || {
            for () in rx {
                // An error shows again in the final sync.
                let _ = syncer.sync_data();
            }
        });
        let mut since = 0u64;
        archive.stream_version(found, &mut |bytes| {
            file.write_all(bytes)?;
            since += bytes.len() as u64;
            if since >= SYNC_EVERY {
                since = 0;
                // A sync already waiting takes these bytes too.
                let _ = tx.try_send(());
            }
            Ok(())
        })
    })?;
    if streamed.is_some() {
        file.sync_all()?;
    }
    Ok(streamed)
}

/// The files of one restore while they are written: each to a temporary file beside its
/// target, linked into place once every file is whole, so a file that appears meanwhile is
/// never overwritten and a cut-short restore leaves nothing under a target's name. Dropped
/// before [`Staging::link`], it removes the temporary files and the folders it made.
#[derive(Default)]
struct Staging {
    files: Vec<RestoredFile>,
    temporary: Vec<PathBuf>,
    made: Vec<PathBuf>,
    linked: bool,
}

impl Staging {
    /// Writes version `version` of `original` (`found`) to a temporary file for `target`,
    /// decompressed while it is written; the bytes written.
    fn write(
        &mut self,
        archive: &Archive,
        original: &Path,
        version: u32,
        found: &super::catalog::Version,
        target: &Path,
    ) -> Result<u64, ArchiveError> {
        let dir = target.parent().unwrap_or(Path::new("."));
        self.make_dir(dir)?;
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let tmp = dir.join(format!(".{name}.agentlog-restore-{}", std::process::id()));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| ArchiveError::io("write", &tmp, e))?;
        self.temporary.push(tmp.clone());
        let streamed = write_synced(archive, found, &mut file)
            .map_err(|e| ArchiveError::io("write", &tmp, e))?;
        if let Some(bytes) = streamed {
            return Ok(bytes);
        }
        // Read again frame by frame to name the damage.
        let read = archive.read_version(original, found);
        let why = read.damage.first().map_or_else(
            || "a frame could not be read".to_owned(),
            |d| format!("bytes {}..{}: {}", d.start, d.end, d.what),
        );
        Err(ArchiveError::Incomplete {
            path: original.to_path_buf(),
            version,
            why,
        })
    }

    /// Makes `dir` and its missing parents (0700), remembering the ones it made.
    fn make_dir(&mut self, dir: &Path) -> Result<(), ArchiveError> {
        let missing: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && d.symlink_metadata().is_err())
            .collect();
        for d in missing.into_iter().rev() {
            match std::fs::DirBuilder::new().mode(0o700).create(d) {
                Ok(()) => self.made.push(d.to_path_buf()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(ArchiveError::io("create", d, e)),
            }
        }
        Ok(())
    }

    /// Links every file into place (a target that appeared meanwhile fails the restore there).
    fn link(mut self) -> Result<Restored, ArchiveError> {
        self.linked = true;
        for (file, tmp) in self.files.iter().zip(&self.temporary) {
            std::fs::hard_link(tmp, &file.path).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => ArchiveError::Exists {
                    path: file.path.clone(),
                },
                _ => ArchiveError::io("link", &file.path, e),
            })?;
        }
        Ok(Restored {
            files: std::mem::take(&mut self.files),
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for tmp in &self.temporary {
            let _ = std::fs::remove_file(tmp);
        }
        if !self.linked {
            // Deepest first; a folder something else wrote into meanwhile stays.
            for dir in self.made.iter().rev() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}
