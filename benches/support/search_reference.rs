//! The reference's search, as its SQLite backend does it: one FTS5 table whose metadata columns
//! are UNINDEXED, a session table keyed by a listing revision, and before every search a
//! reconcile that lists every session (reading each header), inspects in full every session
//! whose revision changed, lists again to check the observation was stable, and rewrites the
//! changed sessions' documents in one transaction. Then the ranking statement with
//! `highlight()` and `ROW_NUMBER()`. The documents come from our query service's whole-log
//! read (what its `inspect` returns); the revision is the log's length and mtime.

use std::collections::HashMap;
use std::io::BufRead;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentlog::query::{
    JsonlSource, QueryConfig, QueryService, SessionHeader, Store, StoreConfig, SurfaceClass,
};
use rusqlite::{Connection, params};

const SCHEMA: &str = "
PRAGMA application_id = 1146311761;
PRAGMA user_version = 8;
CREATE TABLE IF NOT EXISTS search_state(singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  global_generation INTEGER NOT NULL) STRICT;
INSERT OR IGNORE INTO search_state VALUES (1, 0);
CREATE TABLE IF NOT EXISTS persisted_sessions(id TEXT PRIMARY KEY, version INTEGER,
  created_at INTEGER, cwd TEXT, parent_session TEXT, seed_length INTEGER,
  delegation_depth INTEGER, agent_preset TEXT, revision TEXT NOT NULL,
  generation INTEGER NOT NULL) STRICT;
CREATE VIRTUAL TABLE IF NOT EXISTS persisted_docs USING fts5(text, session_id UNINDEXED,
  seq UNINDEXED, type UNINDEXED, time UNINDEXED, surface UNINDEXED,
  codepoint_length UNINDEXED, tokenize = 'unicode61');
";

const RANK: &str = "
WITH cand AS (
  SELECT d.session_id AS sid, CAST(d.seq AS INTEGER) AS seq, d.type AS type,
         CAST(d.time AS INTEGER) AS time, d.surface AS surface,
         CAST(d.codepoint_length AS INTEGER) AS length,
         highlight(persisted_docs, 0, char(64976), char(64977)) AS marked
  FROM persisted_docs d JOIN persisted_sessions s ON s.id = d.session_id
  WHERE persisted_docs MATCH ?1),
counted AS (SELECT *, (length(CAST(marked AS BLOB))
  - length(CAST(replace(marked, char(64976), '') AS BLOB))) / 3 AS mc FROM cand),
ranked AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY sid
  ORDER BY mc DESC, length ASC, time DESC, seq DESC) AS rn FROM counted)
SELECT sid, seq, marked FROM ranked WHERE rn = 1
ORDER BY mc DESC, length ASC, time DESC, sid ASC, seq DESC LIMIT ?2 OFFSET 0";

/// The reference's search over a store.
pub struct RefSearch {
    conn: Connection,
    root: PathBuf,
}

/// One listed session: its header and revision.
struct Snapshot {
    header: SessionHeader,
    revision: String,
}

fn list(root: &Path) -> HashMap<String, Snapshot> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let Some(id) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if id.starts_with('.') {
            continue;
        }
        let path = entry.path().join("events.jsonl");
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        let mut line = Vec::new();
        if std::io::BufReader::new(file)
            .read_until(b'\n', &mut line)
            .is_err()
        {
            continue;
        }
        let Ok(header) = serde_json::from_slice::<SessionHeader>(&line) else {
            continue;
        };
        let revision = format!("{}:{}:{}", meta.size(), meta.mtime(), meta.mtime_nsec());
        out.insert(id, Snapshot { header, revision });
    }
    out
}

fn surface(class: SurfaceClass) -> &'static str {
    match class {
        SurfaceClass::Current => "current",
        SurfaceClass::Shadowed => "shadowed",
        SurfaceClass::LogOnly => "log-only",
    }
}

impl RefSearch {
    /// Opens (creating) the derived database at `db` for the store at `root`.
    pub fn open(root: &Path, db: &Path) -> RefSearch {
        let conn = Connection::open(db).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        RefSearch {
            conn,
            root: root.to_path_buf(),
        }
    }

    /// Reconciles, then returns the page of `limit` sessions for the phrase `query`.
    pub fn search(&mut self, query: &str, limit: u64) -> Vec<(String, u64)> {
        self.reconcile();
        let phrase = format!("\"{}\"", query.replace('"', "\"\""));
        let mut stmt = self.conn.prepare(RANK).unwrap();
        stmt.query_map(params![phrase, limit as i64 + 1], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    fn reconcile(&mut self) {
        let indexed: HashMap<String, String> = self
            .conn
            .prepare("SELECT id, revision FROM persisted_sessions")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let listed = list(&self.root);
        let store = Store::with_source(
            &self.root,
            StoreConfig::default(),
            Arc::new(JsonlSource::new(&self.root)),
        )
        .unwrap();
        let service = QueryService::new(&store, QueryConfig::default()).unwrap();
        let mut changed = Vec::new();
        for (id, snapshot) in &listed {
            if indexed.get(id) == Some(&snapshot.revision) {
                continue;
            }
            let docs = service.filter_events(id, &[]).unwrap_or_default();
            changed.push((id.clone(), docs));
        }
        // The stability check: a second listing must agree with the first.
        let again = list(&self.root);
        assert_eq!(again.len(), listed.len());
        let deleted: Vec<&String> = indexed
            .keys()
            .filter(|id| !listed.contains_key(*id))
            .collect();
        if changed.is_empty() && deleted.is_empty() {
            return;
        }
        let tx = self.conn.transaction().unwrap();
        for id in deleted {
            tx.execute("DELETE FROM persisted_docs WHERE session_id = ?1", [id])
                .unwrap();
            tx.execute("DELETE FROM persisted_sessions WHERE id = ?1", [id])
                .unwrap();
        }
        let generation: i64 = tx
            .query_row("SELECT global_generation + 1 FROM search_state", [], |r| {
                r.get(0)
            })
            .unwrap();
        for (id, docs) in changed {
            let Some(snapshot) = listed.get(&id) else {
                continue;
            };
            let h = &snapshot.header;
            // A session indexed before has its documents deleted first. (The FTS table has no
            // index on session_id, so this scans it; a new session is spared the scan, which
            // is kinder to the reference than deleting unconditionally.)
            if indexed.contains_key(&id) {
                tx.execute("DELETE FROM persisted_docs WHERE session_id = ?1", [&id])
                    .unwrap();
            }
            tx.execute(
                "INSERT OR REPLACE INTO persisted_sessions VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    id,
                    h.version as i64,
                    h.created_at as i64,
                    h.cwd,
                    h.parent_session,
                    h.seed_length.map(|v| v as i64),
                    h.delegation_depth.map(|v| v as i64),
                    h.agent_preset,
                    snapshot.revision,
                    generation
                ],
            )
            .unwrap();
            let mut insert = tx
                .prepare_cached("INSERT INTO persisted_docs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .unwrap();
            for doc in docs {
                let text: String = doc
                    .text
                    .chars()
                    .map(|c| match c {
                        '\0' | '\u{FDD0}' | '\u{FDD1}' => '\u{FFFD}',
                        c => c,
                    })
                    .collect();
                let length = text.chars().count() as i64;
                insert
                    .execute(params![
                        text,
                        id,
                        doc.record.seq as i64,
                        doc.record.event_type,
                        doc.record.time,
                        surface(doc.record.surface),
                        length
                    ])
                    .unwrap();
            }
        }
        tx.execute(
            "UPDATE search_state SET global_generation = ?1",
            [generation],
        )
        .unwrap();
        tx.commit().unwrap();
    }
}
