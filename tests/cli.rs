//! The CLI contract scripts depend on: exit codes, JSON on stdout (errors included), fields.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::{Agent, agentlog, json, lines, molt, token};
use serde_json::Value;

fn dir(agent: &Agent) -> &str {
    agent.path().to_str().unwrap()
}

fn sample() -> Agent {
    Agent::with_log(&lines(&[
        token(1.0, 500, 10, 300),
        molt(2.0, 5, "system"),
        token(3.0, 1000, 20, 600),
        token(4.0, 1000, 20, 600),
    ]))
}

#[test]
fn status_json_has_the_documented_fields() {
    let agent = sample();
    let out = agentlog(&["status", dir(&agent), "--molt-count", "5", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["tier"], "index");
    assert_eq!(v["molt_count"], 5);
    assert_eq!(v["verified"], true);
    assert_eq!(v["input_tokens"], 2000);
    assert_eq!(v["output_tokens"], 40);
    assert_eq!(v["cached_tokens"], 1200);
    assert_eq!(v["thinking_tokens"], 20);
    assert_eq!(v["api_calls"], 2);
    assert_eq!(v["boundary_initiator"], "system");
    assert_eq!(v["boundary_offset"], token(1.0, 500, 10, 300).len());
    assert_eq!(v["index_outcome"], "created");
    let again = json(&agentlog(&[
        "status",
        dir(&agent),
        "--molt-count",
        "5",
        "--json",
    ]));
    assert_eq!(again["index_outcome"], "fresh");
}

#[test]
fn status_reads_the_manifest_and_reports_mismatch_with_exit_3() {
    let agent = sample();
    agent.write_manifest(6);
    let out = agentlog(&["status", dir(&agent), "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["error"], "molt_mismatch");
    assert_eq!(v["expected"], 6);
    assert_eq!(v["found"], 5);
    agent.write_manifest(5);
    let v = json(&agentlog(&["status", dir(&agent), "--json"]));
    assert_eq!(
        (v["molt_count"].clone(), v["expected_from"].clone()),
        (Value::from(5), Value::from("manifest"))
    );
}

#[test]
fn mismatch_without_a_verifiable_boundary_reports_found_null() {
    let agent = Agent::with_log(&lines(&[token(1.0, 5, 1, 0)]));
    let out = agentlog(&["status", dir(&agent), "--molt-count", "2", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["found"], Value::Null);
}

#[test]
fn without_manifest_or_flag_the_latest_generation_is_unverified() {
    let agent = sample();
    let v = json(&agentlog(&["status", dir(&agent), "--json"]));
    assert_eq!(
        (v["molt_count"].clone(), v["verified"].clone()),
        (Value::from(5), Value::from(false))
    );
    let human = agentlog(&["status", dir(&agent)]);
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(text.contains("unverified"), "{text}");
}

#[test]
fn bad_manifest_is_a_clear_error() {
    let agent = sample();
    for manifest in [
        "{\"molt_count\": \"5\"}",
        "{\"molt_count\": -1}",
        "not json",
        "[1]",
    ] {
        std::fs::write(agent.path().join(".agent.json"), manifest).unwrap();
        let out = agentlog(&["status", dir(&agent), "--json"]);
        assert_eq!(out.status.code(), Some(2), "{manifest}");
        assert_eq!(json(&out)["error"], "bad_manifest", "{manifest}");
    }
}

#[test]
fn missing_log_exits_4_with_no_log() {
    let empty = tempfile::tempdir().unwrap();
    let out = agentlog(&["status", empty.path().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(json(&out)["error"], "no_log");
    assert!(!out.stderr.is_empty(), "a human message goes to stderr");
}

#[test]
fn empty_log_is_generation_zero() {
    let agent = Agent::with_log(b"");
    let v = json(&agentlog(&[
        "status",
        dir(&agent),
        "--molt-count",
        "0",
        "--json",
    ]));
    assert_eq!(
        (
            v["molt_count"].clone(),
            v["api_calls"].clone(),
            v["boundary_offset"].clone()
        ),
        (Value::from(0), Value::from(0), Value::Null)
    );
    assert_eq!(v["boundary_initiator"], "boot");
}

#[test]
fn tier_flag_starts_the_ladder_and_steps_down() {
    let agent = sample();
    let v = json(&agentlog(&[
        "status",
        dir(&agent),
        "--tier",
        "reverse_scan",
        "--json",
    ]));
    assert_eq!(v["tier"], "reverse_scan");
    assert_eq!(v["index_outcome"], Value::Null);
    let v = json(&agentlog(&[
        "status",
        dir(&agent),
        "--tier",
        "reverse_scan",
        "--reverse-scan-bytes",
        "60",
        "--json",
    ]));
    assert_eq!(v["tier"], "full_scan");
    assert_eq!(v["stepped_aside"][0]["tier"], "reverse_scan");
    assert_eq!(v["api_calls"], 2);
}

#[test]
fn generations_json_is_an_array_oldest_first() {
    let agent = sample();
    let out = agentlog(&["generations", dir(&agent), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["molt_count"], 0);
    assert_eq!(rows[0]["boundary_offset"], Value::Null);
    assert_eq!(rows[0]["boundary_initiator"], "boot");
    assert_eq!(rows[0]["api_calls"], 1);
    assert_eq!(rows[1]["molt_count"], 5);
    assert_eq!(rows[1]["boundary_initiator"], "system");
    for key in [
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "thinking_tokens",
        "api_calls",
        "boundary_offset",
    ] {
        assert!(rows[1].get(key).is_some(), "{key}");
    }
}

#[test]
fn index_json_reports_outcome_bytes_and_events() {
    let agent = sample();
    let v = json(&agentlog(&["index", dir(&agent), "--json"]));
    assert_eq!(v["outcome"], "created");
    assert_eq!(v["bytes_indexed"], agent.log().len());
    assert_eq!(v["events_indexed"], 4);
    agent.append_raw(token(5.0, 1, 1, 0).as_bytes());
    let v = json(&agentlog(&["index", dir(&agent), "--json"]));
    assert_eq!(
        (v["outcome"].clone(), v["events_indexed"].clone()),
        (Value::from("caught_up"), Value::from(1))
    );
}

#[test]
fn verify_deep_catches_a_rewrite_the_quick_check_cannot_see() {
    let agent = Agent::with_log(&common::synthetic(600, 3));
    assert_eq!(agentlog(&["index", dir(&agent)]).status.code(), Some(0));
    let v = json(&agentlog(&["verify", dir(&agent), "--deep", "--json"]));
    assert_eq!(v["valid"], true, "{v}");
    // Rewrite a byte in the middle, outside both 64 KiB windows.
    let mut log = agent.log();
    let middle = log.len() / 2;
    let at = middle
        + log[middle..]
            .windows(16)
            .position(|w| w == b"\"input_tokens\": ")
            .unwrap()
        + 16;
    log[at] = if log[at] == b'1' { b'2' } else { b'1' };
    agent.write_log(&log);
    let quick = json(&agentlog(&["verify", dir(&agent), "--json"]));
    assert_eq!(quick["valid"], true, "the O(1) check cannot see the middle");
    let out = agentlog(&["verify", dir(&agent), "--deep", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let deep = json(&out);
    assert_eq!(deep["valid"], false, "{deep}");
}

fn append(agent: &Agent, sync: &str, input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["append", dir(agent), "--sync", sync])
        .env("AGENTLOG_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn append_prints_each_offset_under_every_policy() {
    for sync in ["fsync", "interval", "none"] {
        let agent = Agent::new();
        let input = [
            token(1.0, 5, 1, 0),
            molt(2.0, 1, "agent"),
            token(3.0, 7, 1, 0),
        ]
        .concat();
        let out = append(&agent, sync, &input);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{sync}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let offsets: Vec<u64> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        let a = token(1.0, 5, 1, 0).len() as u64;
        let b = a + molt(2.0, 1, "agent").len() as u64;
        assert_eq!(offsets, vec![0, a, b], "{sync}");
        assert_eq!(agent.log(), input.as_bytes());
    }
}

#[test]
fn append_stops_at_a_bad_line_with_exit_2_after_the_good_ones() {
    let agent = Agent::new();
    let input = format!(
        "{}{}not an object\n{}",
        token(1.0, 5, 1, 0),
        token(2.0, 6, 1, 0),
        token(3.0, 7, 1, 0)
    );
    let out = append(&agent, "fsync", &input);
    assert_eq!(out.status.code(), Some(2));
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed.lines().count(), 2, "{printed}");
    assert_eq!(
        agent.log(),
        [token(1.0, 5, 1, 0), token(2.0, 6, 1, 0)]
            .concat()
            .as_bytes()
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("line 3"), "{stderr}");
}

#[test]
fn demo_runs_on_a_given_directory() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("agent");
    let out = agentlog(&["demo", target.to_str().unwrap(), "--responses", "800"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("full_scan") && !text.contains(" NO"),
        "{text}"
    );
    let v = json(&agentlog(&["status", target.to_str().unwrap(), "--json"]));
    assert_eq!(v["verified"], true);
}

#[test]
fn demo_shows_transcript_commands_and_writes_only_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("demo");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    // Every per-user place points into `home`: the demo must leave it empty.
    let out = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["demo", target.to_str().unwrap(), "--responses", "300"])
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("AGENTLOG_CACHE_DIR", home.join("agentlog-cache"))
        .env("AGENTLOG_DATA_DIR", home.join("agentlog-data"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = target.display();
    for command in [
        format!("$ agentlog usage {t}/transcripts --timezone UTC --index-dir {t}/index"),
        format!("$ agentlog statusline --index-dir {t}/index < {t}/statusline-input.json"),
        format!(
            "$ agentlog search --transcripts --index-dir {t}/search-index --limit 100 kestrel {t}/transcripts"
        ),
        format!("$ agentlog transcript --index-dir {t}/index {t}/transcripts/claude/"),
    ] {
        assert!(text.contains(&command), "{command} not in:\n{text}");
    }
    assert!(
        text.contains("cost_usd") && text.contains("compact_boundary"),
        "{text}"
    );
    assert!(text.contains("every figure above agrees"), "{text}");
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0);
    // The commands it shows give the answers it showed.
    let usage = json(&agentlog(&[
        "usage",
        &format!("{t}/transcripts"),
        "--timezone",
        "UTC",
        "--index-dir",
        &format!("{t}/index"),
        "--json",
    ]));
    let total = usage["totals"]["total_tokens"].as_u64().unwrap();
    let shown = text
        .lines()
        .find(|l| l.starts_with("total "))
        .and_then(|l| l.split_whitespace().nth(6))
        .unwrap()
        .replace(',', "");
    assert_eq!(shown.parse::<u64>().unwrap(), total);
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    // `agentlog ... | head`: the pipe's reader closes before the command writes.
    let agent = sample();
    for args in [
        vec!["status", dir(&agent), "--json"],
        vec!["generations", dir(&agent)],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}
