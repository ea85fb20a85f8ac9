//! The export as a state machine, driven by proptest: random sequences of appends, torn tails,
//! truncations, rewrites, exports (some stopped at a random step), compactions, and damaged or
//! deleted states. After each export that finishes, the dataset holds exactly the log's events
//! and generations (the naive oracle); after one that was stopped, no row is visible twice.
// Test figures (offsets, row counts, nanosecond stamps) are far below 2^53, and Parquet and
// SQLite keep integers as i64, so the numeric casts are deliberate; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

mod common;
mod export_support;

use std::path::Path;

use agentlog::export::{ExportError, ExportOptions, compact, export};
use common::{Agent, synthetic};
use export_support::{
    assert_events_match, assert_generations_match, assert_no_leftovers, read_table,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Append { responses: u64, seed: u64 },
    AppendTorn,
    CompleteTorn,
    Truncate { keep_percent: u8 },
    RewriteHead,
    Export,
    ExportStopped { step: u64 },
    Compact { stop: Option<u64> },
    DamageState { at: usize },
    DeleteState,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u64..60, any::<u64>()).prop_map(|(responses, seed)| Op::Append { responses, seed }),
        1 => Just(Op::AppendTorn),
        1 => Just(Op::CompleteTorn),
        1 => (0u8..100).prop_map(|keep_percent| Op::Truncate { keep_percent }),
        1 => Just(Op::RewriteHead),
        3 => Just(Op::Export),
        2 => (1u64..12).prop_map(|step| Op::ExportStopped { step }),
        1 => prop::option::of(1u64..6).prop_map(|stop| Op::Compact { stop }),
        1 => any::<usize>().prop_map(|at| Op::DamageState { at }),
        1 => Just(Op::DeleteState),
    ]
}

fn options(out: &Path, fail_at_step: Option<u64>) -> ExportOptions {
    ExportOptions {
        host: "prop".to_owned(),
        fail_at_step,
        ..ExportOptions::new(out)
    }
}

fn state_file(out: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(out.join("_agentlog").join("prop"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "state"))
}

fn assert_at_most_once(out: &Path) {
    let mut offsets: Vec<i64> = read_table(out, "events")
        .iter()
        .map(|r| r.int("offset").unwrap())
        .collect();
    offsets.sort_unstable();
    let total = offsets.len();
    offsets.dedup();
    assert_eq!(offsets.len(), total, "a row is visible twice");
}

fn run(ops: &[Op]) {
    let agent = Agent::with_log(&synthetic(20, 0));
    let out = tempfile::tempdir().unwrap();
    let id = std::fs::canonicalize(agent.path())
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let sources = [agent.path().to_path_buf()];
    let mut torn = false;
    for op in ops {
        match *op {
            Op::Append { responses, seed } if !torn => {
                agent.append_raw(&synthetic(responses, seed));
            }
            Op::AppendTorn if !torn => {
                agent.append_raw(br#"{"type": "llm_response", "ts": 1786000000, "input_tok"#);
                torn = true;
            }
            Op::CompleteTorn if torn => {
                agent.append_raw(b"ens\": 5}\n");
                torn = false;
            }
            // An append while a line is torn, or a completion without one, does nothing.
            Op::Append { .. } | Op::AppendTorn | Op::CompleteTorn => {}
            Op::Truncate { keep_percent } => {
                let log = agent.log();
                let keep = log.len() * usize::from(keep_percent) / 100;
                let cut = log[..keep]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                agent.write_log(&log[..cut]);
                torn = false;
            }
            Op::RewriteHead => {
                let mut log = agent.log();
                if let Some(at) = log.iter().take(4096).position(u8::is_ascii_digit) {
                    log[at] = if log[at] == b'9' { b'1' } else { log[at] + 1 };
                    agent.write_log(&log);
                }
            }
            Op::Export => {
                export(&sources, &options(out.path(), None), &mut |_| {}).unwrap();
                let log = agent.log();
                assert_events_match(out.path(), &id, &log);
                assert_generations_match(out.path(), &id, &log);
                assert_no_leftovers(out.path());
            }
            Op::ExportStopped { step } => {
                match export(&sources, &options(out.path(), Some(step)), &mut |_| {}) {
                    Ok(_) | Err(ExportError::Interrupted { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
                assert_at_most_once(out.path());
            }
            Op::Compact { stop } => {
                match compact(&sources, &options(out.path(), stop)) {
                    Ok(_) | Err(ExportError::Interrupted { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
                assert_at_most_once(out.path());
            }
            Op::DamageState { at } => {
                if let Some(path) = state_file(out.path()) {
                    let mut bytes = std::fs::read(&path).unwrap();
                    if !bytes.is_empty() {
                        let at = at % bytes.len();
                        bytes[at] ^= 0x01;
                        std::fs::write(&path, bytes).unwrap();
                    }
                }
            }
            Op::DeleteState => {
                if let Some(path) = state_file(out.path()) {
                    std::fs::remove_file(path).unwrap();
                }
            }
        }
    }
    // Whatever happened, one more export makes the dataset exact.
    export(&sources, &options(out.path(), None), &mut |_| {}).unwrap();
    let log = agent.log();
    assert_events_match(out.path(), &id, &log);
    assert_generations_match(out.path(), &id, &log);
    assert_no_leftovers(out.path());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn any_sequence_of_changes_exports_and_stops_ends_exact(ops in prop::collection::vec(op(), 1..14)) {
        run(&ops);
    }
}
