//! Reading the archive: the sources it holds and a version's bytes, frame by frame, each
//! checked against its checksums and its record. A damaged frame is skipped and named, never
//! returned as bytes.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::catalog::{Catalog, Version};
use super::error::ArchiveError;
use super::files::{FRAMES_HEADER, Paths, check_header, default_archive_dir};
use super::frame::{self, FrameDamage};
use super::record::Record;

/// An archive opened for reading. Reading takes no lock: a run appending at the same time
/// adds records this reader does not see, and never changes what it does see.
#[derive(Debug)]
pub struct Archive {
    pub(crate) paths: Paths,
    pub(crate) catalog: Catalog,
    frames: Option<File>,
    /// The frames file's length when opened.
    pub(crate) frames_len: u64,
}

/// A stretch of a version that cannot be read back, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ArchiveDamage {
    /// The original path.
    pub path: PathBuf,
    /// The version.
    pub version: u32,
    /// The source bytes `start..end` it should hold.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Where its frame starts in the frames file (`null` for bytes no record holds).
    pub frame_offset: Option<u64>,
    /// What is wrong.
    pub what: String,
}

/// A version's bytes as far as they can be read.
#[derive(Debug)]
pub struct ArchivedBytes {
    /// The original path.
    pub path: PathBuf,
    /// The version.
    pub version: u32,
    /// The bytes of every good frame, in source order: whole lines only.
    pub bytes: Vec<u8>,
    /// What could not be read: empty when `bytes` is the version whole.
    pub damage: Vec<ArchiveDamage>,
}

impl Archive {
    /// Opens the archive in `dir`; one that does not exist yet is empty.
    pub fn open(dir: &Path) -> Result<Archive, ArchiveError> {
        let paths = Paths::new(dir);
        let catalog = Catalog::load(dir)?;
        let (frames, frames_len) = match File::open(&paths.frames) {
            Ok(f) => {
                let len = f
                    .metadata()
                    .map_err(|e| ArchiveError::io("stat", &paths.frames, e))?
                    .len();
                check_header(&f, len, FRAMES_HEADER, &paths.frames)?;
                (Some(f), len)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, 0),
            Err(e) => return Err(ArchiveError::io("open", &paths.frames, e)),
        };
        Ok(Archive {
            paths,
            catalog,
            frames,
            frames_len,
        })
    }

    /// Opens the archive in the default place ([`default_archive_dir`]).
    pub fn open_default() -> Result<Archive, ArchiveError> {
        Archive::open(&default_archive_dir()?)
    }

    /// The archive's directory.
    pub fn dir(&self) -> &Path {
        &self.paths.dir
    }

    /// The original paths of every source, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.catalog.sources.keys().map(|p| path_of(p)).collect()
    }

    /// Version numbers of a source, ascending (empty when it is not archived).
    pub fn versions(&self, path: &Path) -> Vec<u32> {
        self.catalog
            .sources
            .get(path.as_os_str().as_bytes())
            .map(|vs| vs.iter().map(|v| v.number).collect())
            .unwrap_or_default()
    }

    /// The session id, project and agent of a source's latest version.
    pub fn names(&self, path: &Path) -> Option<(&str, &str, &str)> {
        let (_, r) = self.catalog.latest(path.as_os_str().as_bytes())?;
        Some((&r.session, &r.project, &r.agent))
    }

    /// The archived length of a source's latest version.
    pub fn archived_len(&self, path: &Path) -> Option<u64> {
        self.catalog
            .latest(path.as_os_str().as_bytes())
            .map(|(_, r)| r.end)
    }

    /// Reads version `version` of `path` (the latest when `None`): every good frame's bytes,
    /// and what could not be read.
    pub fn read(&self, path: &Path, version: Option<u32>) -> Result<ArchivedBytes, ArchiveError> {
        Ok(self.read_version(path, self.version(path, version)?))
    }

    /// Version `version` of `path` (the latest when `None`) as the catalog holds it.
    pub(crate) fn version(
        &self,
        path: &Path,
        version: Option<u32>,
    ) -> Result<&Version, ArchiveError> {
        let versions = self
            .catalog
            .sources
            .get(path.as_os_str().as_bytes())
            .ok_or_else(|| ArchiveError::NoMatch {
                what: path.display().to_string(),
            })?;
        let found = match version {
            None => versions.last(),
            Some(n) => versions.iter().find(|v| v.number == n),
        };
        found.ok_or_else(|| ArchiveError::NoMatch {
            what: format!("version {} of {}", version.unwrap_or(0), path.display()),
        })
    }

    /// The records of a version that the catalog holds, in source order.
    fn records<'a>(&'a self, version: &'a Version) -> impl Iterator<Item = &'a Record> + 'a {
        version
            .records
            .iter()
            .filter_map(|&i| self.catalog.record(i))
    }

    /// Hands a whole version to `sink`, frame by frame in order, while two threads decompress
    /// the frames after it: for a reader that writes the bytes out. The bytes handed on;
    /// `Ok(None)` when a record is missing or a frame is damaged (nothing after it is handed
    /// on), for [`Archive::read_version`] to name the damage; `Err` is the sink's.
    pub(crate) fn stream_version(
        &self,
        version: &Version,
        sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<Option<u64>> {
        use std::collections::BTreeMap;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::{Mutex, PoisonError, mpsc};

        let records: Vec<&Record> = self.records(version).collect();
        let mut expected = 0;
        for r in &records {
            if r.start != expected {
                return Ok(None);
            }
            expected = r.end;
        }
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        // Buffers the sink is done with, reused: a frame is up to 4 MiB, each a fresh mapping
        // (and its page faults) otherwise.
        let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
        let take = || spare.lock().unwrap_or_else(PoisonError::into_inner).pop();
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel::<(usize, Option<Vec<u8>>)>();
            for _ in 0..2 {
                let tx = tx.clone();
                let (records, next, stop, take) = (&records, &next, &stop, &take);
                scope.spawn(move || {
                    let mut scratch = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(r) = records.get(i) else { break };
                        let mut out = take().unwrap_or_default();
                        out.clear();
                        let ok = self.frame_into(r, &mut scratch, &mut out).is_ok();
                        if tx.send((i, ok.then_some(out))).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut pending: BTreeMap<usize, Option<Vec<u8>>> = BTreeMap::new();
            let mut want = 0;
            let mut total = 0u64;
            let mut handed = || -> std::io::Result<Option<u64>> {
                for (i, bytes) in &rx {
                    pending.insert(i, bytes);
                    while let Some(bytes) = pending.remove(&want) {
                        let Some(bytes) = bytes else { return Ok(None) };
                        sink(&bytes)?;
                        total += bytes.len() as u64;
                        spare
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(bytes);
                        want += 1;
                    }
                }
                Ok((want == records.len()).then_some(total))
            };
            let result = handed();
            // The decoders stop at their next frame; the scope waits for them.
            stop.store(true, Ordering::Relaxed);
            drop(rx);
            result
        })
    }

    pub(crate) fn read_version(&self, path: &Path, version: &Version) -> ArchivedBytes {
        let mut out = ArchivedBytes {
            path: path.to_path_buf(),
            version: version.number,
            bytes: Vec::new(),
            damage: Vec::new(),
        };
        // Reserved once for the size the records say: pages are touched only as frames are
        // decompressed into them, and a reservation refused leaves the buffer growing as needed.
        let total = self.records(version).map(|r| r.end).max().unwrap_or(0);
        let _ = out
            .bytes
            .try_reserve_exact(usize::try_from(total).unwrap_or(0));
        let mut scratch = Vec::new();
        let mut expected = 0u64;
        for r in self.records(version) {
            let damage = |start, end, frame_offset, what: String| ArchiveDamage {
                path: path.to_path_buf(),
                version: version.number,
                start,
                end,
                frame_offset,
                what,
            };
            if r.start < expected {
                out.damage.push(damage(
                    r.start,
                    r.end,
                    Some(r.frame_offset),
                    "a record overlaps bytes another record holds".into(),
                ));
                continue;
            }
            if r.start > expected {
                out.damage.push(damage(
                    expected,
                    r.start,
                    None,
                    "no valid record holds these bytes (a damaged index record)".into(),
                ));
            }
            match self.frame_into(r, &mut scratch, &mut out.bytes) {
                Ok(()) => {}
                Err(e) => {
                    out.damage
                        .push(damage(r.start, r.end, Some(r.frame_offset), e.to_string()));
                }
            }
            expected = r.end;
        }
        out
    }

    /// A record's frame, read into `scratch`, checked against the record and decoded onto
    /// the end of `out`.
    pub(crate) fn frame_into(
        &self,
        r: &Record,
        scratch: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<(), FrameDamage> {
        use std::os::unix::fs::FileExt;
        let frames = self.frames.as_ref().ok_or(FrameDamage::Missing)?;
        if r.frame_offset < FRAMES_HEADER.len() as u64
            || r.frame_offset.saturating_add(r.frame_len) > self.frames_len
            || r.frame_len > u64::from(frame::MAX_FRAME_RAW) * 2
        {
            return Err(FrameDamage::Missing);
        }
        let len = usize::try_from(r.frame_len).map_err(|_| FrameDamage::Missing)?;
        scratch.clear();
        scratch.resize(len, 0);
        frames
            .read_exact_at(scratch, r.frame_offset)
            .map_err(|_| FrameDamage::Missing)?;
        let header = frame::FrameHeader::parse(scratch)?;
        if header.frame_len() != r.frame_len
            || u64::from(header.raw_len) != r.end.saturating_sub(r.start)
            || header.raw_crc != r.raw.crc
        {
            return Err(FrameDamage::Mismatch);
        }
        frame::decode_into(scratch, out)
    }
}

/// A path from its stored bytes.
pub(crate) fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}
