//! The usage of `OpenCode` databases kept between `usage` runs, in `<index dir>/opencode/`: a
//! run copies and reads the databases only when one of them or its WAL changed since the run
//! that kept it. "Unchanged" is the usage snapshot's `stat` rule (same device, inode, length,
//! mtime and ctime, stats taken before the read, of files settled 2 s before). Older storage
//! directories, many files each, are read every time.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{ForUsage, SessionUsage, Source, for_usage, wal_of, work_dir};
use crate::transcript::cache::fnv;
use crate::transcript::checked_file::Kind;
use crate::transcript::stat::Stat;

/// The memo file: `AGLOCUSG`, layout 1.
const MEMO: Kind = Kind {
    name: "the OpenCode usage memo",
    magic: b"AGLOCUSG",
    version: 1,
};

/// A database's path, its stat and its WAL's (`None`: no WAL).
type DatabaseStat = (Vec<u8>, Stat, Option<Stat>);

/// What a run kept: the databases as they were before it read them, and what it took.
#[derive(Serialize, Deserialize)]
struct Memo {
    stats: Vec<DatabaseStat>,
    sessions: Vec<SessionUsage>,
    read: u64,
}

/// The stat of every source, taken now: `None` when one is a storage directory, cannot be
/// stat'ed, or changed too recently for its stat to be trusted.
fn stats_of(sources: &[Source]) -> Option<Vec<DatabaseStat>> {
    let taken = SystemTime::now();
    let stat = |path: &Path| std::fs::metadata(path).map(|m| Stat::of(&m, taken));
    sources
        .iter()
        .map(|source| {
            let Source::Database(db) = source else {
                return None;
            };
            let own = stat(db).ok()?;
            let wal = match stat(&wal_of(db)) {
                Ok(wal) => Some(wal),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(_) => return None,
            };
            let settled = own.settled() && wal.is_none_or(|w| w.settled());
            settled.then(|| (db.as_os_str().as_bytes().to_vec(), own, wal))
        })
        .collect()
}

/// Whether two lists of stats say the same databases are as they were.
fn unchanged(kept: &[DatabaseStat], now: &[DatabaseStat]) -> bool {
    let same = |a: &Option<Stat>, b: &Option<Stat>| match (a, b) {
        (Some(a), Some(b)) => a.same_file(b),
        (None, None) => true,
        _ => false,
    };
    kept.len() == now.len()
        && kept
            .iter()
            .zip(now)
            .all(|(k, n)| k.0 == n.0 && k.1.same_file(&n.1) && same(&k.2, &n.2))
}

/// [`for_usage`], answered from the memo when no database changed since it was kept, and the
/// memo kept again when one did (and everything could be read).
pub(crate) fn for_usage_kept(sources: &[Source], index_dir: Option<&Path>) -> ForUsage {
    let work = work_dir(index_dir);
    let (Some(work), false) = (work.as_deref(), sources.is_empty()) else {
        return for_usage(sources, work.as_deref());
    };
    let Some(stats) = stats_of(sources) else {
        return for_usage(sources, Some(work));
    };
    let names: Vec<&[u8]> = stats.iter().map(|s| s.0.as_slice()).collect();
    let path = work.join(format!("usage-{:016x}.memo", fnv(&names)));
    if let Ok(memo) = MEMO.read::<Memo>(&path)
        && unchanged(&memo.stats, &stats)
    {
        return ForUsage {
            sessions: memo.sessions,
            read: memo.read,
            skipped: Vec::new(),
        };
    }
    let out = for_usage(sources, Some(work));
    if out.skipped.is_empty() {
        let memo = Memo {
            stats,
            sessions: out.sessions.clone(),
            read: out.read,
        };
        // The answer stands even if the memo cannot be kept.
        let _ = MEMO.write(work, &path, &memo);
    }
    out
}

#[cfg(all(test, feature = "opencode"))]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::{Duration, SystemTime};

    use super::{MEMO, Memo, for_usage_kept};
    use crate::transcript::opencode::{ForUsage, Source, for_usage};

    const REAL: &str = "tests/data/transcripts/opencode/JulesGuiCs-dda98e9";

    /// The sessions' buckets, comparable.
    fn figures(u: &ForUsage) -> Vec<(String, String, String)> {
        u.sessions
            .iter()
            .map(|s| {
                (
                    s.session.clone(),
                    s.project.clone(),
                    format!("{:?}", s.buckets),
                )
            })
            .collect()
    }

    fn memo_in(dir: &Path) -> Option<PathBuf> {
        let found = std::fs::read_dir(dir.join("opencode")).ok()?;
        found
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "memo"))
    }

    /// The memo answers while the database is as it was, is believed only then, and is not
    /// kept for a database that changed too recently to be sure of.
    #[test]
    fn the_memo_answers_only_for_an_unchanged_database() {
        let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(REAL);
        for name in ["opencode.db", "opencode.db-wal"] {
            std::fs::copy(root.join(name), data.path().join(name))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let db = data.path().join("opencode.db");
        let sources = [Source::Database(db.clone())];
        let index = Some(cache.path());
        let fresh = for_usage(&sources, Some(&cache.path().join("opencode")));
        assert!(fresh.read == 1 && !fresh.sessions.is_empty());
        // Just copied: not settled, so nothing is kept.
        let first = for_usage_kept(&sources, index);
        assert_eq!(figures(&first), figures(&fresh));
        assert_eq!(memo_in(cache.path()), None);
        // Settled means changed 2 s before the stat in whole seconds: over 3 s from any start.
        std::thread::sleep(Duration::from_millis(3100));
        let kept = for_usage_kept(&sources, index);
        assert_eq!(figures(&kept), figures(&fresh));
        let path = memo_in(cache.path()).unwrap_or_else(|| panic!("no memo kept"));
        // A memo saying something else is believed while the files are unchanged: the
        // answer comes from it, not from a read.
        let mut memo: Memo = MEMO.read(&path).unwrap_or_else(|e| panic!("{e}"));
        memo.sessions.truncate(0);
        MEMO.write(&cache.path().join("opencode"), &path, &memo)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(for_usage_kept(&sources, index).sessions.is_empty());
        // A damaged memo is not believed.
        let mut bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(figures(&for_usage_kept(&sources, index)), figures(&fresh));
        // Forged again, then the WAL changes: read again.
        MEMO.write(&cache.path().join("opencode"), &path, &memo)
            .unwrap_or_else(|e| panic!("{e}"));
        let wal = data.path().join("opencode.db-wal");
        std::fs::File::options()
            .write(true)
            .open(&wal)
            .and_then(|f| f.set_modified(SystemTime::now()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(figures(&for_usage_kept(&sources, index)), figures(&fresh));
    }
}
