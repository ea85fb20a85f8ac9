//! The index file: where it lives, its schema, and what happens when it is not ours.
//!
//! `ROOT/.agentlog-search/index.sqlite` (a session id never starts with `.`, so the folder can
//! never be a session). The folder is 0700 and every file in it 0600: the index holds the
//! conversations' text. A search holds `lock` (an OS lock) from its first read of the index to
//! its answer, so two processes never catch the same session up twice, and a rebuild never
//! pulls the file from under another search.
//!
//! A file that is not a SQLite database, belongs to another application, has another schema
//! version or a table we did not make, or that SQLite reports damaged, is deleted and built
//! again: everything in it is derived from the logs.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::search::error::SearchError;

/// The folder of a store's search index.
pub const INDEX_DIR: &str = ".agentlog-search";
/// The index file inside it.
pub const INDEX_FILE: &str = "index.sqlite";
const LOCK_FILE: &str = "lock";

/// `PRAGMA application_id` of our index files: "AGLS".
pub const APPLICATION_ID: i32 = 0x4147_4C53;
/// An index's schema: its version (`PRAGMA user_version`; another value is rebuilt), its SQL,
/// and the tables it makes: anything else means the file is not ours.
#[derive(Debug)]
pub struct Schema {
    /// The schema version.
    pub version: i32,
    /// The statements that create it ([`index_schema`]).
    pub sql: &'static str,
    /// Its tables besides the FTS5 table `fts` and its shadow tables.
    pub tables: &'static [&'static str],
}

/// The FTS5 table of every index and its shadow tables.
const FTS_TABLES: [&str; 5] = ["fts", "fts_config", "fts_content", "fts_data", "fts_idx"];

impl Schema {
    /// Every table it makes, sorted by name.
    fn all_tables(&self) -> Vec<&'static str> {
        let mut tables: Vec<&str> = self.tables.iter().chain(&FTS_TABLES).copied().collect();
        tables.sort_unstable();
        tables
    }
}

/// The SQL of an index: its `state`, its table of files (`files`, named by the column `name`,
/// with the source's `own` columns, then the columns of every file row: its generation, its
/// error, and [`FILE_COLUMNS`](crate::search::stamp::FILE_COLUMNS), then its `position`
/// columns), any `more` tables, its `docs` (their id, then the `docs` columns) and `fts`.
macro_rules! index_schema {
    (
        files: $files:literal,
        name: $name:literal,
        own: $own:literal,
        position: $position:literal,
        more: $more:literal,
        docs: $docs:literal $(,)?
    ) => {
        concat!(
            "
CREATE TABLE state(
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  instance TEXT NOT NULL,
  generation INTEGER NOT NULL
) STRICT;
CREATE TABLE ",
            $files,
            "(
  key INTEGER PRIMARY KEY,
  ",
            $name,
            ",",
            $own,
            "
  generation INTEGER NOT NULL,
  error_code TEXT,
  error TEXT,
  dev INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  size INTEGER NOT NULL,
  mtime INTEGER NOT NULL,
  ctime INTEGER NOT NULL,
  settled INTEGER NOT NULL,
  covered INTEGER NOT NULL,
  head_len INTEGER NOT NULL,
  head_crc INTEGER NOT NULL,
  tail_start INTEGER NOT NULL,
  tail_len INTEGER NOT NULL,
  tail_crc INTEGER NOT NULL,
  crc INTEGER NOT NULL,",
            $position,
            "
) STRICT;",
            $more,
            "
CREATE TABLE docs(
  id INTEGER PRIMARY KEY, -- file key << 32 | the document's number in its file",
            $docs,
            "
) STRICT;
CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = 'unicode61', columnsize = 0);
"
        )
    };
}
pub(crate) use index_schema;

/// An open index and the lock that serializes searches on it.
#[derive(Debug)]
pub struct Db {
    /// The connection.
    pub conn: Connection,
    /// The index's own id (cursors carry it).
    pub instance: String,
    /// The file's identity when opened: another file at the path means reopen.
    identity: (u64, u64),
    path: PathBuf,
}

/// Where the index of the store at `root` lives.
pub fn index_dir(root: &Path) -> PathBuf {
    root.join(INDEX_DIR)
}

/// Creates (or tightens) the index folder and takes the search lock; the lock is held until
/// the returned file is dropped.
pub fn lock(dir: &Path) -> Result<File, SearchError> {
    create_private_dir(dir)
        .map_err(|e| SearchError::index_io(format!("creating {}", dir.display()), e))?;
    let path = dir.join(LOCK_FILE);
    let file = private_file(&path, false)
        .map_err(|e| SearchError::index_io(format!("opening {}", path.display()), e))?;
    file.lock()
        .map_err(|e| SearchError::index_io(format!("locking {}", path.display()), e))?;
    Ok(file)
}

impl Db {
    /// Opens the index in `dir` (the lock held), building it when it is missing or not ours.
    pub fn open(dir: &Path, schema: &Schema) -> Result<Db, SearchError> {
        let path = dir.join(INDEX_FILE);
        if path.exists() {
            match Db::open_existing(&path, schema) {
                Ok(db) => return Ok(db),
                Err(reason) => {
                    tracing::warn!(index = %path.display(), %reason, "search index not usable; rebuilding it");
                }
            }
        }
        Db::create(&path, schema)
    }

    /// Deletes the index files and builds an empty index (the lock held).
    pub fn rebuild(dir: &Path, schema: &Schema) -> Result<Db, SearchError> {
        Db::create(&dir.join(INDEX_FILE), schema)
    }

    /// Whether the file at the path is still the one this connection has open.
    pub fn is_current(&self) -> bool {
        fs::metadata(&self.path).is_ok_and(|m| identity(&m) == self.identity)
    }

    fn open_existing(path: &Path, schema: &Schema) -> Result<Db, String> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| e.to_string())?;
        let pragma = |name: &str| -> Result<i32, String> {
            conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .map_err(|e| e.to_string())
        };
        if pragma("application_id")? != APPLICATION_ID {
            return Err("another application's database".into());
        }
        let version = pragma("user_version")?;
        if version != schema.version {
            return Err(format!("schema version {version}, not {}", schema.version));
        }
        let mut tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| e.to_string())?;
        tables.sort();
        if tables != schema.all_tables() {
            return Err(format!("unexpected tables {tables:?}"));
        }
        let instance: String = conn
            .query_row("SELECT instance FROM state WHERE singleton = 1", [], |r| {
                r.get(0)
            })
            .map_err(|e| e.to_string())?;
        configure(&conn).map_err(|e| e.to_string())?;
        Db::new(conn, instance, path).map_err(|e| e.to_string())
    }

    fn new(conn: Connection, instance: String, path: &Path) -> io::Result<Db> {
        let metadata = fs::metadata(path)?;
        Ok(Db {
            conn,
            instance,
            identity: identity(&metadata),
            path: path.to_path_buf(),
        })
    }

    fn create(path: &Path, schema: &Schema) -> Result<Db, SearchError> {
        let fail = |what: &str, e: rusqlite::Error| {
            SearchError::index(format!("{what} {}", path.display()), e)
        };
        remove_index_files(path)?;
        private_file(path, true)
            .map_err(|e| SearchError::index_io(format!("creating {}", path.display()), e))?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| fail("opening", e))?;
        configure(&conn).map_err(|e| fail("configuring", e))?;
        let instance = new_instance_id();
        conn.execute_batch(&format!(
            "BEGIN; PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {}; {} COMMIT;",
            schema.version, schema.sql
        ))
        .map_err(|e| fail("creating the schema of", e))?;
        conn.execute(
            "INSERT INTO state(singleton, instance, generation) VALUES (1, ?1, 0)",
            [&instance],
        )
        .map_err(|e| fail("initializing", e))?;
        tracing::info!(index = %path.display(), "search index created");
        Db::new(conn, instance, path)
            .map_err(|e| SearchError::index_io(format!("reading {}", path.display()), e))
    }
}

/// An index kept open between searches.
#[derive(Debug)]
pub struct Handle {
    dir: PathBuf,
    schema: &'static Schema,
    db: Option<Db>,
}

impl Handle {
    /// The index of `schema` in `dir`; nothing is read or written before the first attempt.
    pub fn new(dir: PathBuf, schema: &'static Schema) -> Handle {
        Handle {
            dir,
            schema,
            db: None,
        }
    }

    /// The directory of its files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the search lock and runs `attempt` on the open index, telling it whether the
    /// index was opened anew (so what it keeps of the last connection is gone); a damaged index
    /// found on the way is rebuilt and the whole attempt made once more.
    pub fn with_lock<T>(
        &mut self,
        mut attempt: impl FnMut(&mut Db, bool) -> Result<T, SearchError>,
    ) -> Result<T, SearchError> {
        let _lock = lock(&self.dir)?;
        match self.attempt(&mut attempt, false) {
            Err(e) if is_damage(&e) => {
                tracing::warn!(index = %self.dir.display(), error = %e, "search index damaged; rebuilding it");
                self.attempt(&mut attempt, true)
            }
            other => other,
        }
    }

    fn attempt<T>(
        &mut self,
        attempt: &mut impl FnMut(&mut Db, bool) -> Result<T, SearchError>,
        rebuild: bool,
    ) -> Result<T, SearchError> {
        // The connection kept is closed before a rebuild deletes its files.
        let kept = self.db.take().filter(|db| !rebuild && db.is_current());
        let reopened = kept.is_none();
        let db = match kept {
            Some(db) => db,
            None if rebuild => Db::rebuild(&self.dir, self.schema)?,
            None => Db::open(&self.dir, self.schema)?,
        };
        attempt(self.db.insert(db), reopened)
    }
}

/// Whether a SQLite error says the file is damaged or not a database (so: rebuild it).
pub fn is_damage(error: &SearchError) -> bool {
    let SearchError::IndexFailed { cause, .. } = error else {
        return false;
    };
    cause
        .downcast_ref::<rusqlite::Error>()
        .and_then(rusqlite::Error::sqlite_error_code)
        .is_some_and(|code| matches!(code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase))
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    // Plans made without the bound values: otherwise binding the MATCH expression or LIMIT
    // compiles every search statement (and FTS5's own) twice, once at prepare and once at
    // the first step.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    // WAL with NORMAL sync cannot corrupt the file; a commit lost to a power cut is redone by
    // the next search, since the index is derived.
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    // A larger page cache than the 2 MB default keeps FTS5's segment merges in memory while a
    // store is indexed; the WAL is cut back after checkpoints instead of keeping its peak size.
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768;
         PRAGMA journal_size_limit = 4194304;",
    )?;
    // The ranking and the page's marked texts keep about a dozen statements.
    conn.set_prepared_statement_cache_capacity(32);
    crate::search::fts5::install(conn)
}

fn identity(metadata: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

fn remove_index_files(path: &Path) -> Result<(), SearchError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match fs::remove_file(PathBuf::from(&name)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(SearchError::index_io(
                    format!("removing {}", Path::new(&name).display()),
                    e,
                ));
            }
        }
    }
    Ok(())
}

/// A random 128-bit id, as hex: the OS seeds every `RandomState`.
pub(crate) fn new_instance_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut parts = [0u64; 2];
    for (i, part) in parts.iter_mut().enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_usize(i);
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        hasher.write_u32(std::process::id());
        *part = hasher.finish();
    }
    format!("{:016x}{:016x}", parts[0], parts[1])
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let metadata = fs::symlink_metadata(dir)?;
            if !metadata.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is not a directory",
                    dir.display()
                )));
            }
            if metadata.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn private_file(path: &Path, new: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = OpenOptions::new();
    options.read(true).write(true).mode(0o600);
    if new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::sessions::STORE_SCHEMA;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn files_are_private_and_foreign_files_are_rebuilt() {
        let root = tempfile::tempdir().unwrap();
        let dir = index_dir(root.path());
        let _lock = lock(&dir).unwrap();
        let db = Db::open(&dir, &STORE_SCHEMA).unwrap();
        let first = db.instance.clone();
        drop(db);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(INDEX_FILE)), 0o600);
        assert_eq!(mode(&dir.join(LOCK_FILE)), 0o600);
        assert_eq!(
            Db::open(&dir, &STORE_SCHEMA).unwrap().instance,
            first,
            "reopened, not rebuilt"
        );
        fs::write(dir.join(INDEX_FILE), b"not a database at all, just bytes").unwrap();
        let rebuilt = Db::open(&dir, &STORE_SCHEMA).unwrap();
        assert_ne!(rebuilt.instance, first);
        assert_eq!(mode(&dir.join(INDEX_FILE)), 0o600);
    }
}
