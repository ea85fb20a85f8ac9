//! Real processes side by side: an agentlog writer and `agentlog status` in another process
//! (redb allows one writer process; the index is opened in its `SingleWriter` mode so readers
//! follow the writer's commits), and readers racing an external non-agentlog appender.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::{Agent, agentlog, token};
use serde_json::Value;

struct AppendProcess {
    child: Child,
    stdin: ChildStdin,
    acks: BufReader<ChildStdout>,
}

impl AppendProcess {
    fn spawn(dir: &str) -> AppendProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(["append", dir, "--sync", "fsync"])
            .env("AGENTLOG_LOG", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn writer");
        let stdin = child.stdin.take().expect("stdin");
        let acks = BufReader::new(child.stdout.take().expect("stdout"));
        AppendProcess { child, stdin, acks }
    }

    /// Sends events and waits until each is acknowledged (its offset printed).
    fn append_acknowledged(&mut self, events: &[String]) -> Vec<u64> {
        for event in events {
            self.stdin.write_all(event.as_bytes()).expect("write event");
        }
        self.stdin.flush().expect("flush");
        (0..events.len())
            .map(|_| {
                let mut line = String::new();
                self.acks.read_line(&mut line).expect("read ack");
                line.trim().parse().expect("offset")
            })
            .collect()
    }

    fn finish(self) -> i32 {
        let AppendProcess {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        child.wait().expect("wait").code().unwrap_or(-1)
    }
}

#[test]
fn status_answers_from_the_index_in_another_process_while_a_writer_runs() {
    let agent = Agent::with_log(&common::synthetic(3_000, 21));
    let dir = agent.path().to_str().unwrap().to_owned();
    assert_eq!(agentlog(&["index", &dir]).status.code(), Some(0));
    let log_len = agent.log().len();
    assert!(log_len > 4 << 20, "{log_len}");

    let mut writer = AppendProcess::spawn(&dir);
    let events: Vec<String> = (0..50u32)
        .map(|i| token(f64::from(i), 1000 + u64::from(i), 1, 0))
        .collect();
    let offsets = writer.append_acknowledged(&events);
    assert_eq!(offsets[0], log_len as u64);

    // Asked to commit any new lines, status finds the index held by the writer and folds
    // the tail in memory anyway (a small tail would be folded in memory without asking).
    let status = agentlog(&["status", &dir, "--json", "--max-memory-tail", "0"]);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["tier"], "index", "{v}");
    assert_eq!(v["index_outcome"], "read_only", "{v}");
    assert_eq!(v["index"]["why"], "held_by_another_process", "{v}");
    let oracle = agent.oracle();
    assert_eq!(v["api_calls"], oracle.since().calls);
    assert_eq!(
        v["input_tokens"].as_u64().map(u128::from),
        Some(oracle.since().input)
    );
    // O(1) in the log's size: the two windows plus the writer's not yet committed tail.
    let read = v["bytes_read"].as_u64().unwrap();
    assert!(read < 1 << 20, "read {read} bytes of a {log_len}-byte log");

    // A second writer is refused while the first runs.
    let second = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["append", &dir])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("locked by another writer"));

    let more: Vec<String> = (0..10u32).map(|i| token(f64::from(i), 7, 1, 0)).collect();
    writer.append_acknowledged(&more);
    let v: Value = serde_json::from_slice(&agentlog(&["status", &dir, "--json"]).stdout).unwrap();
    assert_eq!(v["api_calls"], agent.oracle().since().calls);
    assert_eq!(writer.finish(), 0);

    // The writer committed its rows when it closed.
    let v: Value = serde_json::from_slice(&agentlog(&["status", &dir, "--json"]).stdout).unwrap();
    assert_eq!(v["index_outcome"], "fresh", "{v}");
    assert_eq!(v["api_calls"], agent.oracle().since().calls);
}

#[test]
fn readers_never_count_a_partial_line_while_an_external_program_appends() {
    let agent = Agent::with_log(&common::lines(&[common::molt(0.0, 1, "agent")]));
    let dir = agent.path().to_str().unwrap().to_owned();
    let log = agent.paths.log.to_str().unwrap().to_owned();
    // Every appended event has input_tokens = 1: a merged or partial line would break
    // api_calls == input_tokens.
    // Each event is written in two pieces, so readers regularly find a torn final line.
    let script = format!(
        "i=0; while [ $i -lt 1500 ]; do \
           printf '{{\"type\": \"llm_response\", \"ts\": %d, \"input_tokens\": 1, ' $i >> '{log}'; \
           printf '\"output_tokens\": 2, \"pad\": \"%0200d\"}}\\n' 0 >> '{log}'; \
           if [ $((i % 20)) -eq 0 ]; then sleep 0.01; fi; \
           i=$((i+1)); done"
    );
    let mut appender = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .spawn()
        .expect("spawn sh");
    let mut last_calls = 0;
    let mut observations = 0;
    loop {
        let finished = appender.try_wait().expect("poll").is_some();
        let out = agentlog(&["status", &dir, "--molt-count", "1", "--json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let calls = v["api_calls"].as_u64().unwrap();
        assert_eq!(v["input_tokens"].as_u64(), Some(calls), "{v}");
        assert_eq!(v["output_tokens"].as_u64(), Some(2 * calls), "{v}");
        assert!(calls >= last_calls, "totals never go backwards");
        last_calls = calls;
        observations += 1;
        // The library in this process races the appender too.
        let index = agent.open_index();
        let since = index.state().since_latest();
        assert_eq!(since.input_tokens, u128::from(since.api_calls));
        if finished {
            break;
        }
    }
    assert!(
        observations >= 10,
        "only {observations} observations raced the appender"
    );
    assert_eq!(last_calls, 1500);
    common::assert_tiers_match_oracle(&agent.paths, Some(1), 8 << 20);
}
