//! Concurrency within one process: many reader threads and one writer; and logs truncated,
//! rewritten or replaced under readers. Readers never panic, never see a partial line, and
//! never give a total that no version of the log had.
//!
//! `AGENTLOG_STRESS_MS` lengthens the stress loops (default: a few hundred milliseconds).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use agentlog::generation::{GenerationError, GenerationRequest, Tier, current_generation_at};
use agentlog::index::{Index, IndexOptions, Writer, WriterOptions};
use agentlog::log::SyncPolicy;
use common::{Agent, assert_tiers_match_oracle};

fn stress_time() -> Duration {
    Duration::from_millis(
        std::env::var("AGENTLOG_STRESS_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(600),
    )
}

/// Every event has input 1 and output 2, so any honest answer has input = calls and
/// output = 2 calls, whatever prefix of the log it saw.
fn unit_event(i: u64) -> String {
    format!(
        "{{\"type\": \"llm_response\", \"ts\": {i}, \"input_tokens\": 1, \"output_tokens\": 2, \"pad\": \"{}\"}}",
        "x".repeat((i % 300) as usize)
    )
}

fn check(current: &agentlog::generation::CurrentGeneration) {
    let t = current.totals;
    assert_eq!(
        t.input_tokens,
        u128::from(t.api_calls),
        "{t:?} from {}",
        current.tier
    );
    assert_eq!(
        t.output_tokens,
        2 * u128::from(t.api_calls),
        "{t:?} from {}",
        current.tier
    );
}

#[test]
fn many_reader_threads_and_one_writer() {
    let agent = Arc::new(Agent::new());
    let options = WriterOptions {
        sync: SyncPolicy::None,
        commit: agentlog::index::CommitPolicy {
            rows: 97,
            ..Default::default()
        },
        ..WriterOptions::default()
    };
    let mut writer = Writer::open(&agent.paths, options).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = [Tier::Index, Tier::Index, Tier::ReverseScan, Tier::FullScan]
        .into_iter()
        .map(|tier| {
            let (agent, done, answers) =
                (Arc::clone(&agent), Arc::clone(&done), Arc::clone(&answers));
            thread::spawn(move || {
                let mut last = 0;
                while !done.load(Ordering::Relaxed) {
                    let mut request = GenerationRequest::latest();
                    request.start_tier = tier;
                    let current = current_generation_at(&agent.paths, &request).expect("answer");
                    check(&current);
                    assert!(current.totals.api_calls >= last, "totals went backwards");
                    last = current.totals.api_calls;
                    if tier == Tier::Index {
                        let index =
                            Index::open(&agent.paths, &IndexOptions::default()).expect("open");
                        let boundaries = index.boundaries().expect("boundaries");
                        assert!(boundaries.is_empty());
                    }
                    answers.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < stress_time() || answers.load(Ordering::Relaxed) < 20 {
        let batch: Vec<String> = (i..i + 7).map(unit_event).collect();
        writer.append_batch_json(&batch).unwrap();
        i += 7;
        if i % 700 == 0 {
            thread::sleep(Duration::from_millis(1));
        }
    }
    done.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().expect("a reader thread panicked");
    }
    writer.close().unwrap();
    assert!(answers.load(Ordering::Relaxed) >= 20);
    assert_tiers_match_oracle(&agent.paths, Some(0), 8 << 20);
}

/// Three versions of a log that a hostile process swaps between; every line is a unit event.
fn versions() -> [Vec<u8>; 3] {
    let log = |n: u64, offset: u64| -> Vec<u8> {
        (0..n)
            .flat_map(|i| format!("{}\n", unit_event(i + offset)).into_bytes())
            .collect()
    };
    [log(400, 0), log(150, 7), log(900, 3)]
}

#[test]
fn logs_truncated_and_rewritten_under_readers_never_give_a_wrong_total() {
    let agent = Arc::new(Agent::with_log(&versions()[0]));
    let done = Arc::new(AtomicBool::new(false));
    let vandal = {
        let (agent, done) = (Arc::clone(&agent), Arc::clone(&done));
        thread::spawn(move || {
            let versions = versions();
            let mut k = 0;
            while !done.load(Ordering::Relaxed) {
                // In place: truncate, then write another version (same inode, as `>` would).
                std::fs::write(&agent.paths.log, &versions[k % 3]).unwrap();
                k += 1;
                thread::sleep(Duration::from_micros(300));
            }
        })
    };
    let started = Instant::now();
    let (mut answered, mut refused) = (0, 0);
    while started.elapsed() < stress_time() {
        for tier in [Tier::Index, Tier::ReverseScan, Tier::FullScan] {
            let mut request = GenerationRequest::latest();
            request.start_tier = tier;
            match current_generation_at(&agent.paths, &request) {
                Ok(current) => {
                    check(&current);
                    // Only whole versions' prefixes exist: at most 900 events.
                    assert!(
                        current.totals.api_calls <= 900,
                        "tier {tier:?}: {current:?}"
                    );
                    answered += 1;
                }
                // A scan that saw the log shrink says so rather than answer.
                Err(GenerationError::Read { .. } | GenerationError::Index(_)) => refused += 1,
                Err(other) => panic!("unexpected error: {other}"),
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    vandal.join().unwrap();
    eprintln!("under a vandal: {answered} answers, {refused} refusals");
    assert!(answered > 0, "no answer at all ({refused} refusals)");
    // Once the log is still again, everything agrees with it.
    assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
}

#[test]
fn a_log_replaced_under_an_open_reader_is_revalidated_on_refresh() {
    let [first, _, third] = versions();
    let agent = Agent::with_log(&first);
    let mut index = agent.open_index();
    assert_eq!(index.state().totals.api_calls, 400);
    // Atomically replace the file (a new inode), as an editor or a rotation would.
    let replacement = agent.path().join("logs/new.jsonl");
    std::fs::write(&replacement, &third).unwrap();
    std::fs::rename(&replacement, &agent.paths.log).unwrap();
    // The open handle keeps answering for the log it validated ...
    assert_eq!(index.state().totals.api_calls, 400);
    // ... and a refresh notices the replacement.
    let outcome = index.refresh().unwrap().clone();
    assert!(
        matches!(outcome, agentlog::index::IndexOutcome::Rebuilt { .. }),
        "{outcome:?}"
    );
    assert_eq!(index.state().totals.api_calls, 900);
}
