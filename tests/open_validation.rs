//! Every way an index can go stale is detected on open, handled, reported as a typed outcome,
//! and never changes an answer: each test ends by comparing with the naive oracle.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agentlog::generation::{GenerationRequest, Tier, current_generation_at};
use agentlog::index::schema::{self, FORMAT_KEY, META, META_KEY, Meta};
use agentlog::index::{
    Index, IndexError, IndexOptions, IndexOutcome, ReadOnlyReason, StaleReason, Writer,
    WriterOptions,
};
use agentlog::log::SyncPolicy;
use common::{Agent, assert_index_matches_oracle, assert_tiers_match_oracle, synthetic};
use redb::ReadableTable;

/// Opens as a reader that commits any new lines: these tests check what that open finds and
/// does. Folding a small tail in memory instead is tested on its own
/// (`a_small_tail_is_folded_in_memory_and_nothing_is_written`).
fn open(agent: &Agent) -> Index {
    agent.open_index_committing()
}

#[test]
fn a_small_tail_is_folded_in_memory_and_nothing_is_written() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    let committed = std::fs::read(&agent.paths.index).unwrap();
    let extra = synthetic(3, 5);
    let extra_events = memchr::memchr_iter(b'\n', &extra).count() as u64;
    agent.append_raw(&extra);
    agent.append_raw(b"{\"type\": \"llm_response\", \"input_tokens\": 4");
    let options = IndexOptions {
        max_memory_tail: extra.len() as u64 + 100,
        ..IndexOptions::default()
    };
    let index = Index::open(&agent.paths, &options).unwrap();
    assert_eq!(
        index.outcome(),
        &IndexOutcome::ReadOnly {
            why: ReadOnlyReason::SmallTail,
            tail_bytes: extra.len() as u64,
            tail_events: extra_events,
        }
    );
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    assert!(
        std::fs::read(&agent.paths.index).unwrap() == committed,
        "folding a small tail wrote to the index"
    );
    // Past the limit (the torn line completed and more appended), the open commits it all.
    agent.append_raw(b", \"output_tokens\": 1}\n");
    agent.append_raw(&synthetic(3, 6));
    let index = Index::open(&agent.paths, &options).unwrap();
    match index.outcome() {
        IndexOutcome::CaughtUp { bytes, .. } => {
            assert_eq!(*bytes, agent.log().len() as u64 - big_log().len() as u64);
        }
        other => panic!("expected a catch-up, got {other:?}"),
    }
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    assert_eq!(
        Index::open(&agent.paths, &options).unwrap().outcome(),
        &IndexOutcome::Fresh
    );
}

fn rebuilt_reason(index: &Index) -> StaleReason {
    match index.outcome() {
        IndexOutcome::Rebuilt { reason, .. } => reason.clone(),
        other => panic!("expected a rebuild, got {other:?}"),
    }
}

/// A log big enough that its head and tail windows (64 KiB each) do not overlap.
fn big_log() -> Vec<u8> {
    let log = synthetic(400, 7);
    assert!(log.len() > 200_000, "log is {} bytes", log.len());
    log
}

#[test]
fn new_index_is_created_and_then_fresh() {
    let agent = Agent::with_log(&big_log());
    let index = open(&agent);
    assert!(matches!(index.outcome(), IndexOutcome::Created { events, .. } if *events > 0));
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    let index = open(&agent);
    assert_eq!(index.outcome(), &IndexOutcome::Fresh);
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn appended_events_are_caught_up_not_rebuilt() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    let extra = synthetic(30, 99);
    agent.append_raw(&extra);
    let index = open(&agent);
    let appended_events = memchr::memchr_iter(b'\n', &extra).count() as u64;
    assert_eq!(
        index.outcome(),
        &IndexOutcome::CaughtUp {
            bytes: extra.len() as u64,
            events: appended_events
        }
    );
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn truncated_log_is_rebuilt() {
    let log = big_log();
    let agent = Agent::with_log(&log);
    drop(open(&agent));
    // Cut in the middle of a line: the fragment is a torn tail, never indexed.
    agent.write_log(&log[..log.len() / 2 + 17]);
    let index = open(&agent);
    assert!(
        matches!(rebuilt_reason(&index), StaleReason::LogTruncated { indexed, len } if indexed == log.len() as u64 && len == (log.len() / 2 + 17) as u64)
    );
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn same_length_rewrite_of_the_tail_is_rebuilt() {
    let log = big_log();
    let agent = Agent::with_log(&log);
    drop(open(&agent));
    // Change one digit of the last token event's input_tokens; the length stays the same.
    let mut rewritten = log.clone();
    let at = find_last(&rewritten, b"\"input_tokens\": ") + 16;
    rewritten[at] = if rewritten[at] == b'9' {
        b'1'
    } else {
        rewritten[at] + 1
    };
    agent.write_log(&rewritten);
    let index = open(&agent);
    assert_eq!(rebuilt_reason(&index), StaleReason::TailChanged);
    assert_index_matches_oracle(&index, &agent.log());
    assert_ne!(
        common::oracle::Oracle::of(&log).lifetime(),
        agent.oracle().lifetime()
    );
}

#[test]
fn truncated_then_rewritten_longer_is_rebuilt_because_growth_is_no_proof() {
    let log = big_log();
    let agent = Agent::with_log(&log);
    drop(open(&agent));
    let mut replaced = log[..log.len() / 2].to_vec();
    replaced.extend_from_slice(&synthetic(300, 1234));
    assert!(replaced.len() > log.len());
    agent.write_log(&replaced);
    let index = open(&agent);
    assert_eq!(rebuilt_reason(&index), StaleReason::TailChanged);
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn replaced_head_is_rebuilt() {
    let log = big_log();
    let agent = Agent::with_log(&log);
    drop(open(&agent));
    let mut replaced = log.clone();
    // "agent-alice" -> "agent-alicf" in the first line: same length, different head.
    let at = find_first(&replaced, b"alice") + 4;
    replaced[at] = b'f';
    agent.write_log(&replaced);
    let index = open(&agent);
    assert_eq!(rebuilt_reason(&index), StaleReason::HeadChanged);
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn torn_tail_is_not_indexed_until_completed() {
    let complete = big_log();
    let torn = "{\"type\": \"llm_response\", \"input_tokens\": 5000, \"output_tokens\": 1";
    let agent = Agent::with_log(&complete);
    agent.append_raw(torn.as_bytes());
    let index = open(&agent);
    assert_eq!(
        index.state().end,
        complete.len() as u64,
        "the torn tail is not covered"
    );
    assert_index_matches_oracle(&index, &agent.log());
    let calls = index.state().totals.api_calls;
    drop(index);
    // Every complete line is indexed, so both kinds of open find the index fresh (not an empty
    // in-memory tail), and a reader's open writes nothing.
    for committing in [true, false] {
        let before = std::fs::read(&agent.paths.index).unwrap();
        let index = if committing {
            open(&agent)
        } else {
            agent.open_index()
        };
        assert_eq!(index.outcome(), &IndexOutcome::Fresh);
        assert_eq!(index.state().end, complete.len() as u64);
        assert_index_matches_oracle(&index, &agent.log());
        drop(index);
        if !committing {
            assert!(std::fs::read(&agent.paths.index).unwrap() == before);
        }
    }
    agent.append_raw(b", \"cached_tokens\": 0, \"thinking_tokens\": 0}\n");
    let index = open(&agent);
    assert!(
        matches!(index.outcome(), IndexOutcome::CaughtUp { events: 1, .. }),
        "{:?}",
        index.outcome()
    );
    assert_eq!(index.state().totals.api_calls, calls + 1);
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn deleted_index_is_created_again() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    std::fs::remove_file(&agent.paths.index).unwrap();
    let index = open(&agent);
    assert!(matches!(index.outcome(), IndexOutcome::Created { .. }));
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn index_file_of_random_bytes_is_rebuilt() {
    let agent = Agent::with_log(&big_log());
    let mut state = 0x1234_5678_u64;
    let garbage: Vec<u8> = (0..100_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    std::fs::write(&agent.paths.index, &garbage).unwrap();
    let index = open(&agent);
    assert!(matches!(
        rebuilt_reason(&index),
        StaleReason::Unreadable { .. }
    ));
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn truncated_or_bit_flipped_index_never_gives_a_wrong_answer() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    let good = std::fs::read(&agent.paths.index).unwrap();
    let mut damaged_versions = vec![
        good[..good.len() / 2].to_vec(),
        good[..100].to_vec(),
        Vec::new(),
    ];
    for position in (0..good.len()).step_by(good.len() / 40 + 1) {
        let mut flipped = good.clone();
        flipped[position] ^= 0x5a;
        damaged_versions.push(flipped);
    }
    for damaged in damaged_versions {
        std::fs::write(&agent.paths.index, &damaged).unwrap();
        let index = open(&agent);
        assert_index_matches_oracle(&index, &agent.log());
        drop(index);
        assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
    }
}

#[test]
fn index_copied_from_another_agent_is_rebuilt() {
    let alice = Agent::with_log(&big_log());
    let bob = Agent::with_log(&synthetic(500, 8).replace_all(b"alice", b"bobby"));
    drop(open(&alice));
    drop(open(&bob));
    std::fs::copy(&alice.paths.index, &bob.paths.index).unwrap();
    let index = open(&bob);
    assert_eq!(rebuilt_reason(&index), StaleReason::HeadChanged);
    assert_index_matches_oracle(&index, &bob.log());
}

fn rewrite_meta(agent: &Agent, change: impl FnOnce(&mut redb::Table<&str, &[u8]>, &mut Meta)) {
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .create(&agent.paths.index)
        .unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(META).unwrap();
        let mut meta: Meta = schema::decode(table.get(META_KEY).unwrap().unwrap().value()).unwrap();
        change(&mut table, &mut meta);
        let mut buf = Vec::new();
        schema::encode(&meta, &mut buf);
        table.insert(META_KEY, buf.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn format_version_change_rebuilds() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    rewrite_meta(&agent, |table, _| {
        table
            .insert(
                FORMAT_KEY,
                (schema::FORMAT_VERSION + 1).to_le_bytes().as_slice(),
            )
            .unwrap();
    });
    let index = open(&agent);
    assert_eq!(
        rebuilt_reason(&index),
        StaleReason::FormatChanged {
            found: schema::FORMAT_VERSION + 1,
            expected: schema::FORMAT_VERSION
        }
    );
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn parser_version_change_rebuilds() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    rewrite_meta(&agent, |_, meta| meta.parser = schema::PARSER_VERSION + 7);
    let index = open(&agent);
    assert_eq!(
        rebuilt_reason(&index),
        StaleReason::ParserChanged {
            found: schema::PARSER_VERSION + 7,
            expected: schema::PARSER_VERSION
        }
    );
    assert_index_matches_oracle(&index, &agent.log());
}

/// Parser 1 counted absent token fields in `token_values_zeroed`; parser 2 counts only values
/// present and unusable. An index parser 1 built keeps the old count until it is rebuilt.
#[test]
fn an_index_of_parser_1_is_rebuilt_and_counts_only_unusable_token_values() {
    assert_eq!(schema::PARSER_VERSION, 2);
    // Three fields absent on each line, and one `null`.
    let log = b"{\"type\": \"llm_response\", \"input_tokens\": 5}\n\
{\"type\": \"llm_response\", \"input_tokens\": null}\n";
    let agent = Agent::with_log(log);
    drop(open(&agent));
    // What parser 1 stored: the six absent fields and the null.
    rewrite_meta(&agent, |_, meta| {
        meta.parser = 1;
        meta.fold.diagnostics.token_values_zeroed = 7;
    });
    let index = open(&agent);
    assert_eq!(
        rebuilt_reason(&index),
        StaleReason::ParserChanged {
            found: 1,
            expected: 2
        }
    );
    assert_eq!(index.state().diagnostics.token_values_zeroed, 1);
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn profile_or_line_limit_change_rebuilds() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    let options = IndexOptions {
        max_line: 300,
        ..IndexOptions::default()
    };
    let index = Index::open(&agent.paths, &options).unwrap();
    assert_eq!(rebuilt_reason(&index), StaleReason::ProfileChanged);
    // With a 300-byte limit, long lines are invalid: the oracle agrees under the same limit.
    let oracle = common::oracle::Oracle::with_max_line(&agent.log(), 300);
    assert_eq!(
        index.state().diagnostics.invalid_lines,
        oracle.invalid_lines
    );
    assert!(oracle.invalid_lines > 0);
}

#[test]
fn meta_that_contradicts_the_tables_is_rebuilt() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    rewrite_meta(&agent, |_, meta| meta.fold.events += 1);
    let index = open(&agent);
    assert!(matches!(
        rebuilt_reason(&index),
        StaleReason::Inconsistent { .. }
    ));
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn meta_with_a_bad_checksum_is_rebuilt() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .create(&agent.paths.index)
        .unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(META).unwrap();
        let mut bytes = table.get(META_KEY).unwrap().unwrap().value().to_vec();
        bytes[3] ^= 1;
        table.insert(META_KEY, bytes.as_slice()).unwrap();
    }
    txn.commit().unwrap();
    drop(db);
    let index = open(&agent);
    assert!(matches!(
        rebuilt_reason(&index),
        StaleReason::Unreadable { .. }
    ));
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn index_held_by_a_writer_is_read_with_an_in_memory_tail() {
    let agent = Agent::with_log(&big_log());
    let mut writer = Writer::open(
        &agent.paths,
        WriterOptions {
            sync: SyncPolicy::None,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    // Rows stay queued: the index on disk lags the log.
    writer
        .append_json(common::token(1.0, 100, 1, 50).trim().as_bytes())
        .unwrap();
    let index = open(&agent);
    match index.outcome() {
        IndexOutcome::ReadOnly {
            why: ReadOnlyReason::HeldByAnotherProcess,
            tail_events: 1,
            ..
        } => {}
        other => panic!("unexpected {other:?}"),
    }
    assert_index_matches_oracle(&index, &agent.log());
    assert_eq!(index.state(), writer.state());
    writer.close().unwrap();
}

#[test]
fn stale_index_held_by_a_writer_steps_down_to_a_scan() {
    let agent = Agent::with_log(&big_log());
    let writer = Writer::open(&agent.paths, WriterOptions::default()).unwrap();
    // Another program rewrites the log under the writer (a protocol violation we survive).
    let mut rewritten = agent.log();
    let at = rewritten.len() - 40;
    rewritten[at] = b' ';
    std::fs::write(&agent.paths.log, &rewritten).unwrap();
    match Index::open(&agent.paths, &IndexOptions::default()) {
        Err(IndexError::StaleReadOnly {
            reason: StaleReason::TailChanged,
            ..
        }) => {}
        other => panic!("unexpected {:?}", other.map(|i| i.outcome().clone())),
    }
    let current = current_generation_at(&agent.paths, &GenerationRequest::latest()).unwrap();
    assert_eq!(current.tier, Tier::ReverseScan);
    assert_eq!(current.stepped_aside.len(), 1);
    assert!(
        current.stepped_aside[0].reason.contains("rewritten"),
        "{}",
        current.stepped_aside[0].reason
    );
    drop(writer);
    assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
}

#[test]
fn unwritable_index_path_steps_down_and_still_answers() {
    let agent = Agent::with_log(&big_log());
    std::fs::create_dir(&agent.paths.index).unwrap();
    assert!(matches!(
        Index::open(&agent.paths, &IndexOptions::default()),
        Err(IndexError::Unavailable { .. })
    ));
    let current = current_generation_at(&agent.paths, &GenerationRequest::latest()).unwrap();
    assert_eq!(current.tier, Tier::ReverseScan);
    assert!(
        current.stepped_aside[0].reason.contains("directory"),
        "{:?}",
        current.stepped_aside
    );
    assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
}

#[test]
fn read_only_open_never_writes() {
    let agent = Agent::with_log(&big_log());
    drop(open(&agent));
    agent.append_raw(&synthetic(5, 3));
    let before = std::fs::read(&agent.paths.index).unwrap();
    let options = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    let index = Index::open(&agent.paths, &options).unwrap();
    assert!(matches!(
        index.outcome(),
        IndexOutcome::ReadOnly {
            why: ReadOnlyReason::Requested,
            ..
        }
    ));
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    assert_eq!(std::fs::read(&agent.paths.index).unwrap(), before);
}

#[test]
fn rows_are_queryable_by_offset_seq_and_type() {
    let agent = Agent::with_log(&big_log());
    let index = open(&agent);
    let log = agent.log();
    let offsets = index.offsets_of_type("psyche_molt", 0, usize::MAX).unwrap();
    let oracle = agent.oracle();
    assert_eq!(
        offsets,
        oracle
            .boundaries
            .iter()
            .map(|b| b.offset)
            .collect::<Vec<_>>()
    );
    // Line 5 (0-based) has seq 5; its row points at the right bytes.
    let fifth = log
        .split(|&b| b == b'\n')
        .take(5)
        .map(|l| l.len() as u64 + 1)
        .sum::<u64>();
    assert_eq!(index.offset_of_seq(5).unwrap(), Some(fifth));
    let row = index.event_at(fifth).unwrap().unwrap();
    assert_eq!(row.seq, 5);
    let line = &log[usize::try_from(fifth).unwrap()..usize::try_from(fifth + row.len).unwrap()];
    assert!(line.starts_with(b"{") && line.ends_with(b"}"));
    // Totals between two offsets are two prefix lookups and agree with the generations.
    let first = oracle.boundaries[0].offset;
    let second = oracle.boundaries[1].offset;
    let between = index.totals_between(first, second).unwrap();
    assert_eq!(
        common::oracle::OTotals::from(between),
        oracle.generations[1]
    );
}

fn find_last(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .rposition(|w| w == needle)
        .expect("needle")
}

fn find_first(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("needle")
}

trait ReplaceAll {
    fn replace_all(&self, from: &[u8], to: &[u8]) -> Vec<u8>;
}

impl ReplaceAll for Vec<u8> {
    fn replace_all(&self, from: &[u8], to: &[u8]) -> Vec<u8> {
        let text = String::from_utf8(self.clone()).unwrap();
        text.replace(
            std::str::from_utf8(from).unwrap(),
            std::str::from_utf8(to).unwrap(),
        )
        .into_bytes()
    }
}

#[test]
fn explicit_seqs_keep_their_first_line_and_may_go_backwards() {
    let parts = [
        r#"{"type":"a","seq":0}"#,
        r#"{"type":"a","seq":1}"#,
        r#"{"type":"a","seq":2}"#,
        r#"{"type":"b","seq":1}"#,
        r#"{"type":"a","seq":10}"#,
        r#"{"type":"a","seq":5}"#,
    ];
    let log = parts.join("\n") + "\n";
    let agent = Agent::with_log(log.as_bytes());
    let index = open(&agent);
    let offset_of = |i: usize| parts[..i].iter().map(|p| p.len() as u64 + 1).sum::<u64>();
    assert_eq!(
        index.offset_of_seq(1).unwrap(),
        Some(offset_of(1)),
        "the first line with seq 1 keeps it"
    );
    assert_eq!(index.offset_of_seq(10).unwrap(), Some(offset_of(4)));
    assert_eq!(index.offset_of_seq(5).unwrap(), Some(offset_of(5)));
    assert_eq!(index.offset_of_seq(3).unwrap(), None);
    assert_eq!(index.duplicate_seqs(), 1);
}

#[test]
fn rows_written_over_many_small_commits_equal_one_big_build() {
    let agent = Agent::with_log(&big_log());
    let small = IndexOptions {
        commit_bytes: 4096,
        ..IndexOptions::default()
    };
    let index = Index::open(&agent.paths, &small).unwrap();
    assert_index_matches_oracle(&index, &agent.log());
    let oracle = agent.oracle();
    let molts = index.offsets_of_type("psyche_molt", 0, usize::MAX).unwrap();
    assert_eq!(
        molts,
        oracle
            .boundaries
            .iter()
            .map(|b| b.offset)
            .collect::<Vec<_>>()
    );
    let responses = index
        .offsets_of_type("llm_response", 0, usize::MAX)
        .unwrap();
    assert_eq!(responses.len() as u64, oracle.lifetime().calls);
    assert!(responses.windows(2).all(|w| w[0] < w[1]));
    // Every sampled prefix sum agrees with a single-commit build of the same log elsewhere.
    let twin = Agent::with_log(&agent.log());
    let whole = open(&twin);
    for offset in responses.iter().step_by(97) {
        assert_eq!(
            whole.totals_before(offset + 1).unwrap(),
            index.totals_before(offset + 1).unwrap()
        );
    }
}

/// A new index of a log of 4-16 MiB is built without syncs and, on two threads, in commits of
/// a quarter of the log: what it stores is exactly what one commit on one thread stores.
#[test]
fn an_unsynced_build_in_pipelined_chunks_equals_one_commit_on_one_thread() {
    let agent = Agent::with_log(&synthetic(2_600, 11));
    let len = agent.log().len() as u64;
    assert!((4 << 20..16 << 20).contains(&len), "{len} bytes");
    let built = Index::open(&agent.paths, &IndexOptions::default()).unwrap();
    assert!(matches!(built.outcome(), IndexOutcome::Created { .. }));
    assert_index_matches_oracle(&built, &agent.log());
    drop(built);
    let one_thread = IndexOptions {
        two_threads: false,
        ..IndexOptions::default()
    };
    // The comparison builds its scratch copy with the options of the index it compares.
    let reopened = Index::open(&agent.paths, &one_thread).unwrap();
    assert_eq!(reopened.outcome(), &IndexOutcome::Fresh);
    for table in reopened.compare_with_rebuild().unwrap() {
        assert!(table.matches(), "{table:?}");
    }
}

#[test]
fn refresh_picks_up_lines_appended_by_an_external_program() {
    let agent = Agent::with_log(&big_log());
    let mut index = open(&agent);
    let calls = index.state().totals.api_calls;
    assert_eq!(index.refresh().unwrap(), &IndexOutcome::Fresh);
    agent.append_raw(common::token(1.0, 3, 1, 0).as_bytes());
    agent.append_raw(b"{\"type\": \"llm_response\", \"input_tokens\": 4");
    assert!(matches!(
        index.refresh().unwrap(),
        IndexOutcome::CaughtUp { events: 1, .. }
    ));
    assert_eq!(index.state().totals.api_calls, calls + 1);
    assert_index_matches_oracle(&index, &agent.log());
}
