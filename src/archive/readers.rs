//! The readers with the archive: `usage` over the originals and the archived versions they no
//! longer hold, and the report of a transcript whose file is gone. Both read the archive's
//! cache copies ([`super::copies`]) through the transcript machinery, as any file is read.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::catalog::Catalog;
use super::copies::{COPIES_DIR, archived_sources, copy_path};
use super::error::ArchiveError;
use super::pending::unarchived_in;
#[cfg(doc)]
use super::pending::unarchived_older_than;
use super::reader::Archive;
use crate::transcript::{
    ReportError, ReportOptions, Skipped, StatsTaken, TranscriptError, TranscriptReport,
    UsageOptions, UsageReport, default_index_dir, discover, read_report, roots_or_default,
    sort_paths, usage_of_files_noting,
};

/// Where the cache copies of archived versions go: `<index dir>/archived`, the index
/// directory being `index_dir` or the default one.
pub fn copies_dir(index_dir: Option<&Path>) -> Option<PathBuf> {
    index_dir
        .map(Path::to_path_buf)
        .or_else(default_index_dir)
        .map(|dir| dir.join(COPIES_DIR))
}

/// A path made absolute against the working directory (a file that is gone cannot be
/// resolved further).
fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| {
            // The folder may still exist: resolve it, and keep the name.
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            match (parent.map(std::fs::canonicalize), path.file_name()) {
                (Some(Ok(dir)), Some(name)) => Ok(dir.join(name)),
                _ => std::path::absolute(path),
            }
        })
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Something about the archive that kept it out of a report, as a skipped entry.
fn skipped(path: &Path, what: &'static str, why: impl std::fmt::Display) -> Skipped {
    Skipped {
        path: path.to_path_buf(),
        error: TranscriptError::io(what, path, std::io::Error::other(why.to_string())),
    }
}

/// The usage report of [`crate::transcript::usage`], with the archive in `archive_dir` read
/// too (`None`: the originals alone, `--no-archive`): the archived versions under `paths`
/// (every archived source when `paths` is empty) whose original is gone or shorter are read
/// from their cache copies, each message held by both counted once by the cross-file merge;
/// [`UsageReport::archive_only_sessions`] counts the sessions every file of which is gone.
/// The run-level snapshot is kept apart from the one without the archive.
pub fn usage(
    paths: &[PathBuf],
    options: &UsageOptions,
    archive_dir: Option<&Path>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> UsageReport {
    let mut reading = with_archive(paths, options.open.index_dir.as_deref(), archive_dir);
    let skipped = std::mem::take(&mut reading.skipped);
    report_of(
        &reading,
        skipped,
        options,
        progress,
        &mut StatsTaken::default(),
    )
}

/// [`usage`], and beside it the transcripts under `paths` that [`unarchived_older_than`] names
/// for `age` and the archive in `pending_dir` (which `usage` warns about even when it does not
/// read the archive). One discovery serves both; the archive's catalog is read in a thread of
/// its own while the report is made, and the check then takes each file's `stat` from the
/// report's own checks where they took one.
pub fn usage_and_unarchived(
    paths: &[PathBuf],
    options: &UsageOptions,
    archive_dir: Option<&Path>,
    (pending_dir, age): (&Path, Duration),
    progress: &(dyn Fn(usize, usize) + Sync),
) -> (UsageReport, Result<Vec<PathBuf>, ArchiveError>) {
    let index_dir = options.open.index_dir.as_deref();
    let mut reading = with_archive(paths, index_dir, archive_dir);
    let skipped = std::mem::take(&mut reading.skipped);
    // The cache copies of archived versions are not the agent's files: not checked.
    let copies = copies_dir(index_dir).map(|dir| {
        let mut prefix = dir.into_os_string().into_vec();
        prefix.push(b'/');
        prefix
    });
    let original = |f: &&PathBuf| {
        copies
            .as_deref()
            .is_none_or(|c| !f.as_os_str().as_bytes().starts_with(c))
    };
    std::thread::scope(|scope| {
        let catalog = scope.spawn(|| Catalog::load(pending_dir));
        let mut seen = StatsTaken::default();
        let report = report_of(&reading, skipped, options, progress, &mut seen);
        let catalog = catalog.join().unwrap_or_else(|_| {
            Err(ArchiveError::io(
                "check",
                pending_dir,
                std::io::Error::other("the archive's catalog could not be read"),
            ))
        });
        let pending = catalog.map(|catalog| {
            unarchived_in(reading.files.iter().filter(original), &catalog, age, &seen)
        });
        (report, pending)
    })
}

/// The usage report of what `reading` names, with what could not be read (taken out of it).
fn report_of(
    reading: &WithArchive,
    skipped: Vec<Skipped>,
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
    seen: &mut StatsTaken,
) -> UsageReport {
    let mut report = usage_of_files_noting(
        &reading.request,
        &reading.files,
        skipped,
        options,
        progress,
        seen,
    );
    report.archive_only_sessions = reading.archive_only_sessions;
    report
}

/// What a reader with the archive reads: the originals under the roots and the cache copies
/// of the archived versions they no longer hold.
pub(crate) struct WithArchive {
    /// What names the run-level snapshot: the roots, and the copies' folder and archive when
    /// the archive is read.
    pub(crate) request: Vec<PathBuf>,
    /// The files to read (canonical, sorted): originals and copies.
    pub(crate) files: Vec<PathBuf>,
    /// What could not be read or copied.
    pub(crate) skipped: Vec<Skipped>,
    /// The copies among `files`, with what they stand for.
    pub(crate) copies: Vec<super::ArchivedCopy>,
    /// Sessions every file of which is gone.
    pub(crate) archive_only_sessions: u64,
}

/// The files under `paths` (the default roots when empty) and the archive's copies of what
/// they no longer hold (none when `archive_dir` is `None`), copies kept under `index_dir`.
pub(crate) fn with_archive(
    paths: &[PathBuf],
    index_dir: Option<&Path>,
    archive_dir: Option<&Path>,
) -> WithArchive {
    let roots = roots_or_default(paths);
    let (mut files, mut skipped_files) = discover(&roots);
    let originals = |request, files, skipped| WithArchive {
        request,
        files,
        skipped,
        copies: Vec::new(),
        archive_only_sessions: 0,
    };
    let Some(archive_dir) = archive_dir else {
        return originals(roots, files, skipped_files);
    };
    let archive = match Archive::open(archive_dir) {
        Ok(archive) => archive,
        Err(e) => {
            skipped_files.push(skipped(archive_dir, "read the archive", e));
            return originals(roots, files, skipped_files);
        }
    };
    let Some(copies) = copies_dir(index_dir) else {
        skipped_files.push(skipped(archive_dir, "copy", "no cache directory"));
        return originals(roots, files, skipped_files);
    };
    let scope: Vec<PathBuf> = if paths.is_empty() {
        Vec::new()
    } else {
        roots.iter().map(|r| absolute(r)).collect()
    };
    let sources = archived_sources(&archive, &scope, &copies);
    files.retain(|f| !sources.replaced.contains(f));
    files.extend(sources.copies.iter().map(|c| c.copy.clone()));
    sort_paths(&mut files);
    // A path given that is gone is no longer skipped when the archive holds what was under it.
    skipped_files.retain(|s| {
        let gone = matches!(s.error, TranscriptError::NotFound { .. });
        let held = |p: &Path| sources.copies.iter().any(|c| c.original.starts_with(p));
        !(gone && held(&absolute(&s.path)))
    });
    for problem in &sources.problems {
        skipped_files.push(skipped(archive_dir, "copy", problem));
    }
    // The archive and the copies' folder name the snapshot apart from a run without the
    // archive, or with another one.
    let mut request = roots;
    request.push(copies);
    request.push(archive_dir.to_path_buf());
    WithArchive {
        request,
        files,
        skipped: skipped_files,
        copies: sources.copies,
        archive_only_sessions: sources.archive_only_sessions,
    }
}

/// The report of [`read_report`]; when the file is gone, or shorter than its latest archived
/// version (truncated or rewritten: the archive holds lines it no longer has), and the
/// archive in `archive_dir` holds it, the report of that version (with its archived subagent
/// files when asked) in place of the file's, as `usage` reads a shorter Codex original;
/// [`TranscriptReport::from_archive`] names the version and `path` the original.
pub fn report(
    path: &Path,
    options: &ReportOptions,
    archive_dir: Option<&Path>,
) -> Result<TranscriptReport, ReportError> {
    let found = match read_report(path, options) {
        Err(ReportError::Transcript(TranscriptError::NotFound { .. })) => {
            Err(ReportError::Transcript(TranscriptError::NotFound {
                path: path.to_path_buf(),
            }))
        }
        Ok(report) => Ok(report),
        other => return other,
    };
    let Some(archive_dir) = archive_dir else {
        return found;
    };
    let original = absolute(path);
    let Ok(archive) = Archive::open(archive_dir) else {
        return found;
    };
    let key = std::os::unix::ffi::OsStrExt::as_bytes(original.as_os_str());
    let Some((latest, record)) = archive.catalog.latest(key) else {
        return found;
    };
    let version = latest.number;
    if found.is_ok() {
        // The file is there: the archive answers only for lines the file no longer holds.
        let len = std::fs::metadata(&original).map(|m| m.len());
        if len.is_ok_and(|len| len >= record.end) {
            return found;
        }
    }
    let Some(copies) = copies_dir(options.open.index_dir.as_deref()) else {
        return found;
    };
    let copy = copy_to(
        &archive,
        &original,
        version,
        &copy_path(&copies, version, &original),
    )?;
    if options.subagents {
        // Beside the copy, as they were beside the original.
        let folder = original.with_extension("");
        for sub in archive.paths().iter().filter(|p| p.starts_with(&folder)) {
            if let Some(&v) = archive.versions(sub).last() {
                copy_to(&archive, sub, v, &copy_path(&copies, version, sub))?;
            }
        }
    }
    let mut report = read_report(&copy, options)?;
    report.path = original;
    report.from_archive = Some(version);
    Ok(report)
}

/// Copies `version` of `original` to `to`, as the readers' copies are kept.
fn copy_to(
    archive: &Archive,
    original: &Path,
    version: u32,
    to: &Path,
) -> Result<PathBuf, TranscriptError> {
    let found = archive
        .catalog
        .sources
        .get(std::os::unix::ffi::OsStrExt::as_bytes(original.as_os_str()))
        .and_then(|vs| vs.iter().find(|v| v.number == version));
    let Some(v) = found else {
        return Err(TranscriptError::NotFound {
            path: original.to_path_buf(),
        });
    };
    super::copies::keep_copy(archive, original, v, to)
        .map_err(|e| TranscriptError::io("copy", original, std::io::Error::other(e)))
}

/// The archived sources under `paths` (every source when empty) whose original is gone, with
/// their cache copies written (the latest version of each): what a reader that takes files (search, export) adds to the
/// originals. Sources whose original exists are left to it. Problems copying are returned as
/// messages.
pub fn gone_copies(
    paths: &[PathBuf],
    archive_dir: &Path,
    index_dir: Option<&Path>,
) -> Result<(Vec<super::ArchivedCopy>, Vec<String>), super::ArchiveError> {
    let archive = Archive::open(archive_dir)?;
    let Some(copies) = copies_dir(index_dir) else {
        return Ok((
            Vec::new(),
            vec!["no cache directory for the archive's copies".into()],
        ));
    };
    let scope: Vec<PathBuf> = paths.iter().map(|p| absolute(p)).collect();
    let sources = archived_sources(&archive, &scope, &copies);
    // The latest version of each (copies come by original, then version).
    let mut gone: Vec<super::ArchivedCopy> = Vec::new();
    for c in sources.copies.into_iter().filter(|c| !c.original_exists) {
        match gone.last_mut() {
            Some(last) if last.original == c.original => *last = c,
            _ => gone.push(c),
        }
    }
    Ok((gone, sources.problems))
}
