//! The catch-up against a naive oracle, with a source of its own: plain text files, a document
//! (an event's, as a store's) per non-empty complete line, a file holding the line `BAD`
//! unreadable.

use std::cell::Cell;
use std::fs::{self, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use rusqlite::Transaction;
use rusqlite::types::Value as SqlValue;

use super::*;
use crate::query::SurfaceClass;
use crate::search::db::{Db, Schema, index_schema, lock};
use crate::search::documents::DocTables;
use crate::search::reader::Doc;
use crate::search::sessions::EVENT_COLUMNS;

const SCHEMA: Schema = Schema {
    version: 1,
    sql: index_schema!(
        files: "files",
        name: "name TEXT NOT NULL UNIQUE",
        own: "
    first TEXT,",
        position: "
    lines INTEGER NOT NULL",
        more: "",
        docs: "
  file INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  time INTEGER NOT NULL,
  surface TEXT NOT NULL,
  length INTEGER NOT NULL",
    ),
    tables: &["docs", "files", "state"],
};

/// Text files in `dir`; counts the bytes it is given to read.
struct Lines {
    dir: PathBuf,
    read: Cell<u64>,
}

impl Source for Lines {
    type Name = String;
    type Error = String;
    type Position = u64;
    type Doc = Doc;
    type Extra = ();

    const TABLE: Table = Table {
        files: "files",
        name: "name",
        position: &["lines"],
        named: &["first"],
        docs: DocTables {
            docs: "docs",
            fts: "fts",
            file: "file",
            columns: EVENT_COLUMNS,
        },
        states: true,
    };

    fn path(&self, name: &String) -> PathBuf {
        self.dir.join(name)
    }

    // A file named `kept` is never dropped for not being listed.
    fn owns(&self, name: &String) -> bool {
        name != "kept"
    }

    fn code(_: &String) -> &'static str {
        "bad"
    }

    fn io_error(path: &Path, error: io::Error) -> String {
        format!("{}: {error}", path.display())
    }

    fn refuse(&self, path: &Path, metadata: &Metadata) -> Option<String> {
        metadata
            .is_dir()
            .then(|| format!("{} is a directory", path.display()))
    }

    fn read(&self, _: &Transaction<'_>, chunk: Chunk<'_, Self>) -> Result<Step<Self>, SearchError> {
        let (bytes, start, resumed) = (chunk.bytes, chunk.start, chunk.resumed);
        self.read.set(self.read.get() + bytes.len() as u64);
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut line = resumed.map_or(0, |(_, lines)| *lines);
        let mut docs = Vec::new();
        for text in bytes[..complete].split_inclusive(|b| *b == b'\n') {
            let text = &text[..text.len() - 1];
            line += 1;
            if text == b"BAD" {
                return Ok(Step::Unreadable("a BAD line".into()));
            }
            if !text.is_empty() {
                let text = String::from_utf8_lossy(text).into_owned();
                docs.push(Doc {
                    seq: line,
                    event_type: "line".into(),
                    time: 0,
                    surface: SurfaceClass::Current,
                    length: text.chars().count() as u64,
                    text,
                });
            }
        }
        Ok(Step::Read(Read {
            end: start + complete as u64,
            docs,
            position: line,
            extra: (),
        }))
    }

    fn named(&self, _name: &String, read: &Read<Self>) -> Vec<SqlValue> {
        vec![
            read.docs
                .first()
                .map_or(SqlValue::Null, |d| SqlValue::Text(d.text.clone())),
        ]
    }
}

struct Fixture {
    files: tempfile::TempDir,
    _index: tempfile::TempDir,
    db: Db,
    source: Lines,
    clock: Cell<u64>,
}

impl Fixture {
    fn new() -> Fixture {
        let files = tempfile::tempdir().unwrap();
        let index = tempfile::tempdir().unwrap();
        let dir = index.path().join("index");
        drop(lock(&dir).unwrap());
        let db = Db::open(&dir, &SCHEMA).unwrap();
        let source = Lines {
            dir: files.path().to_path_buf(),
            read: Cell::new(0),
        };
        Fixture {
            files,
            _index: index,
            db,
            source,
            clock: Cell::new(0),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.files.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        fs::write(self.path(name), text).unwrap();
        self.stamp_anew(name);
    }

    fn append(&self, name: &str, text: &str) {
        let mut f = OpenOptions::new()
            .append(true)
            .open(self.path(name))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
        self.stamp_anew(name);
    }

    /// Gives the file an mtime of its own: two writes within the filesystem's timestamp
    /// granularity could leave the stamp as it was, and stamps settle at once here.
    fn stamp_anew(&self, name: &str) {
        self.clock.set(self.clock.get() + 1);
        let file = OpenOptions::new()
            .write(true)
            .open(self.path(name))
            .unwrap();
        file.set_modified(UNIX_EPOCH + Duration::from_secs(1_000_000_000 + self.clock.get()))
            .unwrap();
    }

    /// Catches up with `names`; what it did, and the bytes the source was given.
    fn catch_up(&mut self, names: &[&str]) -> (CaughtUp, u64) {
        let listed: Vec<Listed<Lines>> = names
            .iter()
            .map(|name| Listed {
                name: (*name).to_string(),
                stamp: fs::metadata(self.path(name)).ok().map(|m| Stamp::of(&m)),
                refused: None,
            })
            .collect();
        self.source.read.set(0);
        // Stamps settle at once: every change below shows in the stamp (`stamp_anew`).
        let caught = catch_up(&mut self.db.conn, &self.source, &listed, Duration::ZERO).unwrap();
        (caught, self.source.read.get())
    }

    /// The index's documents by file name, line and text, in order.
    fn indexed(&self) -> Vec<(String, u64, String)> {
        let mut stmt = self
            .db
            .conn
            .prepare(
                "SELECT f.name, d.id & 4294967295, fts.text FROM docs d
                 JOIN fts ON fts.rowid = d.id JOIN files f ON f.key = d.file ORDER BY f.name, d.id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)?.cast_unsigned(), r.get(2)?))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    /// The oracle: every readable file's complete non-empty lines, re-read from scratch.
    fn oracle(&self, names: &[&str]) -> Vec<(String, u64, String)> {
        let mut names = names.to_vec();
        names.sort_unstable();
        let mut docs = Vec::new();
        for name in names {
            let Ok(text) = fs::read_to_string(self.path(name)) else {
                continue;
            };
            let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
            let lines: Vec<&str> = complete.lines().collect();
            if lines.contains(&"BAD") {
                continue;
            }
            for (i, line) in lines.iter().enumerate() {
                if !line.is_empty() {
                    docs.push((name.to_string(), i as u64 + 1, (*line).to_string()));
                }
            }
        }
        docs
    }

    fn generation(&self) -> i64 {
        self.db
            .conn
            .query_row("SELECT generation FROM state", [], |r| r.get(0))
            .unwrap()
    }
}

/// What a catch-up did: files read, and whether the generation moved.
fn did(read: usize, changed: bool) -> Caught {
    Caught { read, changed }
}

#[test]
fn new_bytes_alone_are_read_and_changed_files_whole() {
    let mut f = Fixture::new();
    f.write("a", "alpha\nbeta\n");
    f.write("b", "one\n\ntwo\nthr");
    let names = ["a", "b"];
    let (first, read) = f.catch_up(&names);
    assert_eq!(first.caught, did(2, true));
    assert_eq!(read, 11 + 12);
    assert_eq!(first.total, 2);
    assert_eq!(f.indexed(), f.oracle(&names));
    let first_line: Option<String> =
        f.db.conn
            .query_row("SELECT first FROM files WHERE name = 'b'", [], |r| r.get(0))
            .unwrap();
    assert_eq!(first_line.as_deref(), Some("one"), "set from a whole read");

    let (warm, read) = f.catch_up(&names);
    assert_eq!((warm.caught, read), (did(0, false), 0), "nothing changed");
    assert_eq!(warm.files, first.files, "the same rows");

    // The torn line completes, and more: only the bytes after the covered ones are read.
    f.append("b", "ee\nfour\nfi");
    let generation = f.generation();
    let (grew, read) = f.catch_up(&names);
    assert_eq!(grew.caught, did(1, true));
    assert_eq!(
        read,
        "three\nfour\nfi".len() as u64,
        "from the covered offset"
    );
    assert_eq!(f.indexed(), f.oracle(&names));
    assert_eq!(grew.files[0], first.files[0], "a is untouched");
    assert_eq!(grew.files[1].as_ref().unwrap().generation, generation + 1);

    // Same length, other bytes: the windows differ, so the whole file is read again.
    f.write("a", "ALPHA\nbeta\n");
    let (rewritten, read) = f.catch_up(&names);
    assert_eq!(rewritten.caught.read, 1);
    assert_eq!(read, 11, "the whole file");
    assert_eq!(f.indexed(), f.oracle(&names));

    // Shorter: read whole too.
    f.write("a", "al\n");
    f.catch_up(&names);
    assert_eq!(f.indexed(), f.oracle(&names));

    // Growth without a complete line changes no document: the generation stays.
    f.append("a", "no newline yet");
    let generation = f.generation();
    let (torn, _) = f.catch_up(&names);
    assert_eq!(torn.caught, did(1, false));
    assert_eq!(f.generation(), generation);
    assert_eq!(f.indexed(), f.oracle(&names));
}

#[test]
fn unreadable_files_are_recorded_once_and_gone_files_dropped() {
    let mut f = Fixture::new();
    f.write("a", "fine\n");
    f.write("b", "ok\nBAD\n");
    f.write("kept", "kept\n");
    let (first, _) = f.catch_up(&["a", "b", "kept"]);
    assert_eq!(first.total, 3);
    let error = first.files[1].as_ref().unwrap().error.clone();
    assert_eq!(error, Some(("bad".into(), "a BAD line".into())));
    assert_eq!(f.indexed(), f.oracle(&["a", "b", "kept"]));

    // Still unreadable for the same reason: read again, but the answer does not move.
    f.append("b", "more\n");
    let generation = f.generation();
    let (again, _) = f.catch_up(&["a", "b", "kept"]);
    assert_eq!(again.caught, did(1, false));
    assert_eq!(f.generation(), generation);
    assert_eq!(again.files[1], first.files[1]);

    // Readable again: indexed whole.
    f.write("b", "ok\ngood\n");
    let (fixed, _) = f.catch_up(&["a", "b", "kept"]);
    assert!(fixed.caught.changed);
    assert_eq!(fixed.files[1].as_ref().unwrap().error, None);
    assert_eq!(f.indexed(), f.oracle(&["a", "b", "kept"]));

    // A directory where a file was is refused.
    fs::remove_file(f.path("a")).unwrap();
    fs::create_dir(f.path("a")).unwrap();
    let (refused, _) = f.catch_up(&["a", "b", "kept"]);
    let code = refused.files[0]
        .as_ref()
        .unwrap()
        .error
        .as_ref()
        .unwrap()
        .0
        .clone();
    assert_eq!(code, "bad");

    // Deleted while listed: dropped. Not listed: dropped, unless the source does not own it.
    fs::remove_dir(f.path("a")).unwrap();
    let (gone, _) = f.catch_up(&["a", "b", "kept"]);
    assert_eq!(gone.files[0], None);
    assert_eq!(gone.total, 2);
    let (unlisted, _) = f.catch_up(&[]);
    assert_eq!(unlisted.total, 1, "b dropped, kept kept");
    assert!(unlisted.caught.changed);
    assert_eq!(f.indexed(), f.oracle(&["kept"]));
}
