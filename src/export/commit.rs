//! The commit protocol (`docs/EXPORT.md`, "Commit protocol"):
//!
//! 1. new parts are written under temporary names and fsynced;
//! 2. the source's state, listing every part it keeps and the parts it retires, is written to a
//!    temporary name, fsynced, renamed over the old state, and the directory fsynced: the
//!    commit point;
//! 3. the retired parts are deleted, then the new parts renamed to their final names in order,
//!    each directory fsynced.
//!
//! Step 3 is replayed from the state by the next export after a crash ([`apply`]); files of a
//! source that its state does not list are deleted first ([`sweep`]). Readers only ever see
//! final names, so at every moment each row is visible at most once, and never rows of two
//! versions of a log at once: retired parts go before new ones appear.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::error::ExportError;
use super::layout::{Found, Table, part_name, partition_dir, temp_name};
use super::source::SourceKind;
use super::state::{Part, SourceState};

/// Counts the file-system steps of an export; a crash test can stop it at one of them, as a
/// kill there would: by aborting the process, or (in-process tests) by failing with
/// [`ExportError::Interrupted`] and doing nothing more.
#[derive(Debug, Default)]
pub struct Steps {
    done: u64,
    abort_at: Option<u64>,
    fail_at: Option<u64>,
}

impl Steps {
    /// Steps that abort the process at step `abort_at`, or fail at step `fail_at` (1-based).
    pub fn new(abort_at: Option<u64>, fail_at: Option<u64>) -> Steps {
        Steps {
            done: 0,
            abort_at,
            fail_at,
        }
    }

    /// Steps taken so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Counts one step (just taken).
    pub fn step(&mut self) -> Result<(), ExportError> {
        self.done += 1;
        if self.abort_at == Some(self.done) {
            // The crash-test hook: leave everything as a SIGKILL here would.
            std::process::abort();
        }
        if self.fail_at == Some(self.done) {
            return Err(ExportError::Interrupted { step: self.done });
        }
        Ok(())
    }
}

/// Where one source's files go.
#[derive(Clone, Debug)]
pub struct Place<'a> {
    /// The dataset directory.
    pub out: &'a Path,
    /// The host name in file names.
    pub host: &'a str,
    /// The source's key.
    pub key: &'a str,
    /// The source's kind.
    pub kind: SourceKind,
}

impl Place<'_> {
    /// The directory of a part.
    pub fn dir(&self, table: Table, date: Option<&str>) -> PathBuf {
        partition_dir(self.out, table, self.kind, date)
    }

    /// The final path of a part.
    pub fn final_path(&self, part: &Part) -> PathBuf {
        self.dir(part.table, part.date.as_deref())
            .join(part_name(self.host, self.key, part.serial))
    }

    /// The temporary path of a part.
    pub fn temp_path(&self, part: &Part) -> PathBuf {
        self.dir(part.table, part.date.as_deref())
            .join(temp_name(&part_name(self.host, self.key, part.serial)))
    }
}

/// fsyncs a directory, so the names created or removed in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), ExportError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| ExportError::io("fsync directory", dir, e))
}

/// Creates a partition directory (and its parents), making each new name durable.
pub fn create_dir(dir: &Path) -> Result<(), ExportError> {
    if dir.is_dir() {
        return Ok(());
    }
    // A relative path's first component has the empty path as its parent: nothing to make.
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir(parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(ExportError::io("create directory", dir, e)),
    }
    match dir.parent() {
        Some(parent) if parent.as_os_str().is_empty() => sync_dir(Path::new(".")),
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

/// Writes the state file of `key` in `state_dir`: temporary name, fsync, rename, directory
/// fsync. Once this returns, the state is committed.
pub fn write_state(
    state_dir: &Path,
    key: &str,
    state: &SourceState,
    steps: &mut Steps,
) -> Result<(), ExportError> {
    let path = state_dir.join(format!("{key}.state"));
    let temp = state_dir.join(format!(".{key}.state.tmp"));
    let mut file = File::create(&temp).map_err(|e| ExportError::io("create", &temp, e))?;
    file.write_all(&state.encode())
        .and_then(|()| file.sync_all())
        .map_err(|e| ExportError::io("write", &temp, e))?;
    steps.step()?;
    std::fs::rename(&temp, &path).map_err(|e| ExportError::io("rename", &temp, e))?;
    steps.step()?;
    sync_dir(state_dir)
}

/// What [`apply`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// Every listed part is in place.
    Complete,
    /// A listed part is gone under both its names: the dataset lost rows of this source.
    Missing(PathBuf),
}

/// Brings the files in line with a committed state: deletes its retired parts, then renames
/// its parts still under temporary names, in order. Safe to repeat.
pub fn apply(
    place: &Place<'_>,
    state: &SourceState,
    steps: &mut Steps,
) -> Result<Applied, ExportError> {
    let mut dirty = BTreeSet::new();
    for part in state.retired.iter().rev() {
        for path in [place.final_path(part), place.temp_path(part)] {
            if remove_file(&path)? {
                steps.step()?;
                dirty.insert(place.dir(part.table, part.date.as_deref()));
            }
        }
    }
    sync_dirs(&mut dirty)?;
    for part in &state.parts {
        let final_path = place.final_path(part);
        let temp = place.temp_path(part);
        if final_path.exists() {
            if remove_file(&temp)? {
                steps.step()?;
            }
            continue;
        }
        match std::fs::rename(&temp, &final_path) {
            Ok(()) => {
                steps.step()?;
                dirty.insert(place.dir(part.table, part.date.as_deref()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Applied::Missing(final_path));
            }
            Err(e) => return Err(ExportError::io("rename", &temp, e)),
        }
    }
    // One fsync per directory: the state already names every part, so renames that a power
    // loss undoes are simply made again by the next export.
    sync_dirs(&mut dirty)?;
    Ok(Applied::Complete)
}

/// Deletes the files of a source that `state` does not list (all of them without a state):
/// leftovers of a crashed export, or parts of a state that was lost.
pub fn sweep(
    place: &Place<'_>,
    found: &[Found],
    state: Option<&SourceState>,
    steps: &mut Steps,
) -> Result<usize, ExportError> {
    let listed: BTreeSet<PathBuf> = state
        .map(|s| {
            s.parts
                .iter()
                .flat_map(|p| [place.final_path(p), place.temp_path(p)])
                .collect()
        })
        .unwrap_or_default();
    let mut dirty = BTreeSet::new();
    let mut removed = 0;
    for file in found.iter().filter(|f| f.key == place.key) {
        if listed.contains(&file.path) {
            continue;
        }
        if remove_file(&file.path)? {
            steps.step()?;
            removed += 1;
            if let Some(dir) = file.path.parent() {
                dirty.insert(dir.to_path_buf());
            }
        }
    }
    sync_dirs(&mut dirty)?;
    Ok(removed)
}

/// Removes a file; `false` if it was not there.
fn remove_file(path: &Path) -> Result<bool, ExportError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ExportError::io("remove", path, e)),
    }
}

fn sync_dirs(dirs: &mut BTreeSet<PathBuf>) -> Result<(), ExportError> {
    // Emptied partition directories stay: removing one could race with another host creating
    // a part in it.
    for dir in std::mem::take(dirs) {
        sync_dir(&dir)?;
    }
    Ok(())
}
