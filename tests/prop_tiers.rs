//! Property tests: on random logs and random sequences of operations, every tier equals the
//! naive oracle, or returns the typed mismatch exactly when the oracle cannot prove the label.
//!
//! Logs here stay under 64 KiB, so the head and tail windows cover them whole and every rewrite
//! is within what the O(1) open check promises to detect (a rewrite in the middle of a larger
//! log is `verify --deep`'s job; see docs/FORMAT.md).
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agentlog::index::{CommitPolicy, Index, IndexOptions, Writer, WriterOptions};
use agentlog::log::SyncPolicy;
use common::{
    Agent, assert_index_matches_oracle, assert_rows_match_oracle, assert_tiers_match_oracle,
    with_warnings,
};
use proptest::prelude::*;
use std::fmt::Write as _;

#[derive(Clone, Debug)]
enum Value {
    Int(u64),
    Huge,
    Float(f64),
    DecimalString(u32, Option<u8>),
    BadString(&'static str),
    Null,
    Bool,
    Negative(i64),
    Object,
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => (0u64..200_000).prop_map(Value::Int),
        1 => Just(Value::Huge),
        1 => (0.0f64..1e6).prop_map(Value::Float),
        1 => (0u32..100_000, proptest::option::of(0u8..100)).prop_map(|(w, f)| Value::DecimalString(w, f)),
        1 => prop_oneof![Just(" 5"), Just("1e3"), Just("-2"), Just("x"), Just("12."), Just("")].prop_map(Value::BadString),
        1 => Just(Value::Null),
        1 => Just(Value::Bool),
        1 => (-1000i64..-1).prop_map(Value::Negative),
        1 => Just(Value::Object),
    ]
}

fn render(value: &Value) -> String {
    match value {
        Value::Int(n) => n.to_string(),
        Value::Huge => "9007199254740993".to_owned(),
        Value::Float(f) => format!("{f:.3}"),
        Value::DecimalString(w, None) => format!("\"{w}\""),
        Value::DecimalString(w, Some(f)) => format!("\"{w}.{f}\""),
        Value::BadString(s) => format!("\"{s}\""),
        Value::Null => "null".to_owned(),
        Value::Bool => "true".to_owned(),
        Value::Negative(n) => n.to_string(),
        Value::Object => "{\"n\": 1}".to_owned(),
    }
}

#[derive(Clone, Debug)]
enum Line {
    Token(Vec<Option<Value>>, bool),
    Boundary(Option<&'static str>, Option<&'static str>),
    Other(&'static str),
    Daemon,
    Invalid(&'static str),
    Blank,
}

fn line() -> impl Strategy<Value = Line> {
    let molt = prop_oneof![
        5 => (0usize..6).prop_map(|n| Some(["0", "1", "2", "3", "4", "5"][n])),
        1 => Just(None),
        1 => prop_oneof![Just(Some("\"3\"")), Just(Some("3.0")), Just(Some("-1")), Just(Some("null"))],
    ];
    let initiator = prop_oneof![
        Just(None),
        Just(Some("\"system\"")),
        Just(Some("\"\"")),
        Just(Some("7"))
    ];
    prop_oneof![
        8 => (proptest::collection::vec(proptest::option::weighted(0.9, value()), 4), any::<bool>()).prop_map(|(v, d)| Line::Token(v, d)),
        2 => (molt, initiator).prop_map(|(m, i)| Line::Boundary(m, i)),
        3 => prop_oneof![Just("llm_call"), Just("tool_call"), Just("session"), Just("agent_state")].prop_map(Line::Other),
        1 => Just(Line::Daemon),
        1 => prop_oneof![Just("{\"type\": \"llm_response\""), Just("[1, 2]"), Just("garbage"), Just("{\"a\": \"\\ud800\"}"), Just("{\"type\": \"psyche_molt\"} x"), Just("x {\"type\": \"psyche_molt\", \"molt_count\": 2}"), Just("] {\"type\": \"llm_response\", \"input_tokens\": 7}")].prop_map(Line::Invalid),
        1 => Just(Line::Blank),
    ]
}

fn render_line(line: &Line) -> String {
    match line {
        Line::Token(values, duplicate) => {
            let names = [
                "input_tokens",
                "output_tokens",
                "cached_tokens",
                "thinking_tokens",
            ];
            let mut out = String::from("{\"type\": \"llm_response\", \"ts\": 1.5");
            if *duplicate {
                // An earlier duplicate that the last occurrence overrides.
                out.push_str(", \"input_tokens\": 999999");
            }
            for (name, value) in names.iter().zip(values) {
                if let Some(value) = value {
                    write!(out, ", \"{name}\": {}", render(value)).unwrap();
                }
            }
            out.push_str(", \"nested\": {\"a\": [1, {\"b\": null}]}}");
            out
        }
        Line::Boundary(molt, initiator) => {
            let mut out = String::from("{\"type\": \"psyche_molt\", \"ts\": 9");
            if let Some(m) = molt {
                write!(out, ", \"molt_count\": {m}").unwrap();
            }
            if let Some(i) = initiator {
                write!(out, ", \"initiator\": {i}").unwrap();
            }
            out.push('}');
            out
        }
        Line::Other(kind) => format!("{{\"type\": \"{kind}\", \"id\": \"x\"}}"),
        Line::Daemon => {
            "{\"event\": \"llm_response\", \"ts\": \"2026-08-08T09:00:00Z\", \"input_tokens\": 3}"
                .to_owned()
        }
        Line::Invalid(text) => (*text).to_owned(),
        Line::Blank => "  ".to_owned(),
    }
}

/// `at` (in `0.0..=1.0`) of `len`, rounded down.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "test files are far below 2^53 bytes, and the product is in 0..=len"
)]
fn fraction_of(len: usize, at: f64) -> usize {
    (len as f64 * at) as usize
}

fn log_of(lines: &[Line], torn: Option<&String>) -> Vec<u8> {
    let mut out = String::new();
    for line in lines {
        out.push_str(&render_line(line));
        out.push('\n');
    }
    if let Some(torn) = torn {
        out.push_str(torn);
    }
    out.into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_tier_equals_the_oracle_on_random_logs(
        lines in proptest::collection::vec(line(), 0..60),
        torn in proptest::option::of("[a-z{\":, ]{1,30}"),
        expected in proptest::option::of(0u64..6),
        window in 40u64..4000,
    ) {
        let agent = Agent::with_log(&log_of(&lines, torn.as_ref()));
        assert_tiers_match_oracle(&agent.paths, expected, window);
        let latest = agent.oracle().latest().and_then(|b| b.molt_count);
        assert_tiers_match_oracle(&agent.paths, latest, window);
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// An external program appends lines (and maybe a torn fragment).
    AppendRaw(Vec<Line>, Option<String>),
    /// An agentlog writer appends lines (terminating any torn fragment first).
    AppendWriter(Vec<Line>),
    /// Completes a torn final line, if there is one.
    CompleteTail,
    Truncate(f64),
    RewriteByte(f64, u8),
    DeleteIndex,
    CorruptIndex(f64, u8),
    Open,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::collection::vec(line(), 0..8), proptest::option::of("[a-z{\":, ]{1,20}")).prop_map(|(l, t)| Op::AppendRaw(l, t)),
        3 => proptest::collection::vec(line(), 1..8).prop_map(Op::AppendWriter),
        1 => Just(Op::CompleteTail),
        1 => (0.0f64..1.0).prop_map(Op::Truncate),
        1 => (0.0f64..1.0, any::<u8>()).prop_map(|(f, b)| Op::RewriteByte(f, b)),
        1 => Just(Op::DeleteIndex),
        1 => (0.0f64..1.0, any::<u8>()).prop_map(|(f, b)| Op::CorruptIndex(f, b)),
        3 => Just(Op::Open),
    ]
}

fn apply(agent: &Agent, op: &Op) {
    match op {
        Op::AppendRaw(lines, torn) => agent.append_raw(&log_of(lines, torn.as_ref())),
        Op::AppendWriter(lines) => {
            let options = WriterOptions {
                sync: SyncPolicy::None,
                ..WriterOptions::default()
            };
            let mut writer = Writer::open(&agent.paths, options).expect("writer");
            // Only lines that are JSON objects can be appended through the writer.
            let events: Vec<String> = lines
                .iter()
                .map(render_line)
                .filter(|l| {
                    matches!(
                        serde_json::from_str::<serde_json::Value>(l),
                        Ok(serde_json::Value::Object(_))
                    )
                })
                .collect();
            if !events.is_empty() {
                writer.append_batch_json(&events).expect("append");
            }
            let since = writer.state().since_latest();
            let oracle = agent.oracle();
            assert_eq!(
                common::oracle::OTotals::from(since),
                oracle.since(),
                "writer state"
            );
            writer.close().expect("close");
        }
        Op::CompleteTail => {
            let log = agent.log();
            if log.last().is_some_and(|&b| b != b'\n') {
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
        Op::CorruptIndex(at, byte) => {
            if let Ok(mut index) = std::fs::read(&agent.paths.index)
                && !index.is_empty()
            {
                let i = fraction_of(index.len() - 1, *at);
                index[i] ^= byte | 1;
                std::fs::write(&agent.paths.index, &index).expect("write index");
            }
        }
        Op::Open => {
            let index = Index::open(&agent.paths, &IndexOptions::default()).expect("open");
            assert_index_matches_oracle(&index, &agent.log());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_the_index_equal_to_the_oracle(
        initial in proptest::collection::vec(line(), 0..20),
        ops in proptest::collection::vec(op(), 1..12),
    ) {
        let agent = Agent::with_log(&log_of(&initial, None));
        for op in &ops {
            apply(&agent, op);
            prop_assert!(agent.log().len() < 60_000, "keep logs inside the windows");
        }
        let index = Index::open(&agent.paths, &IndexOptions::default()).expect("open");
        assert_index_matches_oracle(&index, &agent.log());
        drop(index);
        assert_tiers_match_oracle(&agent.paths, None, 300);
    }
}

/// Found by the property test above: a flipped byte in a boundary row, which the O(1) open
/// cannot see. The query that reads the row reports it damaged and rebuilds the index; a
/// second open must then answer as the oracle does.
#[test]
fn a_row_damaged_after_a_clean_open_is_found_and_rebuilt() {
    use Line::{Boundary, Other, Token};
    use Value::{BadString, Bool, Float, Int, Object};
    let ops = [
        Op::AppendRaw(
            vec![
                Boundary(Some("\"3\""), Some("7")),
                Token(
                    vec![
                        Some(Int(177_210)),
                        Some(Float(844_204.844)),
                        Some(Object),
                        Some(Int(124_944)),
                    ],
                    false,
                ),
                Other("tool_call"),
            ],
            None,
        ),
        Op::AppendRaw(
            vec![
                Token(
                    vec![
                        Some(BadString("1e3")),
                        Some(Int(36_748)),
                        Some(Object),
                        Some(Float(365_506.148)),
                    ],
                    false,
                ),
                Token(
                    vec![
                        Some(Int(61_203)),
                        Some(Bool),
                        Some(Int(54_644)),
                        Some(Int(4_725)),
                    ],
                    false,
                ),
                Boundary(Some("2"), Some("\"system\"")),
                Other("session"),
                Token(
                    vec![
                        Some(Int(25_831)),
                        Some(Object),
                        Some(Int(54_360)),
                        Some(Int(162_825)),
                    ],
                    true,
                ),
            ],
            None,
        ),
        Op::RewriteByte(0.121_709_067_522_038_86, 239),
        Op::Open,
        Op::CorruptIndex(0.158_422_271_042_024, 23),
    ];
    let agent = Agent::new();
    for op in &ops {
        apply(&agent, op);
    }
    let index = Index::open(&agent.paths, &IndexOptions::default()).expect("open");
    assert_index_matches_oracle(&index, &agent.log());
    drop(index);
    assert_tiers_match_oracle(&agent.paths, None, 300);
}

/// `line` with an explicit `"seq"` when `seq` is given (only for lines that are objects).
fn with_seq(line: &Line, seq: Option<u64>) -> String {
    let rendered = render_line(line);
    match (seq, rendered.strip_prefix('{')) {
        (Some(seq), Some(rest)) => format!("{{\"seq\": {seq}, {rest}"),
        _ => rendered,
    }
}

/// Everything an index stores, read back through the public API.
fn index_contents(index: &Index, log: &[u8]) -> String {
    let mut out = format!(
        "{:?}\nduplicates {} crc {}\n{:?}\n{:?}\n{:?}\n",
        index.state(),
        index.duplicate_seqs(),
        index.running_crc(),
        index.boundaries().expect("boundaries"),
        index.invalid_lines().expect("invalid lines"),
        index.seq_offsets(0, u64::MAX).expect("seqs"),
    );
    let mut offset = 0u64;
    for line in log.split_inclusive(|&b| b == b'\n') {
        writeln!(
            out,
            "{offset}: {:?} {:?}",
            index.event_at(offset).expect("event"),
            index.totals_before(offset + 1).expect("totals"),
        )
        .unwrap();
        offset += line.len() as u64;
    }
    for name in [
        "llm_response",
        "psyche_molt",
        "llm_call",
        "tool_call",
        "session",
        "agent_state",
    ] {
        writeln!(
            out,
            "{name}: {:?}",
            index.offsets_of_type(name, 0, usize::MAX).expect("types")
        )
        .unwrap();
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A build of many small commits, each written in several batches (read and folded on one
    /// thread, written on another), stores exactly what a build in one commit on one thread
    /// does: rows, prefix sums, seqs and their duplicates across batches and commits, type ids
    /// first seen in later commits, and the meta record.
    #[test]
    fn a_build_in_many_commits_on_two_threads_equals_one_commit(
        // Up to 200 lines: several blocks of 64 events, with commits that end inside them.
        lines in proptest::collection::vec((line(), proptest::option::weighted(0.5, 0u64..12)), 0..200),
        commit_bytes in 0u64..2000,
    ) {
        let text: String = lines.iter().map(|(line, seq)| with_seq(line, *seq) + "\n").collect();
        let log = text.into_bytes();
        let whole = Agent::with_log(&log);
        let chunked = Agent::with_log(&log);
        let one_commit = Index::open(&whole.paths, &IndexOptions::default()).expect("open");
        let options = IndexOptions { commit_bytes, two_threads: true, ..IndexOptions::default() };
        let (many_commits, warnings) = with_warnings(|| Index::open(&chunked.paths, &options));
        let many_commits = many_commits.expect("open in chunks");
        prop_assert!(warnings.is_empty(), "{}", warnings);
        prop_assert!(matches!(many_commits.outcome(), agentlog::index::IndexOutcome::Created { .. }), "{:?}", many_commits.outcome());
        assert_index_matches_oracle(&many_commits, &log);
        assert_rows_match_oracle(&many_commits, &log);
        prop_assert_eq!(index_contents(&many_commits, &log), index_contents(&one_commit, &log));
        // And what the second thread committed is what a fresh open reads back.
        drop(many_commits);
        let reopened = Index::open(&chunked.paths, &IndexOptions::default()).expect("reopen");
        prop_assert!(matches!(reopened.outcome(), agentlog::index::IndexOutcome::Fresh));
        prop_assert_eq!(index_contents(&reopened, &log), index_contents(&one_commit, &log));
        assert_identical_to_a_rebuild(&reopened);
    }

    /// A writer whose commits by policy run on its commit thread while it goes on appending
    /// (in batches of random sizes, with explicit commits in between) leaves exactly the index
    /// that one build of the same log in one commit does, and its in-memory state equals it.
    #[test]
    fn a_writer_committing_in_the_background_equals_one_build(
        lines in proptest::collection::vec((line(), proptest::option::weighted(0.5, 0u64..12)), 1..200),
        batches in proptest::collection::vec(1usize..6, 1..40),
        commit_rows in 1usize..40,
        explicit_every in proptest::option::of(1usize..8),
        two_threads in any::<bool>(),
    ) {
        let events: Vec<String> = lines
            .iter()
            .map(|(line, seq)| with_seq(line, *seq))
            .filter(|l| matches!(serde_json::from_str::<serde_json::Value>(l), Ok(serde_json::Value::Object(_))))
            .collect();
        let agent = Agent::new();
        let mut options = WriterOptions { sync: SyncPolicy::None, ..WriterOptions::default() };
        options.index.two_threads = two_threads;
        options.commit = CommitPolicy {
            rows: commit_rows,
            bytes: u64::MAX,
            interval: std::time::Duration::from_hours(1),
        };
        let (state, warnings) = with_warnings(|| {
            let mut writer = Writer::open(&agent.paths, options).expect("writer");
            let mut rest = &events[..];
            for (round, size) in batches.iter().cycle().enumerate() {
                if rest.is_empty() {
                    break;
                }
                let (batch, after) = rest.split_at((*size).min(rest.len()));
                if batch.len() == 1 {
                    writer.append_json(batch[0].as_bytes()).expect("append");
                } else {
                    writer.append_batch_json(batch).expect("append batch");
                }
                rest = after;
                if explicit_every.is_some_and(|every| round % every == every - 1) {
                    writer.commit_index().expect("commit");
                }
            }
            let state = writer.state().clone();
            writer.close().expect("close");
            state
        });
        prop_assert!(warnings.is_empty(), "the writer rebuilt or failed a commit: {}", warnings);
        let log = agent.log();
        let one_build = Agent::with_log(&log);
        let expected = Index::open(&one_build.paths, &IndexOptions::default()).expect("build");
        let written = Index::open(&agent.paths, &IndexOptions::default()).expect("open");
        prop_assert!(matches!(written.outcome(), agentlog::index::IndexOutcome::Fresh), "{:?}", written.outcome());
        prop_assert_eq!(&state, written.state());
        assert_index_matches_oracle(&written, &log);
        assert_rows_match_oracle(&written, &log);
        prop_assert_eq!(index_contents(&written, &log), index_contents(&expected, &log));
        assert_identical_to_a_rebuild(&written);
    }
}

/// A build whose runs of lines are large enough to be extracted on two threads (a few MB)
/// folds them in file order: every row query agrees with the oracle, and every table equals
/// a build on one thread, byte for byte. Invalid lines are sprinkled through the log so that
/// both threads' parts of a run hold some.
#[test]
fn a_large_build_extracts_on_two_threads_and_stores_what_one_thread_does() {
    let mut log = Vec::new();
    let synthetic = common::synthetic(700, 11);
    for (i, line) in synthetic.split_inclusive(|&b| b == b'\n').enumerate() {
        log.extend_from_slice(line);
        match i % 331 {
            7 => log.extend_from_slice(b"{\"type\": \"llm_response\", \"input_tokens\": 3, torn\n"),
            101 => log.extend_from_slice(b"   \n"),
            _ => {}
        }
    }
    // One run of more than 512 KiB (`TWO_THREAD_RUN`) is split.
    assert!(
        log.len() > 1 << 20,
        "{} bytes: too small for two threads",
        log.len()
    );
    let agent = Agent::with_log(&log);
    let (index, warnings) = with_warnings(|| Index::open(&agent.paths, &IndexOptions::default()));
    let index = index.expect("build");
    assert!(warnings.is_empty(), "{warnings}");
    assert_index_matches_oracle(&index, &log);
    assert_rows_match_oracle(&index, &log);
    drop(index);
    assert_same_as_a_build_on_one_thread(&agent);
}

/// A build of a log of several 4 MiB runs (`RUN_BYTES`), on two threads: the extraction
/// helper reads each next run ahead and the scanner adopts it. The fold is the oracle's, and
/// every table, the meta record's running checksum among them, equals what a build on one
/// thread (which reads every run itself) stores.
#[test]
fn a_build_of_several_runs_reads_each_next_one_ahead_and_stores_what_one_thread_does() {
    let log = common::synthetic(5_000, 12);
    assert!(
        log.len() > 8 << 20,
        "{} bytes: too small for three runs",
        log.len()
    );
    let agent = Agent::with_log(&log);
    let index = Index::open(&agent.paths, &IndexOptions::default()).expect("build");
    assert_index_matches_oracle(&index, &log);
    drop(index);
    assert_same_as_a_build_on_one_thread(&agent);
}

/// The agent's index, reopened fresh on one thread, equals table for table a rebuild, which
/// runs on one thread.
fn assert_same_as_a_build_on_one_thread(agent: &Agent) {
    let one_thread = IndexOptions {
        two_threads: false,
        ..IndexOptions::default()
    };
    let reopened = Index::open(&agent.paths, &one_thread).expect("reopen");
    assert!(matches!(
        reopened.outcome(),
        agentlog::index::IndexOutcome::Fresh
    ));
    assert_identical_to_a_rebuild(&reopened);
}

/// Every table of `index`, byte for byte, is what a fresh build of its prefix of the log
/// stores (`verify --deep`'s row check): whatever path wrote it, an index is one function of
/// the log's bytes.
fn assert_identical_to_a_rebuild(index: &Index) {
    let tables = index
        .compare_with_rebuild()
        .expect("compare with a rebuild");
    assert_eq!(tables.len(), 8, "every table is compared");
    for table in tables {
        assert!(table.matches(), "{table:?}");
        assert_eq!(table.rows, table.expected_rows, "{table:?}");
    }
}
