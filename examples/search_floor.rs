//! The floor of a warm search: what any catch-up that trusts stamps must do, each part timed
//! alone (the thread's CPU time, median of many runs) on a store the search bench generated:
//!
//! ```sh
//! cargo build --profile bench --example search_floor
//! target/release/examples/search_floor target/bench-data/search-10000 [RUNS]
//! ```
//!
//! Parts: the lock (open the lock file, `flock`, close); listing the store's directory; one
//! `statat` per session log (names made beforehand); opening the index (SQLite open and one
//! pragma read, as a fresh process must); one trivial query on an open connection; reading every
//! session's stamp (5 integers a row) from the index; the phrase query alone (`MATCH`, rowids
//! only).

// A measuring tool: a failed step stops it with its message, and SQLite keeps integers as i64.
#![allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)]

use std::ffi::CString;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        ts.tv_sec.cast_unsigned(),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The median thread CPU time of `runs` runs of `f`.
fn median(
    runs: usize,
    mut f: impl FnMut() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let mut times = Vec::with_capacity(runs);
    f()?;
    for _ in 0..runs {
        let before = thread_cpu();
        f()?;
        times.push(thread_cpu().saturating_sub(before));
    }
    times.sort();
    Ok(times.get(times.len() / 2).copied().unwrap_or_default())
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (root, runs) = match args.as_slice() {
        [_, root] => (Path::new(root), 200),
        [_, root, runs] => (Path::new(root), runs.parse()?),
        _ => return Err("usage: search_floor STORE [RUNS]".into()),
    };
    let index_dir = root.join(agentlog::search::INDEX_DIR);
    let index = index_dir.join(agentlog::search::INDEX_FILE);
    let lock_path = index_dir.join("lock");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let name = entry?.file_name();
        if let Some(name) = name.to_str().filter(|n| !n.starts_with('.'))
            && root.join(name).is_dir()
        {
            names.push(CString::new(format!("{name}/events.jsonl"))?);
        }
    }
    let root_fd = rustix::fs::open(
        root,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let sessions = names.len();
    let mut parts = Vec::new();

    parts.push((
        "lock (open, flock, close)",
        median(runs, || {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&lock_path)?;
            file.lock()?;
            Ok(())
        })?,
    ));
    parts.push((
        "list the store's directory",
        median(runs, || {
            let mut n = 0;
            for entry in std::fs::read_dir(root)? {
                let entry = entry?;
                n += usize::from(entry.file_type()?.is_dir());
            }
            std::hint::black_box(n);
            Ok(())
        })?,
    ));
    parts.push((
        "statat of every log",
        median(runs, || {
            let mut total = 0u64;
            for name in &names {
                let st = rustix::fs::statat(
                    &root_fd,
                    name.as_c_str(),
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )?;
                total = total.wrapping_add(st.st_size as u64);
            }
            std::hint::black_box(total);
            Ok(())
        })?,
    ));
    parts.push((
        "open the index (fresh process)",
        median(runs, || {
            let conn = open(&index)?;
            let id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
            std::hint::black_box(id);
            Ok(())
        })?,
    ));
    let conn = open(&index)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    parts.push((
        "one trivial query (open connection)",
        median(runs, || {
            let g: i64 = conn.query_row(
                "SELECT generation FROM state WHERE singleton = 1",
                [],
                |r| r.get(0),
            )?;
            std::hint::black_box(g);
            Ok(())
        })?,
    ));
    parts.push((
        "read every session's stamp",
        median(runs, || {
            let mut stmt =
                conn.prepare_cached("SELECT dev, ino, size, mtime, ctime FROM sessions")?;
            let mut rows = stmt.query([])?;
            let mut total = 0i64;
            while let Some(row) = rows.next()? {
                for i in 0..5 {
                    total = total.wrapping_add(row.get::<_, i64>(i)?);
                }
            }
            std::hint::black_box(total);
            Ok(())
        })?,
    ));
    parts.push((
        "the phrase query alone (rowids)",
        median(runs, || {
            let mut stmt = conn.prepare_cached("SELECT rowid FROM fts WHERE fts MATCH ?1")?;
            let n = stmt
                .query_map(["\"zanzibar harbour\""], |r| r.get::<_, i64>(0))?
                .count();
            std::hint::black_box(n);
            Ok(())
        })?,
    ));
    println!("{sessions} sessions, {runs} runs each; thread CPU p50:");
    let mut total = Duration::ZERO;
    for (name, d) in &parts {
        println!("  {name:40} {d:?}");
        total += *d;
    }
    println!("  {:40} {total:?}", "sum");
    Ok(())
}
