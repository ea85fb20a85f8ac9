//! The writer: one per log, whole lines, offsets that match the file, the index kept current,
//! and nothing of a bad batch written.

mod common;

use std::time::Duration;

use agentlog::index::{CommitPolicy, IndexError, IndexOutcome, Writer, WriterOptions};
use agentlog::log::{LogError, SyncPolicy};
use common::{Agent, assert_index_matches_oracle, assert_tiers_match_oracle, molt, token};

fn options(sync: SyncPolicy) -> WriterOptions {
    WriterOptions {
        sync,
        ..WriterOptions::default()
    }
}

#[test]
fn offsets_are_byte_positions_and_lines_are_written_raw() {
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::Fsync)).unwrap();
    let first = writer
        .append_json(r#"{"type":"note","text":"雪"}"#.as_bytes())
        .unwrap();
    let second = writer
        .append(&serde_json::json!({"type": "llm_response", "input_tokens": 5}))
        .unwrap();
    assert_eq!(first.start, 0);
    assert_eq!(second.start, first.end);
    let log = agent.log();
    assert_eq!(
        &log[..usize::try_from(first.end).unwrap()],
        "{\"type\":\"note\",\"text\":\"雪\"}\n".as_bytes()
    );
    assert_eq!(log.len() as u64, second.end);
    // Visible at once, to readers in this process and any other.
    assert_eq!(writer.durable_len(), second.end);
    assert_eq!(agent.oracle().since().calls, 1);
    writer.close().unwrap();
}

#[test]
fn a_batch_with_one_bad_event_writes_nothing() {
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::Fsync)).unwrap();
    writer.append_json(br#"{"type":"a"}"#).unwrap();
    let before = agent.log();
    for bad in [
        &b"[1,2]"[..],
        b"not json",
        b"",
        b"   ",
        b"{\"a\":1} {\"b\":2}",
        b"{\"a\":\"\xff\"}",
        b"{\"a\":\"x\ny\"}",
        b"{\"a\":\"\\ud800\"}",
    ] {
        match writer.append_batch_json(&[&br#"{"type":"ok"}"#[..], bad]) {
            Err(IndexError::Log(LogError::InvalidEvent {
                index: 1, reason, ..
            })) => {
                assert!(!reason.is_empty());
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bad)),
        }
        assert_eq!(
            agent.log(),
            before,
            "nothing written for {:?}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(writer.state().events, 1);
    writer.close().unwrap();
}

#[test]
fn newlines_between_tokens_become_spaces_so_an_event_stays_one_line() {
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::None)).unwrap();
    writer
        .append_json(b"{\n  \"type\": \"llm_response\",\r\n  \"input_tokens\": 3\n}\n")
        .unwrap();
    writer.close().unwrap();
    let log = agent.log();
    assert_eq!(memchr::memchr_iter(b'\n', &log).count(), 1);
    assert_eq!(agent.oracle().since().input, 3);
}

#[test]
fn oversized_event_is_rejected() {
    let agent = Agent::new();
    let mut opts = options(SyncPolicy::None);
    opts.index.max_line = 100;
    let mut writer = Writer::open(&agent.paths, opts).unwrap();
    let big = format!("{{\"type\":\"x\",\"pad\":\"{}\"}}", "a".repeat(200));
    assert!(matches!(
        writer.append_json(big.as_bytes()),
        Err(IndexError::Log(LogError::InvalidEvent { .. }))
    ));
    assert!(agent.log().is_empty());
}

#[test]
fn a_second_writer_gets_a_clear_error() {
    let agent = Agent::new();
    let _writer = Writer::open(&agent.paths, options(SyncPolicy::None)).unwrap();
    match Writer::open(&agent.paths, options(SyncPolicy::None)) {
        Err(IndexError::Log(LogError::Locked { path })) => assert_eq!(path, agent.paths.log),
        Err(other) => panic!("unexpected {other}"),
        Ok(_) => panic!("a second writer opened"),
    }
}

#[test]
fn state_and_index_stay_equal_to_the_oracle_across_commits() {
    let agent = Agent::new();
    let mut opts = options(SyncPolicy::None);
    opts.commit = CommitPolicy {
        rows: 7,
        bytes: 1 << 20,
        interval: Duration::from_hours(1),
    };
    let mut writer = Writer::open(&agent.paths, opts).unwrap();
    let log = common::synthetic(200, 5);
    let events: Vec<&[u8]> = log
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    for chunk in events.chunks(3) {
        writer.append_batch_json(chunk).unwrap();
    }
    let oracle = agent.oracle();
    assert_eq!(
        common::oracle::OTotals::from(writer.state().since_latest()),
        oracle.since()
    );
    assert_eq!(writer.state().events, oracle.events);
    writer.close().unwrap();
    let index = agent.open_index();
    assert_eq!(
        index.outcome(),
        &IndexOutcome::Fresh,
        "close commits everything"
    );
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn dropping_without_close_loses_nothing() {
    let agent = Agent::new();
    {
        let mut writer = Writer::open(&agent.paths, options(SyncPolicy::None)).unwrap();
        for i in 0..10 {
            writer
                .append_json(token(f64::from(i), 10, 1, 0).trim().as_bytes())
                .unwrap();
        }
    }
    // The next open (committing any new lines, not folding a small tail in memory) indexes
    // the ten events the dropped writer never committed.
    let index = agent.open_index_committing();
    assert!(
        matches!(index.outcome(), IndexOutcome::CaughtUp { events: 10, .. }),
        "{:?}",
        index.outcome()
    );
    assert_index_matches_oracle(&index, &agent.log());
}

#[test]
fn lines_appended_by_another_program_are_indexed_in_order() {
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::None)).unwrap();
    writer
        .append_json(token(1.0, 10, 1, 0).trim().as_bytes())
        .unwrap();
    agent.append_raw(molt(2.0, 1, "system").as_bytes());
    agent.append_raw(token(3.0, 20, 1, 0).as_bytes());
    let receipt = writer
        .append_json(token(4.0, 40, 1, 0).trim().as_bytes())
        .unwrap();
    assert_eq!(receipt.end, agent.log().len() as u64);
    let since = writer.state().since_latest();
    assert_eq!((since.api_calls, since.input_tokens), (2, 60));
    writer.close().unwrap();
    assert_index_matches_oracle(&agent.open_index(), &agent.log());
    assert_tiers_match_oracle(&agent.paths, Some(1), 8 << 20);
}

#[test]
fn log_truncated_under_the_writer_is_resynchronised() {
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::None)).unwrap();
    for i in 0..20 {
        writer
            .append_json(token(f64::from(i), 10, 1, 0).trim().as_bytes())
            .unwrap();
    }
    writer.commit_index().unwrap();
    let log = agent.log();
    let cut = log
        .iter()
        .take(log.len() / 2)
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&agent.paths.log)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    writer
        .append_json(token(99.0, 1000, 1, 0).trim().as_bytes())
        .unwrap();
    let oracle = agent.oracle();
    assert_eq!(
        common::oracle::OTotals::from(writer.state().since_latest()),
        oracle.since()
    );
    writer.close().unwrap();
    assert_index_matches_oracle(&agent.open_index(), &agent.log());
}

#[test]
fn durability_policies_acknowledge_as_documented() {
    let agent = Agent::new();
    let mut fsync = Writer::open(&agent.paths, options(SyncPolicy::Fsync)).unwrap();
    let at = fsync.append_json(br#"{"type":"a"}"#).unwrap();
    assert_eq!(fsync.durable_len(), at.end, "fsync: durable on return");
    fsync.close().unwrap();

    let mut interval = Writer::open(
        &agent.paths,
        options(SyncPolicy::Interval(Duration::from_millis(5))),
    )
    .unwrap();
    let at = interval.append_json(br#"{"type":"b"}"#).unwrap();
    interval.wait_durable(at.end).unwrap();
    assert!(
        interval.durable_len() >= at.end,
        "interval: durable after the group commit"
    );
    interval.close().unwrap();

    let mut none = Writer::open(&agent.paths, options(SyncPolicy::None)).unwrap();
    let start = none.durable_len();
    let at = none.append_json(br#"{"type":"c"}"#).unwrap();
    assert_eq!(
        none.durable_len(),
        start,
        "flush-only: never synced on its own"
    );
    none.commit_index().unwrap();
    assert_eq!(
        none.durable_len(),
        at.end,
        "an index commit syncs the log first"
    );
    none.close().unwrap();
}

#[test]
fn reopening_after_close_is_fresh_and_appends_continue() {
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::Fsync)).unwrap();
    writer
        .append_json(molt(1.0, 1, "agent").trim().as_bytes())
        .unwrap();
    writer.close().unwrap();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::Fsync)).unwrap();
    assert_eq!(writer.outcome(), &IndexOutcome::Fresh);
    writer
        .append_json(token(2.0, 5, 1, 0).trim().as_bytes())
        .unwrap();
    assert_eq!(writer.state().since_latest().api_calls, 1);
    writer.close().unwrap();
    assert_tiers_match_oracle(&agent.paths, Some(1), 8 << 20);
}

#[test]
fn an_empty_batch_is_a_no_op() {
    // An empty batch writes nothing; it is not bytes without a newline.
    let agent = Agent::new();
    let mut writer = Writer::open(&agent.paths, options(SyncPolicy::Fsync)).unwrap();
    let none: [&[u8]; 0] = [];
    assert!(writer.append_batch_json(&none).unwrap().is_empty());
    assert!(agent.log().is_empty());
    writer.close().unwrap();
}
