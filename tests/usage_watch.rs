//! `agentlog usage --watch` as a process: stdout piped (not a terminal), it prints one plain
//! text block (or with `--json` one object per line) per refresh; a complete line appended to a
//! transcript shows in a later refresh with exactly its tokens, a torn line never does; SIGINT
//! ends it with exit 0; no escape sequence is printed off a terminal; and it reads the archive as
//! plain `usage` does (`--no-archive`: the originals alone).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any one wait may take before the test fails: generous, not a speed assertion.
const PATIENCE: Duration = Duration::from_mins(2);

/// A Claude Code assistant line of `input` tokens, `minutes_ago` before now.
fn message(id: &str, input: u64, minutes_ago: i64) -> String {
    let at = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(minutes_ago);
    json!({"type":"assistant","uuid":format!("u-{id}"),"timestamp":at.to_string(),"requestId":format!("r-{id}"),
        "sessionId":"s1","message":{"id":format!("msg_{id}"),"model":"claude-sonnet-4-5","role":"assistant",
        "usage":{"input_tokens":input,"output_tokens":0}}})
    .to_string()
}

struct Place {
    _root: tempfile::TempDir,
    home: PathBuf,
    transcript: PathBuf,
}

impl Place {
    fn new() -> Place {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().to_path_buf();
        let transcript = home.join("t/p/s.jsonl");
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        std::fs::write(&transcript, message("a", 100, 1) + "\n").unwrap();
        Place {
            _root: root,
            home,
            transcript,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agentlog"));
        c.args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("TZ", "UTC")
            .env("AGENTLOG_DATA_DIR", self.home.join("data"))
            .env("AGENTLOG_CACHE_DIR", self.home.join("cache"));
        c
    }

    fn append(&self, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.transcript)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn dir(&self) -> String {
        self.home.join("t").to_str().unwrap().to_owned()
    }
}

/// A running watch: its stdout's lines arrive on a channel; every byte is kept.
struct Watch {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Watch {
    fn spawn(mut command: Command) -> Watch {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Watch {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line, within the patience.
    fn next(&mut self) -> String {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("a refresh within the patience");
        self.seen.push(line.clone());
        line
    }

    /// Reads lines until one satisfies `want`; returns it.
    fn until(&mut self, want: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            assert!(
                start.elapsed() < PATIENCE,
                "no such refresh: {:?}",
                self.seen
            );
            let line = self.next();
            if want(&line) {
                return line;
            }
        }
    }

    /// SIGINT, then the exit status within the patience; every line printed.
    fn interrupt(mut self) -> (Option<i32>, Vec<String>) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(sent.success());
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("the watch did not stop on SIGINT");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The rest of its output, up to end of file.
        while let Ok(line) = self.lines.recv_timeout(PATIENCE) {
            self.seen.push(line);
        }
        (status.code(), self.seen)
    }
}

fn today_tokens(line: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(line).unwrap();
    v["today"]["total_tokens"].as_u64()
}

#[test]
fn json_refreshes_show_an_appended_message_not_a_torn_line_and_sigint_exits_0() {
    let place = Place::new();
    let dir = place.dir();
    let mut watch =
        Watch::spawn(place.command(&["usage", &dir, "--watch", "--interval", "0.2", "--json"]));
    // Every line is one whole JSON object.
    let first = watch.next();
    assert_eq!(today_tokens(&first), Some(100), "{first}");
    place.append(&(message("b", 250, 0) + "\n"));
    watch.until(|l| today_tokens(l) == Some(350));
    // A torn line (no newline yet) is never counted, however many refreshes pass.
    place.append(&message("c", 999, 0));
    for _ in 0..5 {
        let line = watch.next();
        assert_eq!(today_tokens(&line), Some(350), "{line}");
    }
    let (code, lines) = watch.interrupt();
    assert_eq!(code, Some(0));
    for line in &lines {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v.get("block").is_some() && v.get("session").is_some());
        assert!(!line.contains('\u{1b}'));
    }
}

#[test]
fn text_refreshes_are_plain_blocks_off_a_terminal_and_sigint_exits_0() {
    let place = Place::new();
    let dir = place.dir();
    let mut watch = Watch::spawn(place.command(&["usage", &dir, "--watch", "--interval", "0.2"]));
    let today = |tokens: &'static str| {
        move |l: &str| l.starts_with("today") && l.contains(&format!(" {tokens} tokens"))
    };
    watch.until(today("100"));
    place.append(&(message("b", 250, 0) + "\n"));
    watch.until(today("350"));
    place.append(&message("c", 999, 0));
    let (code, lines) = watch.interrupt();
    assert_eq!(code, Some(0));
    assert!(lines.iter().all(|l| !l.contains('\u{1b}')), "{lines:?}");
    // Refreshes are blocks, each headed by the title; none counted the torn line.
    assert!(
        lines
            .iter()
            .filter(|l| l.starts_with("agentlog usage --watch"))
            .count()
            >= 2
    );
    assert!(!lines.iter().any(|l| l.contains("1,349 tokens")));
}

/// One refresh's JSON over `dir`, with `extra` arguments.
fn one_refresh(place: &Place, dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "usage",
        dir.to_str().unwrap(),
        "--watch",
        "--interval",
        "0.2",
        "--json",
    ];
    args.extend_from_slice(extra);
    let mut watch = Watch::spawn(place.command(&args));
    let line = watch.next();
    let (code, _) = watch.interrupt();
    assert_eq!(code, Some(0));
    serde_json::from_str(&line).unwrap()
}

#[test]
fn the_watch_reads_the_archive_as_usage_does() {
    let place = Place::new();
    // A second session, archived, then deleted by its agent.
    let gone = place.transcript.with_file_name("gone.jsonl");
    std::fs::write(&gone, message("g", 40, 2) + "\n").unwrap();
    let out = place
        .command(&["archive", gone.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_file(&gone).unwrap();
    let dir = place.home.join("t");
    let usage = place
        .command(&["usage", dir.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let usage: Value = serde_json::from_slice(&usage.stdout).unwrap();
    assert_eq!(usage["totals"]["total_tokens"], 140);
    let with = one_refresh(&place, &dir, &[]);
    assert_eq!(with["today"]["total_tokens"], 140);
    let without = one_refresh(&place, &dir, &["--no-archive"]);
    assert_eq!(without["today"]["total_tokens"], 100);
}
