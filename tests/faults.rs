//! I/O faults on the log and on the index (short writes, a full disk, I/O errors): the caller
//! gets a clear error, the acknowledged prefix stays intact, and the next open recovers.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentlog::generation::{GenerationRequest, Tier, current_generation_at};
use agentlog::index::{CommitPolicy, IndexError, Writer, WriterOptions};
use agentlog::log::{FaultKind, FaultPlan, Faults, LogError, SyncPolicy};
use common::{Agent, assert_index_matches_oracle, assert_tiers_match_oracle, molt, token};

fn writer(agent: &Agent, sync: SyncPolicy, faults: &Arc<Faults>) -> Writer {
    let mut options = WriterOptions {
        sync,
        ..WriterOptions::default()
    };
    options.index.faults = Some(Arc::clone(faults));
    options.commit = CommitPolicy {
        rows: 1,
        bytes: 1 << 20,
        interval: Duration::from_hours(1),
    };
    Writer::open(&agent.paths, options).expect("open writer")
}

fn event(i: u32) -> String {
    token(f64::from(i), 100 + u64::from(i), 1, 0)
        .trim()
        .to_owned()
}

fn os_error(e: &IndexError) -> Option<i32> {
    match e {
        IndexError::Log(LogError::Write { source, .. }) => source.raw_os_error(),
        _ => None,
    }
}

#[test]
fn short_write_on_a_full_disk_is_rolled_back_and_reported() {
    let agent = Agent::new();
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::Fsync, &faults);
    w.append_json(event(0).as_bytes()).unwrap();
    let before = agent.log();
    let state = w.state().clone();
    faults.set(|p| p.log_write_budget = Some(30));
    let batch = [event(1), event(2), event(3)];
    let err = w.append_batch_json(&batch).unwrap_err();
    assert_eq!(os_error(&err), Some(28), "ENOSPC reaches the caller: {err}");
    assert!(matches!(
        err,
        IndexError::Log(LogError::Write {
            rolled_back: true,
            ..
        })
    ));
    assert_eq!(agent.log(), before, "the short write was taken back");
    assert_eq!(w.state(), &state, "nothing of the batch was folded");
    faults.set(|p| p.log_write_budget = None);
    w.append_batch_json(&batch).unwrap();
    w.close().unwrap();
    assert_index_matches_oracle(&agent.open_index(), &agent.log());
    assert_eq!(agent.oracle().since().calls, 4);
}

#[test]
fn io_error_on_fsync_rolls_the_append_back() {
    let agent = Agent::new();
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::Fsync, &faults);
    w.append_json(event(0).as_bytes()).unwrap();
    let before = agent.log();
    faults.set(|p| {
        p.log_sync_fails = true;
        p.kind = FaultKind::Io;
    });
    let err = w.append_json(event(1).as_bytes()).unwrap_err();
    assert_eq!(os_error(&err), Some(5), "EIO reaches the caller: {err}");
    assert_eq!(
        agent.log(),
        before,
        "an append whose fsync failed is not left behind"
    );
    faults.set(|p| p.log_sync_fails = false);
    w.append_json(event(2).as_bytes()).unwrap();
    w.close().unwrap();
    assert_tiers_match_oracle(&agent.paths, Some(0), 8 << 20);
    assert_eq!(agent.oracle().since().calls, 2);
}

#[test]
fn a_fragment_that_cannot_be_removed_is_terminated_before_the_next_event() {
    let agent = Agent::new();
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::Fsync, &faults);
    w.append_json(event(0).as_bytes()).unwrap();
    let acknowledged = agent.log();
    faults.set(|p| {
        p.log_write_budget = Some(20);
        p.log_truncate_fails = true;
        p.kind = FaultKind::Io;
    });
    let err = w.append_json(event(1).as_bytes()).unwrap_err();
    assert!(
        matches!(
            err,
            IndexError::Log(LogError::Write {
                rolled_back: false,
                ..
            })
        ),
        "{err}"
    );
    let log = agent.log();
    assert!(
        log.starts_with(&acknowledged),
        "the acknowledged prefix is intact"
    );
    assert_eq!(
        log.len(),
        acknowledged.len() + 20,
        "the short write is still there"
    );
    faults.set(|p| *p = FaultPlan::default());
    w.append_json(event(2).as_bytes()).unwrap();
    w.close().unwrap();
    // The fragment became one invalid line of its own; the new event did not merge with it.
    let oracle = agent.oracle();
    assert_eq!((oracle.invalid_lines, oracle.since().calls), (1, 2));
    assert_index_matches_oracle(&agent.open_index(), &agent.log());
}

#[test]
fn a_failing_index_never_fails_an_append_and_is_resynchronised() {
    let agent = Agent::new();
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::Fsync, &faults);
    w.append_json(event(0).as_bytes()).unwrap();
    faults.set(|p| {
        p.index_write_budget = Some(0);
        p.kind = FaultKind::NoSpace;
    });
    // Each append is due for an index commit (rows: 1); the commit fails, the append does not.
    for i in 1..5 {
        w.append_json(event(i).as_bytes()).unwrap();
    }
    w.append_json(molt(9.0, 1, "system").trim().as_bytes())
        .unwrap();
    assert!(
        w.commit_index().is_err(),
        "an explicit commit reports the index failure"
    );
    assert_eq!(w.state().since_latest().api_calls, 0);
    assert_eq!(
        w.state().totals.api_calls,
        5,
        "the writer's own answers stay right"
    );
    // Meanwhile another reader still answers right: it steps down to a scan while the index
    // awaits its writer's repair, or, when the writer has let go of a handle it could not
    // reopen, repairs and rebuilds the index itself on its healthy path.
    let current = current_generation_at(&agent.paths, &GenerationRequest::latest()).unwrap();
    assert_eq!(
        common::oracle::OTotals::from(current.totals),
        agent.oracle().since()
    );
    faults.set(|p| p.index_write_budget = None);
    w.commit_index().unwrap();
    w.close().unwrap();
    let index = agent.open_index();
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn index_sync_errors_are_reported_and_recovered() {
    let agent = Agent::new();
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::None, &faults);
    for i in 0..10 {
        w.append_json(event(i).as_bytes()).unwrap();
    }
    faults.set(|p| {
        p.index_sync_fails = true;
        p.kind = FaultKind::Io;
    });
    w.append_json(event(10).as_bytes()).unwrap();
    assert!(w.commit_index().is_err());
    // The writer dies without closing; the next open, on a healthy disk, recovers.
    drop(w);
    let index = agent.open_index();
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn a_reader_that_cannot_write_the_index_steps_down_and_still_answers() {
    let agent = Agent::with_log(&common::synthetic(300, 4));
    let faults = Arc::new(Faults::new(FaultPlan {
        index_write_budget: Some(2),
        kind: FaultKind::NoSpace,
        ..FaultPlan::default()
    }));
    let mut request = GenerationRequest::latest();
    request.index.faults = Some(faults);
    let current = current_generation_at(&agent.paths, &request).unwrap();
    assert_ne!(current.tier, Tier::Index);
    assert!(
        current.stepped_aside[0].reason.contains("No space left"),
        "{:?}",
        current.stepped_aside
    );
    assert_eq!(
        common::oracle::OTotals::from(current.totals),
        agent.oracle().since()
    );
    // With the disk healthy again the index is built.
    assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
}

/// A build of many commits runs its commits on a helper thread; a disk that fails partway
/// through (after more and more successful writes, and on syncs) gives the caller a typed
/// error or a good index, never a hang or a panic, and the next open on a healthy disk answers
/// right, catching up from the commits that did land when some did.
#[test]
fn a_disk_failing_during_a_build_on_two_threads_is_reported_and_recovered() {
    use agentlog::index::{Index, IndexOptions, IndexOutcome};
    let log = common::synthetic(400, 11);
    let (mut failures, mut resumed, mut built) = (0, 0, false);
    let mut plans: Vec<(Option<u64>, bool)> = vec![(None, true)];
    let mut budget = 1u64;
    while budget < 100_000 {
        plans.push((Some(budget), false));
        budget = budget * 5 / 4 + 1;
    }
    for (budget, sync_fails) in plans {
        let agent = Agent::with_log(&log);
        let faults = Arc::new(Faults::new(FaultPlan {
            index_write_budget: budget,
            index_sync_fails: sync_fails,
            kind: FaultKind::Io,
            ..FaultPlan::default()
        }));
        let options = IndexOptions {
            // About 30 commits for this log, so the build takes the two-thread path.
            commit_bytes: 8 << 10,
            two_threads: true,
            faults: Some(Arc::clone(&faults)),
            ..IndexOptions::default()
        };
        match Index::open(&agent.paths, &options) {
            Ok(index) => {
                assert_index_matches_oracle(&index, &log);
                built = true;
            }
            Err(e) => {
                failures += 1;
                assert!(
                    matches!(
                        e,
                        IndexError::Io { .. }
                            | IndexError::Storage { .. }
                            | IndexError::Damaged { .. }
                            | IndexError::Unavailable { .. }
                    ),
                    "budget {budget:?}, sync fails {sync_fails}: {e:?}"
                );
            }
        }
        let index = agent.open_index();
        assert_index_matches_oracle(&index, &log);
        if matches!(index.outcome(), IndexOutcome::CaughtUp { .. }) {
            resumed += 1;
        }
        if built {
            break;
        }
    }
    assert!(
        built,
        "no write budget was large enough for the whole build"
    );
    assert!(failures > 0, "no injected fault reached the build");
    assert!(resumed > 0, "no failure came after some commits had landed");
}

/// redb panics on some damaged files, inside a write or a commit. Injected here as a panic in
/// the storage layer after more and more successful writes, on one thread and on two: the
/// panic is contained wherever it happens (the open returns a typed error or a good index,
/// and the process neither aborts nor hangs), and the next open on a healthy disk is right.
#[test]
fn a_panic_inside_redb_is_contained_on_the_calling_and_the_helper_thread() {
    use agentlog::index::{Index, IndexOptions};
    let log = common::synthetic(400, 12);
    for two_threads in [true, false] {
        for budget in [0u64, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233] {
            let agent = Agent::with_log(&log);
            let faults = Arc::new(Faults::new(FaultPlan {
                index_write_budget: Some(budget),
                kind: FaultKind::Panic,
                ..FaultPlan::default()
            }));
            let options = IndexOptions {
                commit_bytes: 8 << 10,
                two_threads,
                faults: Some(Arc::clone(&faults)),
                ..IndexOptions::default()
            };
            match Index::open(&agent.paths, &options) {
                Ok(index) => assert_index_matches_oracle(&index, &log),
                Err(e) => assert!(
                    matches!(
                        e,
                        IndexError::Damaged { .. }
                            | IndexError::Storage { .. }
                            | IndexError::Unavailable { .. }
                    ),
                    "two_threads {two_threads}, budget {budget}: {e:?}"
                ),
            }
            let index = agent.open_index();
            assert_index_matches_oracle(&index, &log);
        }
    }
}

/// A writer's commits by policy run on its commit thread. A disk that fails there, or redb
/// panicking there, never fails an append; the writer's answers stay right, and once the disk
/// is healthy the next commit resynchronises the index with the log.
#[test]
fn failures_on_the_writers_commit_thread_never_fail_an_append() {
    for kind in [FaultKind::Panic, FaultKind::NoSpace, FaultKind::Io] {
        for budget in [0u64, 1, 2, 3, 5, 8, 13, 21, 34] {
            let agent = Agent::new();
            let faults = Arc::new(Faults::default());
            let mut w = writer(&agent, SyncPolicy::None, &faults);
            w.append_json(event(0).as_bytes()).unwrap();
            w.commit_index().unwrap();
            faults.set(|p| {
                p.index_write_budget = Some(budget);
                p.kind = kind;
            });
            // Every append is due for a commit (rows: 1), which goes to the commit thread.
            for i in 1..20 {
                w.append_json(event(i).as_bytes())
                    .unwrap_or_else(|e| panic!("{kind:?}, budget {budget}: append failed: {e}"));
            }
            assert_eq!(w.state().totals.api_calls, 20, "{kind:?}, budget {budget}");
            faults.set(|p| *p = FaultPlan::default());
            w.append_json(event(20).as_bytes()).unwrap();
            w.commit_index()
                .unwrap_or_else(|e| panic!("{kind:?}, budget {budget}: {e}"));
            w.close()
                .unwrap_or_else(|e| panic!("{kind:?}, budget {budget}: {e}"));
            let index = agent.open_index();
            assert!(
                matches!(index.outcome(), agentlog::index::IndexOutcome::Fresh),
                "{kind:?}, budget {budget}: {:?}",
                index.outcome()
            );
            assert_index_matches_oracle(&index, &agent.log());
        }
    }
}

/// The log is synced on the commit thread before the index may cover it: a failing sync there
/// stops that commit (the index never gets ahead of what is durable), and the next explicit
/// commit resynchronises the index.
#[test]
fn a_log_sync_failing_on_the_commit_thread_stops_that_commit() {
    use agentlog::index::{Index, IndexOptions, IndexOutcome};
    let agent = Agent::new();
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::None, &faults);
    w.append_json(event(0).as_bytes()).unwrap();
    w.commit_index().unwrap();
    let durable = w.durable_len();
    faults.set(|p| {
        p.log_sync_fails = true;
        p.kind = FaultKind::Io;
    });
    // Due for a commit (rows: 1): it goes to the commit thread, whose log sync fails.
    w.append_json(event(1).as_bytes()).unwrap();
    // Dropping the writer waits for that commit to land, and repairs nothing.
    drop(w);
    let read_only = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    let index = Index::open(&agent.paths, &read_only).unwrap();
    assert!(
        matches!(
            index.outcome(),
            IndexOutcome::ReadOnly { tail_events: 1, .. }
        ),
        "the event whose log sync failed was not committed to the index: {:?}",
        index.outcome()
    );
    drop(index);

    // Landing such a failure in `commit_index` resynchronises the index instead.
    let mut w = writer(&agent, SyncPolicy::None, &faults);
    w.append_json(event(2).as_bytes()).unwrap();
    w.commit_index().unwrap();
    assert!(
        w.durable_len() <= durable + event(1).len() as u64 + 1,
        "a failed sync made nothing more durable"
    );
    faults.set(|p| *p = FaultPlan::default());
    w.append_json(event(3).as_bytes()).unwrap();
    w.commit_index().unwrap();
    assert_eq!(w.durable_len(), agent.log().len() as u64);
    w.close().unwrap();
    let index = agent.open_index();
    assert!(matches!(index.outcome(), IndexOutcome::Fresh));
    assert_index_matches_oracle(&index, &agent.log());
}

/// redb panicking on the commit thread leaks that database handle, which keeps its file locked
/// for the rest of the process. A writer dropped right after (no commit lands the failure and
/// rebuilds) must not leave the next writer, or reader, waiting on that lock: the next open
/// finds no file and builds a fresh index.
#[test]
fn a_writer_dropped_after_a_panic_on_its_commit_thread_frees_the_index() {
    let agent = Agent::new();
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::None, &faults);
    w.append_json(event(0).as_bytes()).unwrap();
    w.commit_index().unwrap();
    faults.set(|p| {
        p.index_write_budget = Some(0);
        p.kind = FaultKind::Panic;
    });
    // Due for a commit (rows: 1): redb panics on the commit thread.
    w.append_json(event(1).as_bytes()).unwrap();
    drop(w);
    faults.set(|p| *p = FaultPlan::default());
    let mut options = WriterOptions {
        sync: SyncPolicy::None,
        ..WriterOptions::default()
    };
    options.index_wait = Duration::from_millis(200);
    let mut w =
        Writer::open(&agent.paths, options).expect("the index is not held by a leaked handle");
    w.append_json(event(2).as_bytes()).unwrap();
    w.close().unwrap();
    let index = agent.open_index();
    assert!(matches!(
        index.outcome(),
        agentlog::index::IndexOutcome::Fresh
    ));
    assert_index_matches_oracle(&index, &agent.log());
}

/// A writer that builds its index from scratch (a small log: without syncs, docs/FORMAT.md, "Builds without syncs")
/// syncs it before `open` returns: its marker is gone, and its later commits reach the disk
/// (an index sync failure fails the commit; it is not skipped).
#[test]
fn a_writers_build_from_scratch_is_synced_before_open_returns() {
    let agent = Agent::with_log(&common::synthetic(60, 7));
    let marker = agent.paths.index.with_extension("redb.unsynced");
    let faults = Arc::new(Faults::default());
    let mut w = writer(&agent, SyncPolicy::None, &faults);
    assert!(!marker.exists());
    faults.set(|p| {
        p.index_sync_fails = true;
        p.kind = FaultKind::Io;
    });
    w.append_json(event(1).as_bytes()).unwrap();
    assert!(
        w.commit_index().is_err(),
        "a commit after the build skipped its sync"
    );
    faults.set(|p| p.index_sync_fails = false);
    w.close().unwrap();
    assert_index_matches_oracle(&agent.open_index(), &agent.log());
}

/// The one sync that ends a build without syncs fails: the open reports the I/O error, the
/// marker stays, and the next open rebuilds the file instead of trusting it.
#[test]
fn a_failed_sync_at_the_end_of_an_unsynced_build_leaves_it_untrusted() {
    use agentlog::index::{Index, IndexOptions, IndexOutcome, StaleReason};
    let agent = Agent::with_log(&common::synthetic(60, 8));
    let marker = agent.paths.index.with_extension("redb.unsynced");
    let faults = Arc::new(Faults::new(FaultPlan {
        index_sync_fails: true,
        kind: FaultKind::Io,
        ..FaultPlan::default()
    }));
    let options = IndexOptions {
        faults: Some(faults),
        ..IndexOptions::default()
    };
    match Index::open(&agent.paths, &options) {
        Err(IndexError::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(5)),
        Err(other) => panic!("expected the failed sync: {other:?}"),
        Ok(_) => panic!("the open succeeded although its one sync failed"),
    }
    assert!(marker.exists(), "the unsynced file must stay marked");
    let index = agent.open_index();
    assert!(
        matches!(
            index.outcome(),
            IndexOutcome::Rebuilt {
                reason: StaleReason::CommitInterrupted,
                ..
            }
        ),
        "{:?}",
        index.outcome()
    );
    assert!(!marker.exists());
    assert_index_matches_oracle(&index, &agent.log());
}
