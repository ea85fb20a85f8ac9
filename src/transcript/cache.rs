//! Where transcript indexes live: a per-user cache directory, never beside the transcript.
//!
//! The cache holds what private conversations reveal (message ids, token counts, model names,
//! times), so its folders are created 0700 and its files 0600.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The environment variable naming the cache directory.
pub const CACHE_DIR_ENV: &str = "AGENTLOG_CACHE_DIR";

/// The per-user cache directory: `$AGENTLOG_CACHE_DIR`, else `$XDG_CACHE_HOME/agentlog`, else
/// `~/.cache/agentlog`. Empty values are ignored, and so is a relative `$XDG_CACHE_HOME` (the
/// XDG rule). `None` when none of these can be found.
pub fn cache_dir() -> Option<PathBuf> {
    per_user_dir(CACHE_DIR_ENV, "XDG_CACHE_HOME", &[".cache"])
}

/// A per-user directory by the XDG rule, shared by the cache and the archive's data directory:
/// `$own` if set, else `$xdg/agentlog` if absolute, else `~/<home_parts>/agentlog`; empty
/// values are ignored.
pub(crate) fn per_user_dir(own: &str, xdg: &str, home_parts: &[&str]) -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var(own) {
        return Some(dir);
    }
    if let Some(base) = var(xdg).filter(|p| p.is_absolute()) {
        return Some(base.join("agentlog"));
    }
    var("HOME").map(|home| {
        home_parts
            .iter()
            .fold(home, |p, part| p.join(part))
            .join("agentlog")
    })
}

/// The directory transcript index files go in by default: `<cache dir>/transcripts`.
pub fn default_index_dir() -> Option<PathBuf> {
    cache_dir().map(|dir| dir.join("transcripts"))
}

/// The index file of a transcript (by its canonical path) in `dir`: a 64-bit FNV-1a hash of the
/// path's bytes. The path is also stored inside the index and checked, so a collision or a
/// file copied from another transcript is rebuilt, never believed.
pub fn index_file(dir: &Path, canonical: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let hash = fnv(&[canonical.as_os_str().as_bytes()]);
    dir.join(format!("{hash:016x}.redb"))
}

/// The 64-bit FNV-1a hash of `parts` one after another: what names the cache's files (a
/// collision is caught by what each file holds and checks).
pub(crate) fn fnv(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// Creates `dir` and any missing parents with mode 0700. A `dir` that already exists and is
/// open to others is narrowed to 0700 if this user may (someone else's directory is left as
/// it is).
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if meta.mode() & 0o077 != 0 {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

/// Opens (creating with mode 0600) an index file for reading and writing.
pub(crate) fn open_private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_files_are_named_by_the_path_and_differ() {
        let dir = Path::new("/cache");
        let a = index_file(dir, Path::new("/home/u/a.jsonl"));
        let b = index_file(dir, Path::new("/home/u/b.jsonl"));
        assert_ne!(a, b);
        assert_eq!(a, index_file(dir, Path::new("/home/u/a.jsonl")));
        assert!(a.starts_with(dir));
        assert_eq!(a.extension().and_then(|e| e.to_str()), Some("redb"));
    }

    #[test]
    fn private_dirs_and_files_have_private_modes() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/c");
        ensure_private_dir(&dir).unwrap();
        for d in [root.path().join("a"), root.path().join("a/b"), dir.clone()] {
            assert_eq!(
                std::fs::metadata(&d).unwrap().mode() & 0o777,
                0o700,
                "{d:?}"
            );
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let file = dir.join("x.redb");
        drop(open_private_file(&file).unwrap());
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
    }
}
