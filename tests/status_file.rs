//! The status file beside the index (docs/FORMAT.md, "The status file"): whatever happens to
//! the log, the index or the file itself, `current_generation_at` answers as the naive oracle
//! does, and exactly as it does with the file deleted.
//!
//! Logs here stay under 64 KiB, so the head and tail windows cover them whole and every rewrite
//! is within what the O(1) open check promises to detect.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agentlog::generation::{CurrentGeneration, GenerationRequest, Tier, current_generation_at};
use agentlog::index::status_file::{self, status_path};
use agentlog::index::{IndexOptions, IndexOutcome, Writer, WriterOptions};
use agentlog::log::SyncPolicy;
use common::oracle::{OTotals, Oracle};
use common::{Agent, molt, token};
use proptest::prelude::*;

fn answer(agent: &Agent) -> CurrentGeneration {
    current_generation_at(&agent.paths, &GenerationRequest::latest()).expect("answer")
}

/// Checks an answer against the oracle of the log as it is now.
fn assert_matches_oracle(current: &CurrentGeneration, oracle: &Oracle, what: &str) {
    assert_eq!(current.tier, Tier::Index, "{what}: tier");
    assert_eq!(
        OTotals::from(current.totals),
        oracle.since(),
        "{what}: totals"
    );
    assert_eq!(
        current.boundary.as_ref().map(|b| b.offset),
        oracle.latest().map(|b| b.offset),
        "{what}: boundary"
    );
    assert_eq!(
        current.molt_count,
        oracle.latest().map_or(Some(0), |b| b.molt_count),
        "{what}: label"
    );
    assert_eq!(
        current.diagnostics.invalid_lines, oracle.invalid_lines,
        "{what}: invalid lines"
    );
}

/// The answer now, checked against the oracle and against the answer with the status file
/// deleted; then the answer once the index path has written the file again, which must be
/// the index path's answer exactly.
fn assert_status_answers_right(agent: &Agent) {
    let oracle = agent.oracle();
    let first = answer(agent);
    assert_matches_oracle(&first, &oracle, "as found");
    let _ = std::fs::remove_file(status_path(&agent.paths.index));
    let without = answer(agent);
    assert_matches_oracle(&without, &oracle, "without the status file");
    assert_eq!(
        (&first.totals, &first.boundary, &first.diagnostics),
        (&without.totals, &without.boundary, &without.diagnostics),
    );
    let again = answer(agent);
    if without.index_outcome == Some(IndexOutcome::Fresh)
        && status_path(&agent.paths.index).exists()
    {
        assert_eq!(again, without, "the status file's answer is the index's");
    }
    assert_matches_oracle(&again, &oracle, "again");
}

#[derive(Clone, Debug)]
enum Line {
    Token(u64, u64),
    Molt(u64),
    Invalid,
    Blank,
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        6 => (0u64..5000, 0u64..5000).prop_map(|(i, o)| Line::Token(i, o)),
        2 => (0u64..6).prop_map(Line::Molt),
        1 => Just(Line::Invalid),
        1 => Just(Line::Blank),
    ]
}

fn render(lines: &[Line]) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(&match line {
            Line::Token(i, o) => token(1.5, *i, *o, 0),
            Line::Molt(m) => molt(9.0, *m, "agent"),
            Line::Invalid => "{\"type\": \"llm_response\"\n".to_owned(),
            Line::Blank => "  \n".to_owned(),
        });
    }
    out
}

#[derive(Clone, Debug)]
enum Op {
    AppendRaw(Vec<Line>, Option<String>),
    AppendWriter(Vec<Line>),
    CompleteTail,
    Truncate(f64),
    RewriteByte(f64, u8),
    DeleteIndex,
    DeleteStatus,
    CorruptStatus(f64, u8),
    TruncateStatus(f64),
    /// Puts back a status file saved at an earlier answer.
    RestoreOldStatus(usize),
    Answer,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::collection::vec(line(), 0..8), proptest::option::of("[a-z{\":, ]{1,20}")).prop_map(|(l, t)| Op::AppendRaw(l, t)),
        3 => proptest::collection::vec(line(), 1..8).prop_map(Op::AppendWriter),
        1 => Just(Op::CompleteTail),
        1 => (0.0f64..1.0).prop_map(Op::Truncate),
        1 => (0.0f64..1.0, any::<u8>()).prop_map(|(f, b)| Op::RewriteByte(f, b)),
        1 => Just(Op::DeleteIndex),
        1 => Just(Op::DeleteStatus),
        1 => (0.0f64..1.0, 1u8..=255).prop_map(|(f, b)| Op::CorruptStatus(f, b)),
        1 => (0.0f64..1.0).prop_map(Op::TruncateStatus),
        2 => (0usize..8).prop_map(Op::RestoreOldStatus),
        4 => Just(Op::Answer),
    ]
}

#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "test files are far below 2^53 bytes, and the product is in 0..=len"
)]
fn fraction_of(len: usize, at: f64) -> usize {
    (len as f64 * at) as usize
}

fn apply(agent: &Agent, op: &Op, saved: &mut Vec<Vec<u8>>) {
    let status = status_path(&agent.paths.index);
    match op {
        Op::AppendRaw(lines, torn) => {
            let mut bytes = render(lines);
            bytes.push_str(torn.as_deref().unwrap_or(""));
            agent.append_raw(bytes.as_bytes());
        }
        Op::AppendWriter(lines) => {
            let options = WriterOptions {
                sync: SyncPolicy::None,
                ..WriterOptions::default()
            };
            let mut writer = Writer::open(&agent.paths, options).expect("writer");
            let events: Vec<String> = render(lines)
                .lines()
                .filter(|l| {
                    matches!(
                        serde_json::from_str::<serde_json::Value>(l),
                        Ok(serde_json::Value::Object(_))
                    )
                })
                .map(str::to_owned)
                .collect();
            if !events.is_empty() {
                writer.append_batch_json(&events).expect("append");
            }
            writer.close().expect("close");
        }
        Op::CompleteTail => {
            if agent.log().last().is_some_and(|&b| b != b'\n') {
                agent.append_raw(b"\n");
            }
        }
        Op::Truncate(at) => {
            let log = agent.log();
            agent.write_log(&log[..fraction_of(log.len(), *at)]);
        }
        Op::RewriteByte(at, byte) => {
            let mut log = agent.log();
            if !log.is_empty() {
                let i = fraction_of(log.len() - 1, *at);
                log[i] = *byte;
                agent.write_log(&log);
            }
        }
        Op::DeleteIndex => {
            let _ = std::fs::remove_file(&agent.paths.index);
        }
        Op::DeleteStatus => {
            let _ = std::fs::remove_file(&status);
        }
        Op::CorruptStatus(at, byte) => {
            if let Ok(mut bytes) = std::fs::read(&status)
                && !bytes.is_empty()
            {
                let i = fraction_of(bytes.len() - 1, *at);
                bytes[i] ^= byte;
                std::fs::write(&status, &bytes).expect("write status");
            }
        }
        Op::TruncateStatus(at) => {
            if let Ok(bytes) = std::fs::read(&status) {
                std::fs::write(&status, &bytes[..fraction_of(bytes.len(), *at)])
                    .expect("write status");
            }
        }
        Op::RestoreOldStatus(which) => {
            if !saved.is_empty() {
                std::fs::write(&status, &saved[which % saved.len()]).expect("write status");
            }
        }
        Op::Answer => {
            let current = answer(agent);
            assert_matches_oracle(&current, &agent.oracle(), "between operations");
            if let Ok(bytes) = std::fs::read(&status) {
                saved.push(bytes);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_status_file_answers_as_the_oracle_and_the_index_do(
        initial in proptest::collection::vec(line(), 0..20),
        ops in proptest::collection::vec(op(), 1..16),
    ) {
        let agent = Agent::with_log(render(&initial).as_bytes());
        let mut saved = Vec::new();
        for op in &ops {
            apply(&agent, op, &mut saved);
            prop_assert!(agent.log().len() < 60_000, "keep logs inside the windows");
        }
        assert_status_answers_right(&agent);
    }
}

/// A status file of an older log content is refused: a log rewritten to the same length with
/// other bytes is answered (and its index rebuilt) from the new bytes.
#[test]
fn a_status_file_of_an_older_log_of_the_same_length_is_refused() {
    let agent = Agent::with_log((token(1.0, 100, 1, 0) + &molt(2.0, 1, "agent")).as_bytes());
    let first = answer(&agent);
    assert_eq!(first.totals.input_tokens, 0);
    let status = status_path(&agent.paths.index);
    let old = std::fs::read(&status).expect("a status file after the build");
    // Same length, other tokens, and the molt moved to the front.
    let rewritten = molt(2.0, 1, "agent") + &token(1.0, 200, 1, 0);
    assert_eq!(rewritten.len() as u64, agent.log().len() as u64);
    agent.write_log(rewritten.as_bytes());
    let now = answer(&agent);
    assert!(
        matches!(now.index_outcome, Some(IndexOutcome::Rebuilt { .. })),
        "{:?}",
        now.index_outcome
    );
    assert_eq!(now.totals.input_tokens, 200);
    // The rebuild wrote a new file; the old one, put back, is refused again.
    assert_ne!(std::fs::read(&status).unwrap(), old);
    std::fs::write(&status, &old).unwrap();
    std::fs::remove_file(&agent.paths.index).unwrap();
    let again = answer(&agent);
    assert!(
        matches!(again.index_outcome, Some(IndexOutcome::Created { .. })),
        "{:?}",
        again.index_outcome
    );
    assert_eq!(again.totals.input_tokens, 200);
}

/// The file answers alone: with the index gone but the log as the file describes it, the
/// answer is the index tier's fresh one, equal to the oracle's.
#[test]
fn the_status_file_answers_without_redb() {
    let agent = Agent::with_log(
        (token(1.0, 5, 1, 0) + &molt(2.0, 1, "agent") + &token(3.0, 7, 2, 0)).as_bytes(),
    );
    let built = answer(&agent);
    assert!(matches!(
        built.index_outcome,
        Some(IndexOutcome::Created { .. })
    ));
    std::fs::remove_file(&agent.paths.index).unwrap();
    let fast = answer(&agent);
    assert_eq!(fast.index_outcome, Some(IndexOutcome::Fresh));
    assert!(
        !agent.paths.index.exists(),
        "the answer did not touch the index"
    );
    assert_matches_oracle(&fast, &agent.oracle(), "from the status file");
    assert_eq!(fast.bytes_read, agent.log().len() as u64 * 2);
}

/// A stale file never answers: after the log grew, the index catches up and the file follows.
#[test]
fn a_log_that_grew_is_caught_up_and_the_file_rewritten() {
    let agent = Agent::with_log(token(1.0, 5, 1, 0).as_bytes());
    answer(&agent);
    let status = status_path(&agent.paths.index);
    let before = status_file::decode(&std::fs::read(&status).unwrap()).unwrap();
    agent.append_raw(token(2.0, 6, 1, 0).as_bytes());
    let options = IndexOptions {
        max_memory_tail: 0,
        ..IndexOptions::default()
    };
    let mut request = GenerationRequest::latest();
    request.index = options;
    let now = current_generation_at(&agent.paths, &request).unwrap();
    assert!(matches!(
        now.index_outcome,
        Some(IndexOutcome::CaughtUp { .. })
    ));
    assert_eq!(now.totals.input_tokens, 11);
    let after = status_file::decode(&std::fs::read(&status).unwrap()).unwrap();
    assert_eq!(after.watermark(), agent.log().len() as u64);
    assert!(after.watermark() > before.watermark());
    // A read-only request never takes the file's word.
    request.index.read_only = true;
    let read_only = current_generation_at(&agent.paths, &request).unwrap();
    assert!(matches!(
        read_only.index_outcome,
        Some(IndexOutcome::ReadOnly { .. })
    ));
}

/// Another profile's file is not used: the index is rebuilt for the new profile.
#[test]
fn a_file_of_another_line_limit_is_refused() {
    let agent = Agent::with_log((token(1.0, 5, 1, 0) + &token(2.0, 6, 1, 0)).as_bytes());
    answer(&agent);
    let mut request = GenerationRequest::latest();
    request.index.max_line = 40;
    let narrow = current_generation_at(&agent.paths, &request).unwrap();
    assert!(
        matches!(narrow.index_outcome, Some(IndexOutcome::Rebuilt { .. })),
        "{:?}",
        narrow.index_outcome
    );
    assert_eq!(narrow.totals.input_tokens, 0);
    assert_eq!(narrow.diagnostics.too_long_lines, 2);
}
