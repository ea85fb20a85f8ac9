//! What the readers see of the archive: each archived version the originals no longer hold,
//! copied (uncompressed, whole lines) into the cache directory under its original path, so
//! that the transcript machinery reads it as it reads any file, through its own index. A copy
//! that already has the version's length is left alone (one stat); a version that grew or is
//! new is written again under a temporary name and renamed over it.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::catalog::Version;
use super::reader::{Archive, path_of};

/// The folder of the cache directory (or index directory) the copies go in.
pub const COPIES_DIR: &str = "archived";

/// An archived version a reader reads from its cache copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchivedCopy {
    /// The original path.
    pub original: PathBuf,
    /// The version copied.
    pub version: u32,
    /// The copy in the cache directory (canonical).
    pub copy: PathBuf,
    /// Whether the original file still exists (shorter than the archived version, or this is
    /// an older version).
    pub original_exists: bool,
    /// The agent format's name the archive recorded (`claude-code`, `codex`, `pi`).
    pub agent: String,
    /// The session id the archive recorded.
    pub session: String,
}

/// The archived versions a reading adds to the originals, and the originals it reads from the
/// archive instead.
#[derive(Debug, Default)]
pub struct ArchivedSources {
    /// The copies to read, by original path, then version.
    pub copies: Vec<ArchivedCopy>,
    /// Originals the archive holds more of and whose lines carry no id to count a message
    /// once by (Codex): their copy is read instead of them.
    pub replaced: Vec<PathBuf>,
    /// Sessions (agent and id) every file of which is gone: read from the archive alone.
    pub archive_only_sessions: u64,
    /// What could not be copied or read back, as messages.
    pub problems: Vec<String>,
}

/// Whether `path` is one of `scope` or under one (everything when `scope` is empty).
fn in_scope(path: &Path, scope: &[PathBuf]) -> bool {
    scope.is_empty() || scope.iter().any(|root| path.starts_with(root))
}

/// The copies of the archived sources under `scope` (every source when empty) that the
/// originals do not hold, kept in `copies_dir`: the latest version of a source whose original
/// is gone or shorter, and the older versions (lines a rewrite took out) of formats whose
/// messages carry an id the cross-file merge counts once by. Codex lines carry none: only a
/// Codex source's latest version is read, in place of a shorter original.
pub fn archived_sources(
    archive: &Archive,
    scope: &[PathBuf],
    copies_dir: &Path,
) -> ArchivedSources {
    let mut out = ArchivedSources::default();
    let mut sessions_present: BTreeSet<(String, String)> = BTreeSet::new();
    let mut sessions_gone: BTreeSet<(String, String)> = BTreeSet::new();
    // Each root as given and resolved (once, not once a source).
    let scope: Vec<PathBuf> = scope
        .iter()
        .flat_map(|root| [Some(root.clone()), std::fs::canonicalize(root).ok()])
        .flatten()
        .collect();
    for (key, versions) in &archive.catalog.sources {
        let original = path_of(key);
        if !in_scope(&original, &scope) {
            continue;
        }
        let Some((latest, last)) = archive.catalog.latest(key) else {
            continue;
        };
        let present = std::fs::metadata(&original).ok().map(|m| m.len());
        let session = (last.agent.clone(), last.session.clone());
        if present.is_some() {
            sessions_present.insert(session.clone());
        } else {
            sessions_gone.insert(session.clone());
        }
        let codex = last.agent == crate::transcript::Format::Codex.name();
        let wanted = versions.iter().filter(|v| {
            if v.number == latest.number {
                present.is_none_or(|len| len < last.end)
            } else {
                !codex
            }
        });
        for version in wanted {
            let copy = copy_path(copies_dir, version.number, &original);
            match keep_copy(archive, &original, version, &copy) {
                Ok(copy) => {
                    if codex && present.is_some() {
                        out.replaced.push(original.clone());
                    }
                    out.copies.push(ArchivedCopy {
                        original: original.clone(),
                        version: version.number,
                        copy,
                        original_exists: present.is_some(),
                        agent: session.0.clone(),
                        session: session.1.clone(),
                    });
                }
                Err(problem) => out.problems.push(problem),
            }
        }
    }
    out.archive_only_sessions = sessions_gone.difference(&sessions_present).count() as u64;
    out
}

/// Where version `version` of `original` is copied: `<copies_dir>/v<version>/<original>`, so
/// that the names a session and project are read from are the original's.
pub fn copy_path(copies_dir: &Path, version: u32, original: &Path) -> PathBuf {
    let relative = original.strip_prefix("/").unwrap_or(original);
    copies_dir.join(format!("v{version}")).join(relative)
}

/// The copy of `version`, written again unless it already has the version's length; its
/// canonical path.
pub(crate) fn keep_copy(
    archive: &Archive,
    original: &Path,
    version: &Version,
    copy: &Path,
) -> Result<PathBuf, String> {
    let end = archive.catalog.last_of(version).map_or(0, |r| r.end);
    let current = std::fs::metadata(copy).is_ok_and(|m| m.is_file() && m.len() == end);
    if !current {
        let read = archive.read_version(original, version);
        for d in &read.damage {
            tracing::warn!(
                path = %d.path.display(),
                version = d.version,
                start = d.start,
                end = d.end,
                "archived bytes skipped: {}",
                d.what
            );
        }
        write_copy(copy, &read.bytes).map_err(|e| {
            format!(
                "cannot copy {} to {}: {e}",
                original.display(),
                copy.display()
            )
        })?;
    }
    std::fs::canonicalize(copy).map_err(|e| format!("cannot resolve {}: {e}", copy.display()))
}

/// Writes `bytes` to `path` (mode 0600, folders 0700) under a temporary name, then renames it.
fn write_copy(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    crate::transcript::ensure_private_dir(parent)?;
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// The original path a copy stands for, if `path` is a copy under `copies_dir`.
pub fn original_of(copies_dir: &Path, path: &Path) -> Option<(PathBuf, u32)> {
    let dir = std::fs::canonicalize(copies_dir).unwrap_or_else(|_| copies_dir.to_path_buf());
    let rest = path.strip_prefix(&dir).ok()?;
    let mut parts = rest.components();
    let version = parts
        .next()?
        .as_os_str()
        .as_bytes()
        .strip_prefix(b"v")
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())?;
    Some((Path::new("/").join(parts.as_path()), version))
}
