//! The transcript search index caught up: the line transcripts, then the `OpenCode`
//! databases, in the same tables; what was searched is what cursors are bound to.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::search::catch_up::Caught;
use crate::search::error::SearchError;
use crate::search::transcripts::UnreadableTranscript;
use crate::search::transcripts::databases::catch_up_databases;
use crate::search::transcripts::files::{Scope, Searched, catch_up_lines};

/// Brings the index in `conn` up to the files of `scope`; the transcripts' own indexes are
/// kept in `index_dir`.
pub(super) fn reconcile(
    conn: &mut Connection,
    scope: &Scope,
    index_dir: &Path,
    settled: Duration,
) -> Result<(Caught, Searched), SearchError> {
    let lines = catch_up_lines(conn, scope, index_dir, settled)?;
    // The databases second, in the same tables: its total counts every file.
    let dbs = catch_up_databases(conn, &scope.databases, &scope.roots, index_dir, settled)?;
    let caught = Caught {
        read: lines.caught.read + dbs.caught.read,
        changed: lines.caught.changed || dbs.caught.changed,
    };
    let mut searched = Searched::default();
    // FNV-1a over (key, generation) of every file searched, in order.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let states = (scope.files.iter().zip(lines.files)).chain(scope.databases.iter().zip(dbs.files));
    for (path, state) in states {
        let Some(state) = state else {
            continue;
        };
        for b in state
            .key
            .to_le_bytes()
            .iter()
            .chain(&state.generation.to_le_bytes())
        {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        searched.keys.push(state.key);
        if let Some((code, message)) = state.error {
            searched.unreadable.push(UnreadableTranscript {
                file: path.clone(),
                error: code,
                message,
            });
        }
    }
    searched.all = searched.keys.len() == dbs.total;
    searched.state = format!("{}-{hash:016x}", searched.keys.len());
    searched.unreadable.extend(scope.skipped.iter().cloned());
    Ok((caught, searched))
}
