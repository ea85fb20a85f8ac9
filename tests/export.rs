//! The Parquet export, read back with the `parquet` crate's reader and checked against the naive
//! oracle: first exports, appends, torn tails, truncations, rewrites, lost or damaged states,
//! leftovers of interrupted exports, session stores, several hosts, compaction.
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

use std::path::{Path, PathBuf};

use agentlog::export::{ExportError, ExportOptions, ExportReport, compact, export};
use common::{Agent, synthetic};
use export_support::{
    assert_events_match, assert_generations_match, assert_no_leftovers, events_by_source,
    read_table, visible_files,
};

fn options(out: &Path) -> ExportOptions {
    ExportOptions {
        host: "test-host".to_owned(),
        ..ExportOptions::new(out)
    }
}

fn run(sources: &[&Path], out: &Path) -> ExportReport {
    let sources: Vec<PathBuf> = sources.iter().map(|p| p.to_path_buf()).collect();
    export(&sources, &options(out), &mut |_| {}).expect("export")
}

fn source_id(agent: &Agent) -> String {
    std::fs::canonicalize(agent.path())
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn assert_exact(out: &Path, agent: &Agent) {
    let log = agent.log();
    assert_events_match(out, &source_id(agent), &log);
    assert_generations_match(out, &source_id(agent), &log);
    assert_no_leftovers(out);
}

#[test]
fn first_export_matches_the_oracle_row_for_row() {
    let agent = Agent::with_log(&synthetic(600, 7));
    let out = tempfile::tempdir().unwrap();
    let report = run(&[agent.path()], out.path());
    assert_eq!(report.sources[0].action, "first");
    assert_eq!(report.rows, agent.oracle().events);
    assert_eq!(report.log_bytes, agent.log().len() as u64);
    assert_exact(out.path(), &agent);
    // The generations table agrees with `generations` too (the library's, as the CLI prints).
    let generations = agentlog::generation::generations_at(
        &agent.paths,
        &agentlog::generation::GenerationRequest::latest(),
    )
    .unwrap();
    let rows = read_table(out.path(), "generations");
    assert_eq!(rows.len(), generations.generations.len());
}

#[test]
fn appends_become_new_parts_and_earlier_event_parts_are_never_rewritten() {
    let log = synthetic(900, 3);
    let cut = log[..log.len() / 2]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let agent = Agent::with_log(&log[..cut]);
    let out = tempfile::tempdir().unwrap();
    run(&[agent.path()], out.path());
    let first_parts: Vec<(PathBuf, Vec<u8>)> = visible_files(out.path(), "events")
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    agent.append_raw(&log[cut..]);
    let report = run(&[agent.path()], out.path());
    assert_eq!(report.sources[0].action, "incremental");
    assert_eq!(report.sources[0].from, cut as u64);
    assert_eq!(
        report.log_bytes,
        (log.len() - cut) as u64,
        "only the new bytes are read"
    );
    for (path, bytes) in &first_parts {
        assert_eq!(
            &std::fs::read(path).unwrap(),
            bytes,
            "{} unchanged",
            path.display()
        );
    }
    assert_exact(out.path(), &agent);
    let again = run(&[agent.path()], out.path());
    assert_eq!(again.sources[0].action, "unchanged");
    assert_eq!((again.files, again.rows, again.removed), (0, 0, 0));
}

#[test]
fn a_torn_tail_waits_until_its_line_is_complete() {
    let agent = Agent::with_log(&synthetic(50, 1));
    let out = tempfile::tempdir().unwrap();
    run(&[agent.path()], out.path());
    agent.append_raw(br#"{"type": "llm_response", "ts": 1786000000, "input_tok"#);
    let report = run(&[agent.path()], out.path());
    assert_eq!(report.rows, 0);
    assert_exact(out.path(), &agent);
    agent.append_raw(b"ens\": 5}\n");
    let report = run(&[agent.path()], out.path());
    assert_eq!(report.rows, 1);
    assert_exact(out.path(), &agent);
}

#[test]
fn a_truncated_or_rewritten_log_is_exported_whole_and_its_old_parts_replaced() {
    let log = synthetic(400, 11);
    let agent = Agent::with_log(&log);
    let out = tempfile::tempdir().unwrap();
    run(&[agent.path()], out.path());
    let before: Vec<PathBuf> = visible_files(out.path(), "events");

    let cut = log[..log.len() / 3]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    agent.write_log(&log[..cut]);
    let report = run(&[agent.path()], out.path());
    assert_eq!(report.sources[0].action, "reexported");
    assert_eq!(
        report.sources[0].reason.as_deref(),
        Some("the log was truncated")
    );
    assert!(before.iter().all(|p| !p.exists()), "old parts are gone");
    assert_exact(out.path(), &agent);

    // Same length, other bytes: the windows tell.
    let mut rewritten = agent.log();
    let at = rewritten.iter().position(|&b| b == b'1').unwrap();
    rewritten[at] = b'2';
    agent.write_log(&rewritten);
    let report = run(&[agent.path()], out.path());
    assert_eq!(
        report.sources[0].reason.as_deref(),
        Some("the log was rewritten")
    );
    assert_exact(out.path(), &agent);
}

fn state_files(out: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(out.join("_agentlog").join("test-host"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "state"))
        .collect()
}

#[test]
fn a_damaged_or_lost_state_starts_the_source_over_without_duplicating_a_row() {
    let agent = Agent::with_log(&synthetic(300, 5));
    let out = tempfile::tempdir().unwrap();
    run(&[agent.path()], out.path());
    agent.append_raw(&common::lines(&[common::token(1_786_000_100.0, 10, 1, 0)]));
    run(&[agent.path()], out.path());
    let [state] = state_files(out.path()).try_into().unwrap();

    let mut damaged = std::fs::read(&state).unwrap();
    let last = damaged.len() - 3;
    damaged[last] ^= 0x20;
    std::fs::write(&state, &damaged).unwrap();
    let report = run(&[agent.path()], out.path());
    assert_eq!(report.sources[0].action, "reexported");
    assert!(
        report.sources[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("unusable")
    );
    assert!(
        report.removed > 0,
        "the parts it can no longer account for are deleted"
    );
    assert_exact(out.path(), &agent);

    std::fs::remove_file(&state).unwrap();
    let report = run(&[agent.path()], out.path());
    assert_eq!(report.sources[0].action, "first");
    assert_exact(out.path(), &agent);
}

#[test]
fn leftovers_of_an_interrupted_export_are_never_read_and_are_cleaned_up() {
    let log = synthetic(300, 9);
    let cut = log[..log.len() / 2]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let agent = Agent::with_log(&log[..cut]);
    let out = tempfile::tempdir().unwrap();
    run(&[agent.path()], out.path());
    agent.append_raw(&log[cut..]);
    // Stop the next export at each of its steps in turn; after every stop the rows visible are
    // each there at most once, and the next export completes the work exactly.
    let mut step = 1;
    loop {
        let mut options = options(out.path());
        options.fail_at_step = Some(step);
        match export(&[agent.path().to_path_buf()], &options, &mut |_| {}) {
            Err(ExportError::Interrupted { .. }) => {}
            Ok(_) => break,
            Err(e) => panic!("step {step}: {e}"),
        }
        let by = events_by_source(out.path());
        let offsets: Vec<i64> = by
            .values()
            .flatten()
            .map(|r| r.int("offset").unwrap())
            .collect();
        let mut unique = offsets.clone();
        unique.dedup();
        assert_eq!(offsets, unique, "step {step}: a row is visible twice");
        step += 1;
    }
    assert!(step > 3, "the export took {step} steps");
    assert_exact(out.path(), &agent);
}

#[test]
fn session_stores_export_each_session_with_its_header() {
    use agentlog::query::{SessionEvent, SessionHeader, Store, StoreConfig};
    let root = tempfile::tempdir().unwrap();
    let store = Store::open(root.path(), StoreConfig::default()).unwrap();
    for (id, n) in [("alpha", 5u64), ("beta", 12)] {
        let mut header = SessionHeader::new(id, 1_786_000_000_000);
        header.cwd = Some("/work".to_owned());
        store.create_session(header).unwrap();
        let events = (0..n)
            .map(|seq| {
                SessionEvent::new(
                    "turn/start",
                    seq,
                    1_786_000_000_000 + seq as i64,
                    serde_json::json!({"n": seq}),
                )
            })
            .collect();
        store.append(id, events).unwrap();
        store.checkpoint(id).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let report = run(&[root.path()], out.path());
    assert_eq!(report.sources.len(), 2);
    let by = events_by_source(out.path());
    assert_eq!(by["alpha"].len(), 5);
    assert_eq!(by["beta"].len(), 12);
    assert!(
        by["beta"]
            .iter()
            .enumerate()
            .all(|(i, r)| r.int("seq") == Some(i as i64))
    );
    assert!(
        by["beta"]
            .iter()
            .all(|r| r.source_kind == "session" && r.int("input_tokens").is_none())
    );
    let sessions = read_table(out.path(), "sessions");
    assert_eq!(sessions.len(), 2);
    assert!(
        sessions
            .iter()
            .all(|r| r.text("cwd").as_deref() == Some("/work"))
    );
    assert!(
        sessions
            .iter()
            .all(|r| r.int("created_at") == Some(1_786_000_000_000_000))
    );
    assert!(read_table(out.path(), "generations").is_empty());

    store
        .append(
            "alpha",
            vec![SessionEvent::new(
                "turn/start",
                5,
                1_786_000_009_000,
                serde_json::json!({"n": 5}),
            )],
        )
        .unwrap();
    store.checkpoint("alpha").unwrap();
    let report = run(&[root.path()], out.path());
    assert_eq!(report.rows, 1);
    assert_eq!(events_by_source(out.path())["alpha"].len(), 6);
    assert_eq!(
        read_table(out.path(), "sessions").len(),
        2,
        "headers are written once"
    );
}

#[test]
fn anything_that_is_not_a_source_is_a_typed_error_and_nothing_is_written() {
    let out = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let file = empty.path().join("notes.txt");
    std::fs::write(&file, "hello").unwrap();
    let missing = empty.path().join("missing");
    let agent = Agent::with_log(&synthetic(10, 1));
    for (path, is_expected) in [
        (empty.path().to_path_buf(), "not_a_source"),
        (file.clone(), "not_a_source"),
        (missing.clone(), "no_source"),
    ] {
        let result = export(
            &[agent.path().to_path_buf(), path.clone()],
            &options(out.path()),
            &mut |_| {},
        );
        match (result, is_expected) {
            (Err(ExportError::NotASource { .. }), "not_a_source")
            | (Err(ExportError::NoSource { .. }), "no_source") => {}
            (other, _) => panic!("{}: {other:?}", path.display()),
        }
    }
    assert!(
        visible_files(out.path(), "events").is_empty(),
        "nothing was exported"
    );
    let bad_host = ExportOptions {
        host: ".hidden".to_owned(),
        ..ExportOptions::new(out.path())
    };
    assert!(matches!(
        export(&[agent.path().to_path_buf()], &bad_host, &mut |_| {}),
        Err(ExportError::InvalidHost { .. })
    ));
}

#[test]
fn without_json_text_the_json_column_is_null_and_the_rest_is_unchanged() {
    let agent = Agent::with_log(&synthetic(80, 2));
    let out = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        json_text: false,
        ..options(out.path())
    };
    export(&[agent.path().to_path_buf()], &options, &mut |_| {}).unwrap();
    let rows = read_table(out.path(), "events");
    assert!(rows.iter().all(|r| r.text("json").is_none()));
    assert_exact(out.path(), &agent);
}

#[test]
fn hosts_share_a_dataset_without_touching_each_others_files() {
    let agent = Agent::with_log(&synthetic(60, 4));
    let out = tempfile::tempdir().unwrap();
    for host in ["alpha", "beta"] {
        let options = ExportOptions {
            host: host.to_owned(),
            ..ExportOptions::new(out.path())
        };
        export(&[agent.path().to_path_buf()], &options, &mut |_| {}).unwrap();
    }
    let rows = read_table(out.path(), "events");
    let per_host = |h: &str| {
        rows.iter()
            .filter(|r| r.text("host").as_deref() == Some(h))
            .count() as u64
    };
    assert_eq!(per_host("alpha"), agent.oracle().events);
    assert_eq!(per_host("beta"), agent.oracle().events);
    assert!(visible_files(out.path(), "events").iter().all(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name.starts_with("alpha_") || name.starts_with("beta_")
    }));
}

#[test]
fn events_without_a_time_land_in_the_null_date_partition() {
    let agent = Agent::with_log(
        b"{\"type\":\"note\"}\n{\"type\":\"llm_response\",\"ts\":1786000000,\"input_tokens\":3}\n",
    );
    let out = tempfile::tempdir().unwrap();
    run(&[agent.path()], out.path());
    let rows = read_table(out.path(), "events");
    let dates: Vec<&str> = rows.iter().map(|r| r.date.as_str()).collect();
    assert!(dates.contains(&"__HIVE_DEFAULT_PARTITION__") && dates.contains(&"2026-08-06"));
    assert_exact(out.path(), &agent);
}

#[test]
fn compaction_merges_small_parts_and_keeps_every_row_once() {
    let log = synthetic(500, 21);
    let agent = Agent::new();
    let out = tempfile::tempdir().unwrap();
    let ends: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let mut written = 0;
    for chunk in ends.chunks(ends.len() / 6 + 1) {
        let end = *chunk.last().unwrap();
        agent.append_raw(&log[written..end]);
        written = end;
        run(&[agent.path()], out.path());
    }
    let before = visible_files(out.path(), "events").len();
    assert!(before >= 6, "{before} parts");
    let report = compact(&[agent.path().to_path_buf()], &options(out.path())).unwrap();
    assert!(report.merged >= 6 && report.files >= 1, "{report:?}");
    let after = visible_files(out.path(), "events").len();
    assert!(after < before, "{after} parts after compaction");
    assert_exact(out.path(), &agent);
    // And the dataset keeps growing incrementally after it.
    agent.append_raw(&common::lines(&[common::token(1_786_001_000.0, 1, 1, 0)]));
    run(&[agent.path()], out.path());
    assert_exact(out.path(), &agent);
}
