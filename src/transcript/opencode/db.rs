//! Reading an `OpenCode` database without touching it: the database and its `-wal` are copied
//! into a private directory in the cache and the copy is opened, so nothing is created,
//! changed or deleted beside the agent's files (SQLite opening a WAL database, even read-only,
//! may create `-wal`/`-shm` files; an `immutable=1` open would skip the WAL, where the newest
//! rows are). The rules: `docs/TRANSCRIPTS.md, "OpenCode"`.

use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags};

use super::{PartRow, Parts, Row, SessionInfo, Store, wal_of};
use crate::transcript::cache::ensure_private_dir;
use crate::transcript::error::TranscriptError;

/// How many times a database that changes while it is copied is copied again before it is
/// reported as busy.
const COPY_ATTEMPTS: u32 = 5;

/// How long a statement on the private copy may wait for a lock (nothing else opens the copy;
/// this only bounds the wait should anything ever do).
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// The cheap identity of a database file and its WAL: each one's length and modification
/// time (`None` for a missing WAL). Equal before and after a copy, the copy is of one state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    db: (u64, Option<SystemTime>),
    wal: Option<(u64, Option<SystemTime>)>,
}

fn stamp(m: &Metadata) -> (u64, Option<SystemTime>) {
    (m.len(), m.modified().ok())
}

/// The database's identity now.
pub(crate) fn identity(db: &Path) -> Result<Identity, TranscriptError> {
    let meta = std::fs::metadata(db).map_err(|e| TranscriptError::at("read", db, e))?;
    if !meta.is_file() {
        return Err(TranscriptError::NotAFile {
            path: db.to_path_buf(),
            kind: "directory or special file",
        });
    }
    let wal = std::fs::metadata(wal_of(db)).ok().map(|m| stamp(&m));
    Ok(Identity {
        db: stamp(&meta),
        wal,
    })
}

/// A private directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh private directory under `work`.
fn scratch(work: &Path) -> Result<Scratch, TranscriptError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    ensure_private_dir(work).map_err(|e| TranscriptError::io("create", work, e))?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = work.join(format!("copy-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    ensure_private_dir(&dir).map_err(|e| TranscriptError::io("create", &dir, e))?;
    Ok(Scratch(dir))
}

/// Copies `from` to `to`, writable by us alone (the copy is opened read-write so SQLite can
/// replay the WAL into its own private `-shm`).
fn copy(from: &Path, to: &Path) -> Result<(), TranscriptError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::copy(from, to).map_err(|e| TranscriptError::io("copy", from, e))?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| TranscriptError::io("copy", to, e))
}

/// Copies the database and its WAL into `dir` as one state: the WAL first, then the database
/// (a checkpoint in between leaves the database holding the same pages the copied WAL
/// replays), and both again if either changed meanwhile.
fn copy_consistent(db: &Path, dir: &Path) -> Result<(PathBuf, bool), TranscriptError> {
    let target = dir.join("opencode.db");
    let target_wal = wal_of(&target);
    for _ in 0..COPY_ATTEMPTS {
        let before = identity(db)?;
        let _ = std::fs::remove_file(&target_wal);
        let wal = wal_of(db);
        let with_wal = match before.wal {
            Some(_) => match copy(&wal, &target_wal) {
                Ok(()) => true,
                // Checkpointed and removed between the look and the copy: look again.
                Err(_) if !wal.exists() => continue,
                Err(e) => return Err(e),
            },
            None => false,
        };
        copy(db, &target)?;
        if identity(db)? == before {
            return Ok((target, with_wal));
        }
    }
    Err(TranscriptError::Unreadable {
        path: db.to_path_buf(),
        reason: format!("it changed while being copied, {COPY_ATTEMPTS} times"),
    })
}

/// Reads every message row and session of the database at `db` (with its WAL), through a
/// private copy made under `work`.
pub(crate) fn read_database(db: &Path, work: &Path, want: Parts) -> Result<Store, TranscriptError> {
    let scratch = scratch(work)?;
    let (copy, wal) = copy_consistent(db, &scratch.0)?;
    let damaged = |e: rusqlite::Error| TranscriptError::Unreadable {
        path: db.to_path_buf(),
        reason: format!("not a readable OpenCode database: {e}"),
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&copy, flags).map_err(damaged)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(damaged)?;
    let mut rows = Vec::new();
    {
        let mut stmt = conn
            .prepare("SELECT id, session_id, data FROM message")
            .map_err(damaged)?;
        let mut found = stmt.query([]).map_err(damaged)?;
        while let Some(r) = found.next().map_err(damaged)? {
            let id: String = r.get(0).map_err(damaged)?;
            let session: String = r.get(1).map_err(damaged)?;
            // `data` is text; a BLOB or NULL is a damaged row, read as no usage.
            let data: Vec<u8> = match r.get_ref(2).map_err(damaged)? {
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    t.to_vec()
                }
                _ => Vec::new(),
            };
            rows.push(Row {
                id,
                session,
                data,
                file: None,
            });
        }
    }
    // Sessions are names and parents only: a database without the table still has usage.
    let sessions = sessions(&conn).unwrap_or_default();
    // Parts are the messages' text: a database without the table has usage but no text.
    let (parts, skipped_parts) = match want {
        Parts::Read => parts(&conn).unwrap_or_default(),
        Parts::Skip => (Vec::new(), 0),
    };
    Ok(Store {
        path: db.to_path_buf(),
        rows,
        parts,
        skipped_parts,
        sessions,
        wal,
    })
}

/// Every part row, and how many rows could not be read (a NULL or non-text id; `data` that
/// is not text reads as nothing, and its part is skipped when parsed).
fn parts(conn: &Connection) -> rusqlite::Result<(Vec<PartRow>, u64)> {
    let mut stmt = conn.prepare("SELECT id, message_id, data FROM part")?;
    let mut found = stmt.query([])?;
    let mut parts = Vec::new();
    let mut skipped = 0;
    while let Some(r) = found.next()? {
        let text = |i: usize| match r.get_ref(i) {
            Ok(rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t)) => {
                Some(t.to_vec())
            }
            _ => None,
        };
        let name = |i: usize| text(i).and_then(|t| String::from_utf8(t).ok());
        match (name(0), name(1)) {
            (Some(id), Some(message)) => parts.push(PartRow {
                id,
                message,
                data: text(2).unwrap_or_default(),
            }),
            _ => skipped += 1,
        }
    }
    Ok((parts, skipped))
}

fn sessions(conn: &Connection) -> rusqlite::Result<Vec<SessionInfo>> {
    let mut stmt = conn.prepare("SELECT id, parent_id, title, directory FROM session")?;
    let found = stmt.query_map([], |r| {
        Ok(SessionInfo {
            id: r.get(0)?,
            parent: r.get(1)?,
            title: r.get(2)?,
            directory: r.get(3)?,
        })
    })?;
    found.collect()
}
