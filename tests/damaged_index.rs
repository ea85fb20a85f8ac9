//! Damaged index files: opening them must never panic or abort, must give the oracle's
//! answers, and a damaged row, once found, must be rebuilt rather than met again. Some files
//! are the fuzzer's findings (`fuzz/regressions/index_file`, written in index format 1, so they
//! also exercise a rebuild from an old format whose file is damaged).
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agentlog::index::{Index, IndexError, IndexOptions, IndexOutcome};
use common::{Agent, assert_index_matches_oracle};

fn agent_from(log: &[u8], index: &[u8]) -> Agent {
    let agent = Agent::with_log(log);
    std::fs::write(&agent.paths.index, index).unwrap();
    agent
}

macro_rules! regression {
    ($name:literal) => {
        agent_from(
            include_bytes!(concat!(
                "../fuzz/regressions/index_file/",
                $name,
                ".files/events.jsonl"
            )),
            include_bytes!(concat!(
                "../fuzz/regressions/index_file/",
                $name,
                ".files/events.index.redb"
            )),
        )
    };
}

/// Opens, queries every boundary, and if a row was damaged, opens again: the second time
/// everything must be sound.
fn open_query_reopen(agent: &Agent) {
    let index =
        Index::open(&agent.paths, &IndexOptions::default()).expect("open never fails on damage");
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    let index = Index::open(&agent.paths, &IndexOptions::default()).expect("reopen");
    assert_index_matches_oracle(&index, &agent.log());
    common::assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
}

/// The commit marker beside an agent's index (docs/FORMAT.md, "Commit marker").
fn commit_marker(agent: &Agent) -> std::path::PathBuf {
    agent.paths.index.with_extension("redb.committing")
}

/// `agentlog status AGENT --json` in a process of its own (some damage aborts it), committing
/// any new lines (not folding them in memory), so a grown log makes it write to the index.
fn status_process(agent: &Agent) -> std::process::Output {
    common::agentlog(&[
        "status",
        agent.path().to_str().unwrap(),
        "--json",
        "--max-memory-tail",
        "0",
    ])
}

/// The files under `fuzz/regressions/index_file/*.files` are index files in this build's
/// format whose damage reaches one path (found by a sweep of single-bit flips, since the
/// fuzzer's own inputs patch a freshly built index and hit other bytes once the format
/// changes). A file in an older format is only rebuilt for its format and tests nothing:
/// regenerate it (docs/FUZZING.md, "Regression files").
fn assert_rebuilt_for_damage(index: &Index, damage: &str) {
    match index.outcome() {
        IndexOutcome::Rebuilt {
            reason: agentlog::index::StaleReason::Unreadable { detail },
            ..
        } => assert!(detail.contains(damage), "{detail}"),
        other => panic!("expected a rebuild for damage ({damage}), got {other:?}"),
    }
}

/// The open found the tables disagreeing with the meta record and rebuilt (`what` says which
/// damage, for the failure message).
fn assert_rebuilt_inconsistent(index: &Index, what: &str) {
    assert!(
        matches!(
            index.outcome(),
            IndexOutcome::Rebuilt {
                reason: agentlog::index::StaleReason::Inconsistent { .. },
                ..
            }
        ),
        "{what}: {:?}",
        index.outcome()
    );
}

#[test]
fn a_table_with_a_damaged_type_record_is_rebuilt_not_stepped_around() {
    let agent = regression!("table-type-damage-not-rebuilt");
    let index = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    assert_rebuilt_for_damage(&index, "has key type");
    drop(index);
    open_query_reopen(&agent);
}

#[test]
fn a_panic_inside_redb_while_committing_does_not_abort() {
    // redb panics inside its commit (reading its freed-page bookkeeping) on this file; with
    // debug assertions it stops at one earlier.
    let agent = regression!("commit-double-panic-aborts");
    assert_rebuilt_for_damage(&agent.open_index_committing(), "panicked");
    open_query_reopen(&agent);
}

#[test]
fn a_panic_inside_redb_while_catching_up_does_not_abort() {
    // redb panics while the catch-up's blocks are inserted, before its commit; with debug
    // assertions it stops at one earlier.
    let agent = regression!("catch-up-insert-panics");
    assert_rebuilt_for_damage(&agent.open_index_committing(), "panicked");
    open_query_reopen(&agent);
}

#[test]
fn a_damaged_row_found_by_a_query_is_rebuilt() {
    let agent = Agent::with_log(&common::lines(&[
        common::molt(1.0, 1, "agent"),
        common::token(2.0, 5, 1, 0),
        common::molt(3.0, 2, "agent"),
        common::molt(4.0, 3, "system"),
        common::token(5.0, 7, 1, 0),
    ]));
    drop(agent.open_index());
    // The open-time structure check reads only the latest boundary row.
    damage_the_first_boundary_row(&agent);
    let first = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    assert_eq!(
        first.outcome(),
        &IndexOutcome::Fresh,
        "the O(1) open cannot see this row"
    );
    match first.boundaries() {
        Err(IndexError::Damaged { .. }) => {}
        other => panic!("the damaged row should be found: {other:?}"),
    }
    drop(first);
    // The reader that found the damage rebuilt the index.
    let second = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    assert_eq!(second.outcome(), &IndexOutcome::Fresh);
    assert_index_matches_oracle(&second, &agent.log());
}

/// Flips one byte of the index between two writers' runs and keeps writing. Whatever the
/// damage does to redb (errors, or panics inside it), the writer must keep appending, heal
/// the index from the log at its next commit, and close cleanly: a commit on a damaged file
/// rebuilds instead of returning an error, and the rebuild does not find the file locked by the
/// handle leaked after redb's panic (`fuzz/regressions/log_ops/writer-*`).
#[test]
fn a_writer_heals_an_index_damaged_between_its_runs() {
    use agentlog::index::{CommitPolicy, Writer, WriterOptions};
    use agentlog::log::SyncPolicy;
    use std::time::Duration;

    // Small commits meet the damage inside `append`; large ones in the explicit commit.
    let options = |rows| WriterOptions {
        sync: SyncPolicy::None,
        commit: CommitPolicy {
            rows,
            bytes: 8 << 20,
            interval: Duration::from_hours(1),
        },
        ..WriterOptions::default()
    };
    let first = [
        common::token(1.0, 10, 2, 0),
        common::molt(2.0, 1, "agent"),
        common::token(3.0, 7, 1, 1),
    ];
    let index_len = {
        let agent = Agent::new();
        let mut writer = Writer::open(&agent.paths, options(3)).unwrap();
        writer.append_batch_json(&first).unwrap();
        writer.close().unwrap();
        usize::try_from(std::fs::metadata(&agent.paths.index).unwrap().len()).unwrap()
    };
    assert!(index_len > 0);
    // Dense over the header and first pages, where redb's allocator state lives, sparse
    // after; plus the fuzzer's position.
    let mut positions: Vec<usize> = (0..index_len.min(4096)).step_by(29).collect();
    positions.extend((4096..index_len).step_by(4093));
    positions.push(2_684_395_680 % index_len);
    let cases = positions
        .iter()
        .flat_map(|&at| [(at, 0x01u8, 3usize), (at, 0xff, 1000)]);
    for (at, flip, rows) in cases {
        let agent = Agent::new();
        let mut writer = Writer::open(&agent.paths, options(rows)).unwrap();
        writer.append_batch_json(&first).unwrap();
        writer.close().unwrap();
        let mut index = std::fs::read(&agent.paths.index).unwrap();
        let len = index.len();
        index[at % len] ^= flip;
        std::fs::write(&agent.paths.index, &index).unwrap();

        let mut writer = Writer::open(&agent.paths, options(rows))
            .unwrap_or_else(|e| panic!("byte {at} ^ {flip:#x}: open: {e}"));
        for i in 0..4 {
            writer
                .append_json(common::token(10.0 + f64::from(i), 5, 1, 0).as_bytes())
                .unwrap_or_else(|e| panic!("byte {at} ^ {flip:#x}: append: {e}"));
        }
        writer
            .commit_index()
            .unwrap_or_else(|e| panic!("byte {at} ^ {flip:#x}: commit: {e}"));
        writer
            .close()
            .unwrap_or_else(|e| panic!("byte {at} ^ {flip:#x}: close: {e}"));
        let index = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
        assert_index_matches_oracle(&index, &agent.log());
        assert_eq!(agent.oracle().since().calls, 5, "byte {at} ^ {flip:#x}");
    }
}

/// A commit marker left beside the index means a process died while committing to it: the
/// next writable open must not write to that file again, and rebuilds the index instead.
#[test]
fn a_marker_left_by_a_dead_commit_makes_the_next_open_rebuild() {
    let agent = Agent::with_log(&common::synthetic(40, 3));
    drop(agent.open_index());
    let marker = commit_marker(&agent);
    std::fs::write(&marker, b"").unwrap();
    // Only a writable open acts on the marker: grow the log so the open must catch up.
    agent.append_raw(common::token(1e9, 5, 1, 0).as_bytes());
    let index = agent.open_index_committing();
    assert!(
        matches!(
            index.outcome(),
            IndexOutcome::Rebuilt {
                reason: agentlog::index::StaleReason::CommitInterrupted,
                ..
            }
        ),
        "{:?}",
        index.outcome()
    );
    assert!(!marker.exists(), "the marker goes with the file it marked");
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    let index = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    assert_eq!(index.outcome(), &IndexOutcome::Fresh);
}

/// An index file whose damage makes redb (built without debug assertions) panic twice inside
/// one commit, a drop while unwinding: that aborts the process, which no `catch_unwind` can
/// contain. The commit marker it leaves makes the next process rebuild the index instead of
/// aborting again. With debug assertions (plain `cargo test`) redb stops at an assertion
/// first, a single panic that is contained; `cargo test --release` exercises the abort.
/// The file was found by sweeping single-bit flips over an index whose log then grew (so the
/// open commits a catch-up).
#[test]
fn an_index_that_aborts_its_process_is_rebuilt_by_the_next_one() {
    // Damage that makes redb panic twice inside its commit, and damage that does so while the
    // rows are being inserted, before the commit: the marker must cover both (the second
    // once aborted every process that opened the file; found by the `index_file` fuzzer).
    aborts_once_then_rebuilds(
        include_bytes!("data/redb-aborts-in-commit/events.jsonl"),
        include_bytes!("data/redb-aborts-in-commit/events.index.redb"),
    );
    aborts_once_then_rebuilds(
        include_bytes!("data/redb-aborts-writing-rows/events.jsonl"),
        include_bytes!("data/redb-aborts-writing-rows/events.index.redb"),
    );
}

fn aborts_once_then_rebuilds(log: &[u8], index: &[u8]) {
    use std::os::unix::process::ExitStatusExt;

    let agent = agent_from(log, index);
    let marker = commit_marker(&agent);
    let first = status_process(&agent);
    // Release builds abort on both files; with debug assertions redb may stop earlier.
    let aborted = first.status.signal() == Some(6);
    if aborted {
        assert!(marker.exists(), "the aborted commit left its marker");
    } else if cfg!(debug_assertions) {
        assert!(first.status.success(), "{first:?}");
    } else {
        panic!(
            "redb no longer aborts on this file (redb upgraded, or the index format changed); \
             the test needs a new one (AGENTLOG_SWEEP_KEEP in the sweep below): {first:?}"
        );
    }

    let second = status_process(&agent);
    assert!(second.status.success(), "{second:?}");
    let v = common::json(&second);
    assert_eq!(v["tier"], "index", "{v}");
    if aborted {
        assert_eq!(v["index_outcome"], "rebuilt", "{v}");
        assert_eq!(v["index"]["reason"], "commit_interrupted", "{v}");
    }
    assert!(!marker.exists());
    let oracle = agent.oracle();
    assert_eq!(v["api_calls"], oracle.since().calls, "{v}");
    assert_eq!(
        v["input_tokens"],
        u64::try_from(oracle.since().input).unwrap(),
        "{v}"
    );
    let index = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    // Every complete line is indexed; a torn final line does not make the index less fresh.
    assert_eq!(index.outcome(), &IndexOutcome::Fresh);
    assert_index_matches_oracle(&index, &agent.log());
}

/// The sweep behind docs/RELIABILITY.md's row on damage met in commits: every byte in the range
/// `AGENTLOG_SWEEP_BYTES` (`FROM..TO`) of a real index, flipped by 0x01 and by 0x80, with the
/// log grown by one event so every open must commit a catch-up. Each open is a separate
/// `agentlog status` process, because some flips make redb abort the process; the next process
/// must then rebuild, and every answer must equal the oracle's. By default it sweeps the page
/// after redb's header (4096..4352, where the first aborting flips are); the full sweep takes a
/// few minutes in release:
/// `AGENTLOG_SWEEP_BYTES=0..24000 cargo test --release --test damaged_index sweep -- --nocapture`.
/// `AGENTLOG_SWEEP_GROW=N` grows the log by N events instead of one (a larger catch-up
/// allocates while its rows are inserted). `AGENTLOG_SWEEP_KEEP=DIR` keeps each aborting pair
/// (log, index) in `DIR/BYTE-FLIP/`: the abort test's data, when a format change makes its
/// files stale.
#[test]
fn sweep_single_bit_flips_through_the_cli() {
    use agentlog::index::{Writer, WriterOptions};
    use std::os::unix::process::ExitStatusExt;

    let range = std::env::var("AGENTLOG_SWEEP_BYTES").unwrap_or_else(|_| "4096..4352".into());
    let (from, to) = range
        .split_once("..")
        .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
        .expect("AGENTLOG_SWEEP_BYTES is FROM..TO");
    let events: Vec<String> = (0..40u32)
        .map(|i| {
            if i % 7 == 3 {
                common::molt(f64::from(i), u64::from(i / 7 + 1), "agent")
            } else {
                common::token(f64::from(i), 10, 2, 0)
            }
        })
        .collect();
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, WriterOptions::default()).unwrap();
    writer.append_batch_json(&events).unwrap();
    writer.close().unwrap();
    let base = std::fs::read(&agent.paths.index).unwrap();
    let mut log = agent.log();
    let grow: u32 = std::env::var("AGENTLOG_SWEEP_GROW").map_or(1, |n| n.parse().expect("a count"));
    for i in 0..grow {
        log.extend_from_slice(common::token(99.0 + f64::from(i), 1, 1, 0).as_bytes());
    }
    let oracle = common::oracle::Oracle::of(&log);
    let marker = commit_marker(&agent);

    let (mut runs, mut aborts) = (0u64, Vec::new());
    let positions = from.min(base.len())..to.min(base.len());
    assert!(!positions.is_empty(), "nothing to sweep in {range}");
    for at in positions.clone() {
        for flip in [0x01u8, 0x80] {
            let mut index = base.clone();
            index[at] ^= flip;
            std::fs::write(&agent.paths.index, &index).unwrap();
            std::fs::write(&agent.paths.log, &log).unwrap();
            let _ = std::fs::remove_file(&marker);
            let mut out = status_process(&agent);
            runs += 1;
            if out.status.signal() == Some(6) {
                aborts.push((at, flip));
                if let Ok(keep) = std::env::var("AGENTLOG_SWEEP_KEEP") {
                    let dir = std::path::Path::new(&keep).join(format!("{at}-{flip:#x}"));
                    std::fs::create_dir_all(&dir).unwrap();
                    std::fs::write(dir.join("events.jsonl"), &log).unwrap();
                    std::fs::write(dir.join("events.index.redb"), &index).unwrap();
                }
                out = status_process(&agent);
                runs += 1;
            }
            assert!(out.status.success(), "byte {at} ^ {flip:#x}: {out:?}");
            let v = common::json(&out);
            let what = format!("byte {at} ^ {flip:#x}: {v}");
            assert_eq!(v["tier"], "index", "{what}");
            assert_eq!(v["api_calls"], oracle.since().calls, "{what}");
            assert_eq!(
                v["input_tokens"],
                u64::try_from(oracle.since().input).unwrap(),
                "{what}"
            );
            let latest = oracle.boundaries.last().expect("the log molts");
            assert_eq!(v["boundary_offset"], latest.offset, "{what}");
            assert_eq!(
                v["molt_count"],
                latest.molt_count.expect("verifiable"),
                "{what}"
            );
        }
    }
    println!(
        "sweep: {} flips, {runs} processes, {} aborted in redb (each rebuilt by the next): {aborts:?}",
        2 * positions.len(),
        aborts.len()
    );
}

/// The marker of a build that ran without syncs (docs/FORMAT.md, "Builds without syncs"), left beside a file that a
/// power cut tore (whole, with pages zeroed as blocks that never reached the disk read, or cut
/// short): a read-only open refuses the file rather than believe it, and the next writable
/// open rebuilds it.
#[test]
fn an_unsynced_build_marker_left_behind_is_never_believed() {
    for torn in 0..4 {
        let agent = Agent::with_log(&common::synthetic(40, 5));
        drop(agent.open_index());
        let marker = agent.paths.index.with_extension("redb.unsynced");
        assert!(!marker.exists(), "a finished build removes its marker");
        let mut file = std::fs::read(&agent.paths.index).unwrap();
        match torn {
            0 => {}
            // Every other 4 KiB page lost, or every page after the header.
            1 | 2 => {
                for (page, bytes) in file.chunks_mut(4096).enumerate().skip(1) {
                    if torn == 2 || page % 2 == 0 {
                        bytes.fill(0);
                    }
                }
            }
            _ => file.truncate(file.len() / 2),
        }
        std::fs::write(&agent.paths.index, &file).unwrap();
        std::fs::write(&marker, b"").unwrap();
        unsynced_marker_is_never_believed(&agent, &marker, torn == 0);
    }
}

/// A marker that names this boot is a build running now or one whose process died: the page
/// cache holds what redb wrote, so a read-only open uses the file, while the next open that
/// writes rebuilds it (the build may have aborted inside redb) and removes the marker.
#[test]
fn an_unsynced_marker_of_this_boot_is_read_and_the_next_writer_rebuilds() {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .expect("a Linux boot id (elsewhere no reader uses a marked file)");
    let agent = Agent::with_log(&common::synthetic(40, 5));
    drop(agent.open_index());
    let marker = agent.paths.index.with_extension("redb.unsynced");
    std::fs::write(&marker, boot.trim()).unwrap();
    let read_only = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    let index = Index::open(&agent.paths, &read_only).unwrap();
    assert!(
        matches!(index.outcome(), IndexOutcome::ReadOnly { .. }),
        "{:?}",
        index.outcome()
    );
    assert_eq!(index.watermark(), agent.log().len() as u64);
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    agent.append_raw(common::token(1.0e9, 7, 3, 1).as_bytes());
    let index = agent.open_index_committing();
    assert!(
        matches!(
            index.outcome(),
            IndexOutcome::Rebuilt {
                reason: agentlog::index::StaleReason::CommitInterrupted,
                ..
            }
        ),
        "{:?}",
        index.outcome()
    );
    assert!(!marker.exists(), "the rebuild removed the marker");
    assert_index_matches_oracle(&index, &agent.log());
}

/// `whole`: the file is intact, so only the marker can make the open rebuild it.
fn unsynced_marker_is_never_believed(agent: &Agent, marker: &std::path::Path, whole: bool) {
    let read_only = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    match Index::open(&agent.paths, &read_only) {
        Err(IndexError::Unavailable { detail, .. }) => {
            assert!(detail.contains("without syncs"), "{detail}");
        }
        Err(other) => panic!("unexpected error: {other:?}"),
        Ok(_) => panic!("a read-only open believed a possibly torn index"),
    }
    let index = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    // An intact file is rebuilt because of the marker; a torn one may already fail redb's own
    // open (then the reason says so). Either way it is never used as it is.
    match index.outcome() {
        IndexOutcome::Rebuilt {
            reason: agentlog::index::StaleReason::CommitInterrupted,
            ..
        } => {}
        IndexOutcome::Rebuilt {
            reason: agentlog::index::StaleReason::Unreadable { .. },
            ..
        } if !whole => {}
        other => panic!("a possibly torn index was not rebuilt: {other:?}"),
    }
    assert!(
        !marker.exists(),
        "the rebuild finished and removed its own marker"
    );
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    // With the marker gone, the read-only open uses the file again.
    let index = Index::open(&agent.paths, &read_only).unwrap();
    assert_eq!(index.watermark(), agent.log().len() as u64);
    assert_index_matches_oracle(&index, &agent.log());
}

/// A row whose key changed (a flipped bit under redb's page checksum, which redb verifies only
/// while repairing), whose plain-integer value points elsewhere (block starts, seq runs, type
/// masks carry no checksum), or whose valid value sits under another block's key, passes
/// every check on open. Comparing every table with a rebuild (`verify --deep`) finds
/// it, names the table, and writes nothing beside the log.
#[test]
fn a_moved_row_is_found_by_comparing_with_a_rebuild() {
    for table in ["blocks", "block_starts", "seq_runs", "type_blocks"] {
        let agent = Agent::with_log(&common::synthetic(200, 7));
        drop(agent.open_index());
        move_a_row(&agent, table);
        let before = std::fs::read(&agent.paths.index).unwrap();
        let options = IndexOptions {
            read_only: true,
            ..IndexOptions::default()
        };
        let index = Index::open(&agent.paths, &options).unwrap();
        assert!(
            matches!(index.outcome(), IndexOutcome::ReadOnly { .. }),
            "{table}: the open cannot see it: {:?}",
            index.outcome()
        );
        let tables = index.compare_with_rebuild().unwrap();
        let differing: Vec<&str> = tables
            .iter()
            .filter(|t| !t.matches())
            .map(|t| t.table)
            .collect();
        assert_eq!(differing, [table], "{tables:?}");
        drop(index);
        let out = common::agentlog(&["verify", agent.path().to_str().unwrap(), "--deep", "--json"]);
        assert_eq!(out.status.code(), Some(1), "{table}");
        let report = common::json(&out);
        let failed: Vec<&str> = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["ok"] == false)
            .map(|c| c["detail"].as_str().unwrap())
            .collect();
        assert_eq!(failed.len(), 1, "{report}");
        assert!(failed[0].starts_with(&format!("{table}: ")), "{report}");
        assert_eq!(
            std::fs::read(&agent.paths.index).unwrap(),
            before,
            "{table}: verifying wrote to the index"
        );
        // A writable open still cannot see it; the next rebuild clears it.
        drop(Index::open(&agent.paths, &IndexOptions::default()).unwrap());
    }
}

/// Changes one row of `table` in a way no check on open can see: swaps the first two blocks
/// (their values carry valid checksums), moves the first block start to the next offset,
/// points the first seq run one event further, or moves the first type mask to another block.
fn move_a_row(agent: &Agent, table: &str) {
    use agentlog::index::schema::{BLOCK_STARTS, BLOCKS, SEQ_RUNS, TYPE_BLOCKS};
    use redb::ReadableTable;
    edit_index(agent, |txn| match table {
        "blocks" => {
            let mut rows = txn.open_table(BLOCKS).unwrap();
            let first = rows.get(0).unwrap().unwrap().value().to_vec();
            let second = rows.get(1).unwrap().unwrap().value().to_vec();
            rows.insert(0, second.as_slice()).unwrap();
            rows.insert(1, first.as_slice()).unwrap();
        }
        "block_starts" => {
            let mut rows = txn.open_table(BLOCK_STARTS).unwrap();
            let (offset, number) = {
                let (k, v) = rows.first().unwrap().unwrap();
                (k.value(), v.value())
            };
            rows.remove(offset).unwrap();
            rows.insert(offset + 1, number).unwrap();
        }
        "seq_runs" => {
            let mut rows = txn.open_table(SEQ_RUNS).unwrap();
            let (seq, (event, len)) = {
                let (k, v) = rows.first().unwrap().unwrap();
                (k.value(), v.value())
            };
            rows.insert(seq, (event + 1, len)).unwrap();
        }
        "type_blocks" => {
            let mut rows = txn.open_table(TYPE_BLOCKS).unwrap();
            let ((kind, number), mask) = {
                let (k, v) = rows.first().unwrap().unwrap();
                (k.value(), v.value())
            };
            rows.remove((kind, number)).unwrap();
            rows.insert((kind, number + 1000), mask).unwrap();
        }
        other => panic!("no such table {other}"),
    });
}

/// A read-only reader (`verify`) that reads a damaged row reports it and leaves the file as
/// it is; the next reader free to write rebuilds it.
#[test]
fn a_read_only_reader_reports_a_damaged_row_and_writes_nothing() {
    let agent = Agent::with_log(&common::lines(&[
        common::molt(1.0, 1, "agent"),
        common::token(2.0, 5, 1, 0),
        common::molt(3.0, 2, "agent"),
        common::token(5.0, 7, 1, 0),
    ]));
    drop(agent.open_index());
    damage_the_first_boundary_row(&agent);
    let before = std::fs::read(&agent.paths.index).unwrap();
    let options = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    let reader = Index::open(&agent.paths, &options).unwrap();
    assert!(matches!(
        reader.boundaries(),
        Err(IndexError::Damaged { .. })
    ));
    drop(reader);
    assert_eq!(std::fs::read(&agent.paths.index).unwrap(), before);
    let out = common::agentlog(&["verify", agent.path().to_str().unwrap(), "--deep", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&agent.paths.index).unwrap(), before);
    // A reader free to write rebuilds it when it meets the row.
    let writer_free = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    assert!(writer_free.boundaries().is_err());
    drop(writer_free);
    let healed = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    assert_index_matches_oracle(&healed, &agent.log());
}

/// Keys and values read back from a damaged index are arithmetic operands too: a block moved
/// under the largest key, a seq run pointing past the last event ordinal, or block totals at
/// the top of their range must make the index inconsistent or damaged, never overflow (a block
/// number can make the open's structure check overflow). Debug builds check overflow, so each
/// would panic here.
#[test]
fn extreme_keys_and_values_in_the_index_are_damage_not_an_overflow() {
    use agentlog::index::schema::{BLOCKS, SEQ_RUNS};
    use redb::ReadableTable;
    let log = common::synthetic(60, 3);
    // A block moved under the largest key: the structure check rebuilds.
    let agent = Agent::with_log(&log);
    drop(agent.open_index());
    edit_index(&agent, |txn| {
        let mut blocks = txn.open_table(BLOCKS).unwrap();
        let (key, value) = {
            let (k, v) = blocks.last().unwrap().unwrap();
            (k.value(), v.value().to_vec())
        };
        blocks.remove(key).unwrap();
        blocks.insert(u64::MAX, value.as_slice()).unwrap();
    });
    let index = agent.open_index_committing();
    assert_rebuilt_inconsistent(&index, "a block moved under the largest key");
    assert_index_matches_oracle(&index, &log);
    drop(index);
    // A seq run whose event ordinal is the largest there is: a read through it is damage.
    edit_index(&agent, |txn| {
        let mut runs = txn.open_table(SEQ_RUNS).unwrap();
        let (start, len) = {
            let (k, v) = runs.first().unwrap().unwrap();
            (k.value(), v.value().1)
        };
        runs.insert(start, (u64::MAX, len)).unwrap();
    });
    let options = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    let reader = Index::open(&agent.paths, &options).unwrap();
    assert!(matches!(
        reader.seq_offsets(0, u64::MAX),
        Err(IndexError::Damaged { .. })
    ));
    assert!(matches!(
        reader.lines_for_seqs(1, 3),
        Err(IndexError::Damaged { .. })
    ));
}

/// Type names carry no crc of their own: a name changed, two names swapped or an id moved must
/// make a writable open rebuild (their sum in the meta record: docs/FORMAT.md, "The meta record") and a
/// read-only one refuse, and a type filter must never answer with another type's events, even
/// after a catch-up on a moved id.
#[test]
fn a_damaged_type_name_is_rebuilt_never_believed() {
    use agentlog::index::schema::TYPES;
    use redb::{ReadableTable, ReadableTableMetadata};
    type Edit<'a> = (&'a str, &'a dyn Fn(&redb::WriteTransaction));
    fn name(txn: &redb::WriteTransaction, id: u32) -> String {
        let table = txn.open_table(TYPES).unwrap();
        table.get(id).unwrap().unwrap().value().to_owned()
    }
    let renamed = |txn: &redb::WriteTransaction| {
        let changed = format!("x{}", &name(txn, 0)[1..]);
        txn.open_table(TYPES)
            .unwrap()
            .insert(0, changed.as_str())
            .unwrap();
    };
    let swapped = |txn: &redb::WriteTransaction| {
        let (first, second) = (name(txn, 0), name(txn, 1));
        let mut table = txn.open_table(TYPES).unwrap();
        table.insert(0, second.as_str()).unwrap();
        table.insert(1, first.as_str()).unwrap();
    };
    let moved = |txn: &redb::WriteTransaction| {
        let first = name(txn, 0);
        let mut table = txn.open_table(TYPES).unwrap();
        let count = u32::try_from(table.len().unwrap()).unwrap();
        table.remove(0).unwrap();
        table.insert(count, first.as_str()).unwrap();
    };
    let edits: [Edit; 3] = [
        ("renamed", &renamed),
        ("swapped", &swapped),
        ("moved", &moved),
    ];
    let log = common::synthetic(60, 3);
    let kinds = common::oracle::Oracle::of(&log).kinds().len();
    assert!(kinds >= 3, "{kinds} types: too few to swap and move");
    for (what, edit) in edits {
        let agent = Agent::with_log(&log);
        drop(agent.open_index());
        edit_index(&agent, edit);
        let read_only = IndexOptions {
            read_only: true,
            ..IndexOptions::default()
        };
        assert!(
            matches!(
                Index::open(&agent.paths, &read_only),
                Err(IndexError::StaleReadOnly { .. })
            ),
            "{what}: a read-only open used it"
        );
        let index = agent.open_index_committing();
        assert_rebuilt_inconsistent(&index, what);
        // Every type filter (offsets, last, lines) among the rest.
        assert_index_matches_oracle(&index, &log);
    }
}

/// A file whose meta table is gone while the other tables remain (what a damaged table
/// directory can leave) is rebuilt from an empty file, not built on top of the leftover rows:
/// the fuzzer found a build that kept them and counted every seq it wrote as a duplicate.
#[test]
fn tables_without_a_meta_record_are_rebuilt_not_built_upon() {
    let agent = Agent::with_log(&common::synthetic(50, 4));
    drop(agent.open_index());
    edit_index(&agent, |txn| {
        assert!(txn.delete_table(agentlog::index::schema::META).unwrap());
    });
    let index = agent.open_index_committing();
    assert!(
        matches!(index.outcome(), IndexOutcome::Rebuilt { .. }),
        "{:?}",
        index.outcome()
    );
    assert_eq!(index.duplicate_seqs(), 0);
    assert_index_matches_oracle(&index, &agent.log());
    for table in index.compare_with_rebuild().unwrap() {
        assert!(table.matches(), "{table:?}");
    }
}

/// Changes the index file behind agentlog's back, in one redb commit (so redb's own checksums
/// stay valid: what is left is damage only agentlog's checks can see).
fn edit_index(agent: &Agent, edit: impl FnOnce(&redb::WriteTransaction)) {
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .create(&agent.paths.index)
        .unwrap();
    let txn = db.begin_write().unwrap();
    edit(&txn);
    txn.commit().unwrap();
}

/// Flips the first byte of the first boundary row's value (its crc no longer matches).
fn damage_the_first_boundary_row(agent: &Agent) {
    use redb::ReadableTable;
    edit_index(agent, |txn| {
        let mut table = txn.open_table(agentlog::index::schema::BOUNDARIES).unwrap();
        let mut row = table.get(1).unwrap().unwrap().value().to_vec();
        row[0] ^= 0xff;
        table.insert(1, row.as_slice()).unwrap();
    });
}
