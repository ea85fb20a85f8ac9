//! The one writer of an archive: takes the lock, heals what an interrupted run left, appends
//! frames and then the records that name them.
//!
//! The order makes a cut anywhere harmless: a frame is written and synced before any record
//! names it, and a record is one checksummed write. A run killed mid-way leaves at most a torn
//! record at the end of the index and frames no record names at the end of the frames file;
//! the next writer removes both (nothing valid refers to them) before it appends. Nothing a
//! valid record names is ever moved, rewritten or truncated.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::catalog::Catalog;
use super::error::ArchiveError;
use super::files::{FRAMES_HEADER, INDEX_HEADER, Paths, check_header, open_private};
use super::record::{self, Record};
use crate::log::Faults;

/// How long a busy lock is waited for (a hook and a timer may start together).
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// Frame bytes written before their records are committed (one sync of each file).
const COMMIT_BYTES: u64 = 64 << 20;

/// The archive's writer, holding its lock.
pub(crate) struct Writer {
    paths: Paths,
    _lock: File,
    frames: File,
    index: File,
    /// Where the next frame goes.
    frames_len: u64,
    /// Where the next record goes.
    index_len: u64,
    /// What the index held when opened.
    pub(crate) catalog: Catalog,
    /// Frame bytes written since the last commit.
    unsynced: u64,
    /// Records waiting for their frames' sync.
    pending: Vec<u8>,
    /// What healing removed: a torn index end and unnamed frames.
    pub(crate) healed_bytes: u64,
    faults: Option<Arc<Faults>>,
}

impl Writer {
    /// Opens (creating) the archive in `dir`, waits for its lock, reads its index and heals
    /// an interrupted run's leftovers.
    pub(crate) fn open(dir: &Path, faults: Option<Arc<Faults>>) -> Result<Writer, ArchiveError> {
        let paths = Paths::new(dir);
        crate::transcript::ensure_private_dir(dir)
            .map_err(|e| ArchiveError::io("create", dir, e))?;
        let lock = open_private(&paths.lock)?;
        take_lock(&lock, dir)?;
        let frames = open_private(&paths.frames)?;
        let index = open_private(&paths.index)?;
        let mut writer = Writer {
            frames_len: len_of(&frames, &paths.frames)?,
            index_len: len_of(&index, &paths.index)?,
            paths,
            _lock: lock,
            frames,
            index,
            catalog: Catalog::default(),
            unsynced: 0,
            pending: Vec::new(),
            healed_bytes: 0,
            faults,
        };
        writer.ensure_headers()?;
        writer.load_and_heal()?;
        Ok(writer)
    }

    fn ensure_headers(&mut self) -> Result<(), ArchiveError> {
        let mut created = false;
        for which in [Which::Frames, Which::Index] {
            let (file, len, header, path) = match which {
                Which::Frames => (
                    &self.frames,
                    self.frames_len,
                    FRAMES_HEADER,
                    &self.paths.frames,
                ),
                Which::Index => (&self.index, self.index_len, INDEX_HEADER, &self.paths.index),
            };
            if !check_header(file, len, header, path)? {
                self.write_at(which, 0, header.as_slice())?;
                self.sync(which)?;
                created = true;
                match which {
                    Which::Frames => self.frames_len = 8,
                    Which::Index => self.index_len = 8,
                }
            }
        }
        if created {
            // The new files' names must survive a crash too.
            File::open(&self.paths.dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| ArchiveError::io("sync", &self.paths.dir, e))?;
        }
        Ok(())
    }

    fn load_and_heal(&mut self) -> Result<(), ArchiveError> {
        let mut bytes = vec![0u8; usize::try_from(self.index_len).unwrap_or(usize::MAX)];
        crate::log::read_exact_at(&self.index, &mut bytes, 0)
            .map_err(|e| ArchiveError::io("read", &self.paths.index, e))?;
        self.catalog =
            Catalog::from_index_bytes(&bytes).ok_or_else(|| ArchiveError::NotAnArchive {
                path: self.paths.index.clone(),
            })?;
        if let Some(torn) = self.catalog.torn {
            self.truncate(Which::Index, torn.offset)?;
            self.healed_bytes += torn.len;
            self.index_len = torn.offset;
            self.catalog.torn = None;
        }
        // Frames past the last one a record names were never committed; with damage in the
        // index they might be named by a damaged record, so they are kept for --verify.
        let named_end = self.catalog.frames_end().max(FRAMES_HEADER.len() as u64);
        if self.frames_len > named_end && self.catalog.damaged.is_empty() {
            self.truncate(Which::Frames, named_end)?;
            self.healed_bytes += self.frames_len - named_end;
            self.frames_len = named_end;
        }
        Ok(())
    }

    /// Appends a frame; its `record` (whose frame offset and length this sets) is committed
    /// with the next [`Writer::commit`].
    pub(crate) fn append(&mut self, frame: &[u8], mut record: Record) -> Result<(), ArchiveError> {
        record.frame_offset = self.frames_len;
        record.frame_len = frame.len() as u64;
        self.write_at(Which::Frames, self.frames_len, frame)?;
        self.frames_len += frame.len() as u64;
        self.unsynced += frame.len() as u64;
        self.pending.extend_from_slice(&record::encode(&record));
        if self.unsynced >= COMMIT_BYTES {
            self.commit()?;
        }
        Ok(())
    }

    /// Makes the frames written so far durable, then writes and syncs their records.
    pub(crate) fn commit(&mut self) -> Result<(), ArchiveError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.sync(Which::Frames)?;
        let pending = std::mem::take(&mut self.pending);
        self.write_at(Which::Index, self.index_len, &pending)?;
        self.index_len += pending.len() as u64;
        self.sync(Which::Index)?;
        self.unsynced = 0;
        Ok(())
    }

    fn file(&self, which: Which) -> (&File, &Path) {
        match which {
            Which::Frames => (&self.frames, &self.paths.frames),
            Which::Index => (&self.index, &self.paths.index),
        }
    }

    fn write_at(&self, which: Which, offset: u64, bytes: &[u8]) -> Result<(), ArchiveError> {
        let (file, path) = self.file(which);
        let (bytes, injected) = match self.faults.as_ref().map(|f| f.log_write(bytes.len())) {
            Some(Err((fits, e))) => (bytes.get(..fits).unwrap_or_default(), Some(e)),
            _ => (bytes, None),
        };
        file.write_all_at(bytes, offset)
            .map_err(|e| ArchiveError::io("write", path, e))?;
        match injected {
            Some(e) => Err(ArchiveError::io("write", path, e)),
            None => Ok(()),
        }
    }

    fn sync(&self, which: Which) -> Result<(), ArchiveError> {
        let (file, path) = self.file(which);
        if let Some(f) = &self.faults {
            f.log_sync()
                .map_err(|e| ArchiveError::io("sync", path, e))?;
        }
        file.sync_data()
            .map_err(|e| ArchiveError::io("sync", path, e))
    }

    fn truncate(&self, which: Which, len: u64) -> Result<(), ArchiveError> {
        let (file, path) = self.file(which);
        if let Some(f) = &self.faults {
            f.log_truncate()
                .map_err(|e| ArchiveError::io("truncate", path, e))?;
        }
        file.set_len(len)
            .and_then(|()| file.sync_data())
            .map_err(|e| ArchiveError::io("truncate", path, e))
    }
}

#[derive(Clone, Copy)]
enum Which {
    Frames,
    Index,
}

fn len_of(file: &File, path: &Path) -> Result<u64, ArchiveError> {
    file.metadata()
        .map(|m| m.len())
        .map_err(|e| ArchiveError::io("stat", path, e))
}

fn take_lock(lock: &File, dir: &Path) -> Result<(), ArchiveError> {
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ArchiveError::Locked {
                    dir: dir.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(ArchiveError::io("lock", dir, e)),
        }
    }
}
