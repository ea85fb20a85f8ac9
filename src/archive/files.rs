//! The archive's directory and its three files: `frames` (the compressed lines), `index` (the
//! records that say what each frame holds) and `lock` (one writer at a time). Where it lives:
//! the per-user data directory, never a cache, because nothing can rebuild it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::ArchiveError;

/// The environment variable naming the data directory.
pub const DATA_DIR_ENV: &str = "AGENTLOG_DATA_DIR";

/// The frames file's first bytes: its format and version.
pub(crate) const FRAMES_HEADER: [u8; 8] = *b"ALARCF01";
/// The index file's first bytes.
pub(crate) const INDEX_HEADER: [u8; 8] = *b"ALARCI01";

/// The per-user data directory: `$AGENTLOG_DATA_DIR`, else `$XDG_DATA_HOME/agentlog`, else
/// `~/.local/share/agentlog`. Empty values are ignored, and so is a relative `$XDG_DATA_HOME`
/// (the XDG rule). `None` when none of these can be found.
pub fn data_dir() -> Option<PathBuf> {
    crate::transcript::per_user_dir(DATA_DIR_ENV, "XDG_DATA_HOME", &[".local", "share"])
}

/// The archive's directory by default: `<data dir>/archive`.
pub fn default_archive_dir() -> Result<PathBuf, ArchiveError> {
    data_dir()
        .map(|d| d.join("archive"))
        .ok_or(ArchiveError::NoDataDir)
}

/// The paths of an archive's files.
#[derive(Clone, Debug)]
pub(crate) struct Paths {
    pub(crate) dir: PathBuf,
    pub(crate) frames: PathBuf,
    pub(crate) index: PathBuf,
    pub(crate) lock: PathBuf,
}

impl Paths {
    pub(crate) fn new(dir: &Path) -> Paths {
        Paths {
            dir: dir.to_path_buf(),
            frames: dir.join("frames"),
            index: dir.join("index"),
            lock: dir.join("lock"),
        }
    }
}

/// Opens (creating with mode 0600) one of the archive's files for reading and writing.
pub(crate) fn open_private(path: &Path) -> Result<File, ArchiveError> {
    crate::transcript::open_private_file(path).map_err(|e| ArchiveError::io("open", path, e))
}

/// Checks a file's header: `Ok(true)` when it is there, `Ok(false)` when the file is shorter
/// than the header and holds a prefix of it (a file whose creation was cut short: the writer
/// writes the header again), an error for anything else.
pub(crate) fn check_header(
    file: &File,
    len: u64,
    header: [u8; 8],
    path: &Path,
) -> Result<bool, ArchiveError> {
    let mut got = [0u8; 8];
    let n = usize::try_from(len.min(8)).unwrap_or(8);
    file.read_exact_at(&mut got[..n], 0)
        .map_err(|e| ArchiveError::io("read", path, e))?;
    if got[..n] != header[..n] {
        return Err(ArchiveError::NotAnArchive {
            path: path.to_path_buf(),
        });
    }
    Ok(n == 8)
}

/// Reads a whole file, `None` when it does not exist.
pub(crate) fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, ArchiveError> {
    match File::open(path) {
        Ok(mut f) => {
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)
                .map_err(|e| ArchiveError::io("read", path, e))?;
            Ok(Some(bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ArchiveError::io("open", path, e)),
    }
}
