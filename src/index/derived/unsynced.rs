//! Writing an index without syncs, behind a durable marker that says when the file may be torn.
//!
//! redb's commit protocol spends most of a small write in `fdatasync`s. A write session may
//! skip them ([`Syncs`]) and sync the file once at its end. The page cache sees every write in
//! order, so within one boot of the machine every process reads exactly what redb wrote; only
//! a power cut (or a write-back that failed) can leave a torn file, and the marker
//! `<index>.unsynced` is there to say so:
//!
//! * It is created (never over another one) and made durable, by a sync of its directory,
//!   before the session's first write, which comes after redb took the file's writer lock. It
//!   holds the id of this boot.
//! * The session removes it after the one sync that ends it. If that sync fails, the marker
//!   is emptied instead, so that it names no boot.
//! * A marker that names this boot is a session running now or one whose process died: the
//!   file is what redb wrote, and a read-only open may use its last commit. Any other marker
//!   (an earlier boot, no boot id, a failed sync) means the file may be torn: nothing reads it.
//! * The next process to hold the file for writing rebuilds it whatever the marker says (it
//!   may also be a file that made redb abort mid-session).
//!
//! docs/DECISIONS.md, "One rule for writes without syncs", says why this rule.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once, OnceLock};

use crate::log::Faults;

/// Which syncs of a write session are skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Syncs {
    /// None: every commit is durable.
    Kept,
    /// Those of a build from scratch: only if the file is still empty at the first write.
    SkippedForNewFile,
    /// Every one of the session, whatever the file holds.
    SkippedForSession,
}

/// The marker's path beside `index`.
fn marker(index: &Path) -> PathBuf {
    let mut name = index.as_os_str().to_owned();
    name.push(".unsynced");
    PathBuf::from(name)
}

/// The id of this boot of the machine, if the system says (Linux); read once per process.
fn boot_id() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = id.trim();
        (!id.is_empty()).then(|| id.to_owned())
    })
    .as_deref()
}

/// Whether a marker is beside `index` (a session running now, or one that did not finish).
pub(crate) fn left_behind(index: &Path) -> bool {
    marker(index).exists()
}

/// Whether a marker beside `index` says the file may be torn: it names no boot, or another
/// one. No marker, or one of this boot, is not.
pub(crate) fn torn(index: &Path) -> bool {
    match std::fs::read_to_string(marker(index)) {
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        Ok(boot) => boot_id().is_none_or(|id| boot.trim() != id),
    }
}

/// Removes the marker beside `index`, once the file it guarded is gone.
pub(crate) fn remove_marker(index: &Path) {
    let _ = std::fs::remove_file(marker(index));
}

/// One write session's skipped syncs. See the module docs.
#[derive(Debug)]
pub(crate) struct Unsynced {
    syncs: Syncs,
    /// Whether syncs are being skipped: from the marker's creation to `finish` or `abandon`.
    deferring: AtomicBool,
    /// Runs the first write's check: create the marker, or keep every sync.
    begun: Once,
    /// The index file (a second handle), for the one sync that ends the session.
    file: File,
    marker: PathBuf,
    /// The mode new markers get.
    mode: u32,
}

impl Unsynced {
    /// A session that will skip syncs once [`Unsynced::begin`] has made its marker durable.
    /// `None` (every sync kept) if `syncs` is [`Syncs::Kept`] or the file cannot be reopened
    /// for the final sync.
    pub(crate) fn new(index: &Path, file: &File, syncs: Syncs, mode: u32) -> Option<Arc<Unsynced>> {
        if syncs == Syncs::Kept {
            return None;
        }
        Some(Arc::new(Unsynced {
            syncs,
            deferring: AtomicBool::new(false),
            begun: Once::new(),
            file: file.try_clone().ok()?,
            marker: marker(index),
            mode,
        }))
    }

    /// Called before every write (only the first one acts): creates the durable marker and
    /// starts skipping syncs, unless a marker is there already (left behind: not this
    /// session's), the session skips syncs only for a new file and this one is not empty any
    /// more (another process wrote it first), or the marker cannot be made durable.
    pub(crate) fn begin(&self) {
        self.begun.call_once(|| {
            if self.syncs == Syncs::SkippedForNewFile
                && !self.file.metadata().is_ok_and(|m| m.len() == 0)
            {
                return;
            }
            let created = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(self.mode)
                .open(&self.marker);
            // Left behind (or unwritable): keep every sync; the holder rebuilds the file.
            let Ok(mut created) = created else {
                return;
            };
            let made = created
                .write_all(boot_id().unwrap_or_default().as_bytes())
                .and_then(|()| sync_parent(&self.marker));
            match made {
                Ok(()) => self.deferring.store(true, Ordering::SeqCst),
                Err(e) => {
                    tracing::debug!(marker = %self.marker.display(), error = %e, "cannot make the unsynced-write marker durable; writing with synced commits");
                    let _ = std::fs::remove_file(&self.marker);
                }
            }
        });
    }

    /// Whether syncs are being skipped now (the marker is this session's).
    pub(crate) fn is_deferring(&self) -> bool {
        self.deferring.load(Ordering::SeqCst)
    }

    /// Ends the session: later syncs go to the disk, this one syncs everything written so
    /// far, and the marker goes. If the sync fails, the marker is emptied (it names no boot,
    /// so nothing reads the file and the next writer rebuilds it) and the error returned.
    /// Idempotent.
    pub(crate) fn finish(&self, faults: Option<&Arc<Faults>>) -> std::io::Result<()> {
        if !self.deferring.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let synced = match faults {
            Some(faults) => faults.index_sync(),
            None => Ok(()),
        }
        .and_then(|()| self.file.sync_data());
        if let Err(e) = synced {
            // Truncating allocates nothing: it works on a full disk too.
            if let Err(again) = OpenOptions::new()
                .write(true)
                .open(&self.marker)
                .and_then(|m| m.set_len(0))
            {
                tracing::warn!(marker = %self.marker.display(), error = %again, "cannot mark an index whose final sync failed");
            }
            return Err(e);
        }
        match std::fs::remove_file(&self.marker) {
            // Gone with its file (a handle leaked after a panic unlinks both).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Stops skipping syncs without syncing or removing the marker: for a file about to be
    /// unlinked, whose marker goes with it.
    pub(crate) fn abandon(&self) {
        self.begun.call_once(|| {});
        self.deferring.store(false, Ordering::SeqCst);
    }
}

/// Makes the names in `path`'s directory durable (`path` itself and its siblings).
pub(crate) fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory and an index path in it.
    fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join(name);
        (dir, index)
    }

    /// Only a file still empty at the first write is built unsynced for a new file; a file
    /// someone else wrote first keeps every sync and gets no marker.
    #[test]
    fn an_unsynced_build_begins_only_on_an_empty_file() {
        let (_dir, index) = scratch("events.index.redb");
        let marker = marker(&index);
        let new = |file: &File| Unsynced::new(&index, file, Syncs::SkippedForNewFile, 0o644);

        let file = File::create(&index).unwrap();
        let build = new(&file).unwrap();
        assert!(
            !build.is_deferring() && !marker.exists(),
            "nothing before a write"
        );
        build.begin();
        assert!(build.is_deferring() && marker.exists());
        build.finish(None).unwrap();
        assert!(!build.is_deferring() && !marker.exists());
        build.begin();
        assert!(!build.is_deferring(), "begins once");

        std::fs::write(&index, b"written by another process").unwrap();
        let build = new(&file).unwrap();
        build.begin();
        assert!(!build.is_deferring() && !marker.exists());

        std::fs::write(&index, b"").unwrap();
        let build = new(&file).unwrap();
        build.abandon();
        build.begin();
        assert!(
            !build.is_deferring() && !marker.exists(),
            "abandoned before it began"
        );
    }

    /// A session's marker names this boot while it runs: not torn. A marker left behind is
    /// never taken over, and one that names no boot is torn.
    #[test]
    fn a_marker_of_this_boot_is_readable_and_one_left_behind_is_never_taken_over() {
        let (_dir, index) = scratch("t.redb");
        let file = File::create(&index).unwrap();
        std::fs::write(&index, b"an index").unwrap();
        let session = Unsynced::new(&index, &file, Syncs::SkippedForSession, 0o600).unwrap();
        session.begin();
        assert!(session.is_deferring() && left_behind(&index));
        assert_eq!(torn(&index), boot_id().is_none());
        session.finish(None).unwrap();
        assert!(!left_behind(&index) && !torn(&index));

        std::fs::write(marker(&index), b"").unwrap();
        assert!(torn(&index));
        let late = Unsynced::new(&index, &file, Syncs::SkippedForSession, 0o600).unwrap();
        late.begin();
        assert!(
            !late.is_deferring(),
            "a marker left behind is not this session's"
        );
        assert_eq!(std::fs::read(marker(&index)).unwrap(), b"");
        remove_marker(&index);
        assert!(!left_behind(&index));
    }

    /// The one sync that ends a session fails: the marker stays, emptied, so that it names no
    /// boot and the file counts as torn for every process.
    #[test]
    fn a_failed_final_sync_leaves_a_marker_that_names_no_boot() {
        use crate::log::{FaultKind, FaultPlan};
        let (_dir, index) = scratch("t.redb");
        let file = File::create(&index).unwrap();
        let session = Unsynced::new(&index, &file, Syncs::SkippedForNewFile, 0o600).unwrap();
        session.begin();
        assert!(session.is_deferring());
        let faults = Arc::new(Faults::new(FaultPlan {
            index_sync_fails: true,
            kind: FaultKind::Io,
            ..FaultPlan::default()
        }));
        assert!(session.finish(Some(&faults)).is_err());
        assert_eq!(std::fs::read(marker(&index)).unwrap(), b"");
        assert!(left_behind(&index) && torn(&index));
    }
}
