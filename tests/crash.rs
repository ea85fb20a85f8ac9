//! Crash and power-loss harness.
//!
//! A real `agentlog append` process is fed events and killed with SIGKILL at random points,
//! under each durability policy. After every kill the log and index are checked:
//! - every acknowledged event is intact at the offset it was acknowledged at;
//! - the reopened index equals the naive oracle;
//! - every invalid line is a torn prefix of exactly one event (no fragment merged with a later
//!   event).
//!
//! Power loss is simulated on top: after a kill, the bytes a power loss could take away
//! (anything after what the policy made durable) are cut at a random offset (often inside a
//! multi-byte UTF-8 character) or zero-filled, and an older copy of the index may stand in for
//! the current one.
//!
//! Rounds: `AGENTLOG_CRASH_ROUNDS` per policy (default 8, so CI stays quick; run hundreds by
//! hand, see docs/RELIABILITY.md). `AGENTLOG_CRASH_SEED` replays a run.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use agentlog::index::{Index, IndexOptions};
use common::{Agent, assert_index_matches_oracle, assert_tiers_match_oracle};

/// The synthetic-data generator's splitmix64, so a failing seed can be replayed.
struct Rng(agentlog::synth::Rng);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.range(0, n.max(1) - 1)
    }
}

fn rounds() -> u64 {
    std::env::var("AGENTLOG_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}

fn seed() -> u64 {
    std::env::var("AGENTLOG_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        })
}

/// Event `k`: token events with non-ASCII padding (so cuts land inside characters), and a
/// boundary every 40 events.
fn event(k: u64) -> String {
    if k % 40 == 39 {
        format!(
            "{{\"type\": \"psyche_molt\", \"id\": {k}, \"molt_count\": {}, \"note\": \"雪が降る\"}}",
            k / 40 + 1
        )
    } else {
        format!(
            "{{\"type\": \"llm_response\", \"id\": {k}, \"input_tokens\": {}, \"output_tokens\": 1, \"pad\": \"{}\"}}",
            k % 997,
            "雪".repeat((k % 50) as usize)
        )
    }
}

/// What one killed writer left behind.
struct Killed {
    /// (offset, event id) of every acknowledged event.
    acked: Vec<(u64, u64)>,
}

/// Runs `agentlog append` fed with events from `first`, kills it after `after`, returns what
/// was acknowledged and the next event id to use.
fn run_and_kill(
    agent: &Agent,
    sync: &str,
    first: u64,
    after: Duration,
    commit_interval: Duration,
) -> (Killed, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args([
            "append",
            agent.path().to_str().unwrap(),
            "--sync",
            sync,
            "--interval-ms",
            "5",
            "--commit-interval-ms",
            &commit_interval.as_millis().to_string(),
        ])
        .env("AGENTLOG_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn writer");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(Mutex::new(Vec::new()));
    let feeder = {
        let (stop, sent) = (Arc::clone(&stop), Arc::clone(&sent));
        thread::spawn(move || {
            let mut k = first;
            while !stop.load(Ordering::Relaxed) {
                let line = format!("{}\n", event(k));
                if stdin.write_all(line.as_bytes()).is_err() {
                    break;
                }
                sent.lock().unwrap().push(k);
                k += 1;
                if k.is_multiple_of(64) {
                    thread::sleep(Duration::from_micros(300));
                }
            }
        })
    };
    let first_ack = Arc::new(AtomicBool::new(false));
    let acks = {
        let first_ack = Arc::clone(&first_ack);
        thread::spawn(move || {
            let mut offsets = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(offset) = line.trim().parse::<u64>() {
                    offsets.push(offset);
                    first_ack.store(true, Ordering::Relaxed);
                }
            }
            offsets
        })
    };
    // Start the countdown to the kill once the writer is acknowledging, however loaded the
    // machine is, so every round tests something.
    let waiting = std::time::Instant::now();
    while !first_ack.load(Ordering::Relaxed) && waiting.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(1));
    }
    thread::sleep(after);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    stop.store(true, Ordering::Relaxed);
    let _ = feeder.join();
    let offsets = acks.join().expect("ack reader");
    let sent = sent.lock().unwrap().clone();
    // Acknowledgements come in input order: the i-th acknowledged offset is the i-th sent event.
    let acked: Vec<(u64, u64)> = offsets.iter().copied().zip(sent.iter().copied()).collect();
    assert!(
        acked.len() == offsets.len(),
        "more acknowledgements than events sent"
    );
    let next = sent.last().map_or(first, |k| k + 1);
    (Killed { acked }, next)
}

/// Every acknowledged event is intact at its offset.
fn assert_acked_present(log: &[u8], acked: &[(u64, u64)], durable_upto: u64) {
    for &(offset, k) in acked {
        let expected = format!("{}\n", event(k));
        let offset = usize::try_from(offset).unwrap();
        let end = offset + expected.len();
        if (end as u64) > durable_upto {
            continue;
        }
        assert_eq!(
            log.get(offset..end),
            Some(expected.as_bytes()),
            "acknowledged event {k} at offset {offset} is not intact"
        );
    }
}

/// Every invalid line is a torn prefix of one event: nothing merged. Lines holding zero bytes
/// are the simulated lost blocks of a power loss, not the writer's doing, and are skipped.
fn assert_no_merged_lines(log: &[u8], sent_upto: u64) {
    let events: Vec<String> = (0..sent_upto).map(event).collect();
    for line in log.split(|&b| b == b'\n') {
        if line.is_empty()
            || line.contains(&0)
            || serde_json::from_slice::<serde_json::Value>(line).is_ok()
        {
            continue;
        }
        assert!(
            events.iter().any(|e| e.as_bytes().starts_with(line)),
            "an invalid line is not a torn prefix of one event: {:?}",
            String::from_utf8_lossy(line)
        );
    }
}

/// The watermark of the index's last commit, read from the file itself (a killed writer
/// leaves it needing a repair that read-only opens refuse; a writable redb open repairs it,
/// and reading the meta record catches nothing up). 0 if there is none.
fn committed_watermark(index: &std::path::Path) -> u64 {
    use agentlog::index::schema::{self, META, META_KEY, Meta};
    use redb::ReadableDatabase;
    let Ok(db) = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .create(index)
    else {
        return 0;
    };
    let Ok(txn) = db.begin_read() else { return 0 };
    let Ok(table) = txn.open_table(META) else {
        return 0;
    };
    match table.get(META_KEY) {
        Ok(Some(meta)) => schema::decode::<Meta>(meta.value()).map_or(0, |m| m.watermark()),
        _ => 0,
    }
}

fn crash_rounds(sync: &str, durable_acks: bool, power_loss: bool) {
    let seed = seed();
    eprintln!(
        "crash harness: sync={sync} power_loss={power_loss} seed={seed} (AGENTLOG_CRASH_SEED to replay)"
    );
    let mut rng = Rng(agentlog::synth::Rng(seed));
    let agent = Agent::new();
    let mut next = 0;
    let mut old_index: Option<Vec<u8>> = None;
    // What has been made durable so far: it stays durable across rounds.
    let mut durable = 0;
    let (mut acked_total, mut torn_tails, mut cuts, mut old_indexes) = (0, 0, 0, 0);
    let mut live_commits = 0;
    for _ in 0..rounds() {
        let after = Duration::from_millis(5 + rng.below(60));
        // Index commits by policy happen on the writer's commit thread, and a kill can land
        // in one: commit often in most rounds.
        let commit_interval =
            Duration::from_millis([1, 3, 10, 1000][usize::try_from(rng.below(4)).unwrap()]);
        let log_before = std::fs::metadata(&agent.paths.log).map_or(0, |m| m.len());
        let (killed, sent_upto) = run_and_kill(&agent, sync, next, after, commit_interval);
        next = sent_upto;
        let mut log = agent.log();
        // The open commits up to the old end (plus the newline that terminates a torn last
        // line); anything past it was committed while appending.
        live_commits += usize::from(committed_watermark(&agent.paths.index) > log_before + 1);
        assert_acked_present(&log, &killed.acked, u64::MAX);
        acked_total += killed.acked.len();
        torn_tails += usize::from(log.last().is_some_and(|&b| b != b'\n'));
        if durable_acks && let Some(&(offset, k)) = killed.acked.last() {
            durable = durable.max(offset + event(k).len() as u64 + 1);
        }
        // Every index commit syncs the log first, so whatever the policy, the bytes under the
        // last committed watermark were on disk: a power loss cannot take them.
        durable = durable.max(committed_watermark(&agent.paths.index));
        if power_loss && log.len() as u64 > durable {
            // What a power loss could take: anything past what the policy made durable.
            let cut = durable + rng.below(log.len() as u64 - durable + 1);
            log.truncate(usize::try_from(cut).unwrap());
            cuts += 1;
            if rng.below(3) == 0 && (cut - durable) > 8 {
                let start = durable + rng.below(cut - durable);
                let len = rng.below(cut - start).min(4096);
                let start = usize::try_from(start).unwrap();
                let len = usize::try_from(len).unwrap();
                for b in &mut log[start..start + len] {
                    *b = 0;
                }
            }
            agent.write_log(&log);
            if let Some(old) = &old_index
                && rng.below(2) == 0
            {
                // The index lost its latest commits too.
                std::fs::write(&agent.paths.index, old).unwrap();
                old_indexes += 1;
            }
            assert_acked_present(&log, &killed.acked, durable);
        }
        assert_no_merged_lines(&log, sent_upto);
        let index =
            Index::open(&agent.paths, &IndexOptions::default()).expect("reopen after the crash");
        assert_index_matches_oracle(&index, &log);
        drop(index);
        old_index = std::fs::read(&agent.paths.index).ok();
    }
    eprintln!(
        "crash harness: sync={sync}: {} rounds, {acked_total} events acknowledged, {live_commits} rounds with index commits while appending, {torn_tails} torn tails left by kills, {cuts} power-loss cuts, {old_indexes} older indexes restored",
        rounds()
    );
    assert!(
        acked_total > 0,
        "no round acknowledged anything: the harness tested nothing"
    );
    assert_tiers_match_oracle(&agent.paths, None, 1 << 16);
}

#[test]
fn killed_writer_with_fsync_loses_no_acknowledged_event() {
    crash_rounds("fsync", true, false);
}

#[test]
fn killed_writer_with_group_commit_loses_no_acknowledged_event() {
    crash_rounds("interval", true, false);
}

#[test]
fn killed_writer_with_flush_only_loses_no_acknowledged_event() {
    // A process crash keeps what was written to the OS, so even flush-only loses nothing.
    crash_rounds("none", true, false);
}

#[test]
fn power_loss_keeps_what_fsync_acknowledged() {
    crash_rounds("fsync", true, true);
}

#[test]
fn power_loss_keeps_what_group_commit_acknowledged() {
    crash_rounds("interval", true, true);
}

#[test]
fn power_loss_under_flush_only_never_gives_a_wrong_answer() {
    // Flush-only acknowledges nothing durable: anything the writer had not synced for an
    // index commit may be cut or zeroed, and every answer still equals the oracle on what
    // survived.
    crash_rounds("none", false, true);
}

/// A build from scratch of a log longer than one commit (so it runs on two threads: folding
/// here, committing on a helper) is killed with SIGKILL one to three times at random moments;
/// the next `agentlog status` must answer the oracle's totals from the index, whether it
/// resumes from the commits that landed, rebuilds (a kill inside a commit leaves the marker),
/// or finds the build done.
#[test]
fn a_build_killed_at_random_moments_resumes_or_rebuilds_and_answers_right() {
    // Just over 16 MiB, the default commit size: at least two durable commits.
    killed_builds(20 << 20);
}

/// The same for a log of 4-16 MiB, whose new index is built without syncs, on two threads, in
/// commits of a quarter of the log (docs/FORMAT.md, "Builds without syncs"): a kill leaves the unsynced-build marker,
/// and the next open rebuilds.
#[test]
fn an_unsynced_build_killed_at_random_moments_is_rebuilt_and_answers_right() {
    killed_builds(8 << 20);
}

fn killed_builds(log_bytes: u64) {
    let seed = seed();
    eprintln!("killed builds of {log_bytes} bytes: seed={seed} (AGENTLOG_CRASH_SEED to replay)");
    let mut rng = Rng(agentlog::synth::Rng(seed));
    let responses = agentlog::synth::responses_for_bytes(log_bytes);
    let agent = Agent::with_log(&common::synthetic(responses, seed % 1000));
    let expected = agent.oracle().since();
    let dir = agent.path().to_str().expect("utf-8 temp path").to_owned();
    let markers = [
        agent.paths.index.with_extension("redb.committing"),
        agent.paths.index.with_extension("redb.unsynced"),
    ];
    let mut outcomes = std::collections::BTreeMap::<String, u64>::new();
    let mut kills = 0;
    for _ in 0..rounds().div_ceil(2) {
        let _ = std::fs::remove_file(&agent.paths.index);
        for marker in &markers {
            let _ = std::fs::remove_file(marker);
        }
        for _ in 0..=rng.below(3) {
            let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
                .args(["status", &dir, "--json"])
                .env("AGENTLOG_LOG", "off")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn agentlog");
            thread::sleep(Duration::from_millis(1 + rng.below(60)));
            let _ = child.kill();
            let _ = child.wait();
            kills += 1;
        }
        let output = common::agentlog(&["status", &dir, "--json"]);
        assert!(output.status.success(), "{output:?}");
        let answer = common::json(&output);
        assert_eq!(answer["tier"], "index", "{answer}");
        assert_eq!(answer["api_calls"], expected.calls, "{answer}");
        assert_eq!(
            answer["input_tokens"],
            u64::try_from(expected.input).unwrap(),
            "{answer}"
        );
        let outcome = answer["index"]["outcome"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        *outcomes.entry(outcome).or_default() += 1;
    }
    eprintln!("killed builds: {kills} kills; outcomes of the next open {outcomes:?}");
    let index = Index::open(&agent.paths, &IndexOptions::default()).expect("open");
    assert_index_matches_oracle(&index, &agent.log());
}
