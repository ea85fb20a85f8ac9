//! Opening a log file safely: only regular files, never a FIFO we would block on.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use super::LogError;

/// Checks that `path` names a regular file (following symlinks) before anything opens it.
pub fn check_regular(path: &Path) -> Result<std::fs::Metadata, LogError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(LogError::NotFound {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(LogError::io("inspect", path, e)),
    };
    let kind = meta.file_type();
    let not_a_file = |kind| LogError::NotAFile {
        path: path.to_path_buf(),
        kind,
    };
    if kind.is_file() {
        Ok(meta)
    } else if kind.is_dir() {
        Err(not_a_file("directory"))
    } else if kind.is_fifo() {
        Err(not_a_file("FIFO"))
    } else if kind.is_socket() {
        Err(not_a_file("socket"))
    } else {
        Err(not_a_file("device or special file"))
    }
}

/// Opens an existing log for reading.
pub fn open_for_read(path: &Path) -> Result<File, LogError> {
    open_for_read_inspected(path).map(|(file, _)| file)
}

/// [`open_for_read`], with the open file's metadata (taken once it was open).
pub(crate) fn open_for_read_inspected(path: &Path) -> Result<(File, Metadata), LogError> {
    check_regular(path)?;
    let file = File::open(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LogError::NotFound {
            path: path.to_path_buf(),
        },
        _ => LogError::io("open", path, e),
    })?;
    still_regular(file, path)
}

/// The path could have been swapped between the check and the open: check the open file.
fn still_regular(file: File, path: &Path) -> Result<(File, Metadata), LogError> {
    let meta = file
        .metadata()
        .map_err(|e| LogError::io("inspect", path, e))?;
    if !meta.is_file() {
        return Err(LogError::NotAFile {
            path: path.to_path_buf(),
            kind: "special file",
        });
    }
    Ok((file, meta))
}

/// Opens (creating if needed) a log for appending.
pub fn open_for_append(path: &Path) -> Result<File, LogError> {
    match check_regular(path) {
        Ok(_) | Err(LogError::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| LogError::io("create directory", parent, e))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| LogError::io("open", path, e))?;
    still_regular(file, path).map(|(file, _)| file)
}
