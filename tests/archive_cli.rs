//! `agentlog archive`: discovery in the agents' places, the JSON of a run, `--list`,
//! `--verify`, `--restore` (and its refusal to overwrite), and runs killed with SIGKILL.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::format_collect
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

struct Place {
    _root: tempfile::TempDir,
    home: PathBuf,
    data: PathBuf,
    project: PathBuf,
}

fn home() -> Place {
    let root = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(root.path()).unwrap().join("home");
    let project = home.join(".claude/projects/-work-proj");
    std::fs::create_dir_all(&project).unwrap();
    Place {
        data: home.join("data"),
        home,
        project,
        _root: root,
    }
}

impl Place {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentlog"));
        cmd.args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("AGENTLOG_DATA_DIR", &self.data);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    })
}

fn lines(session: &str, range: std::ops::Range<usize>) -> String {
    range
        .map(|i| {
            format!(
                "{{\"type\":\"assistant\",\"sessionId\":\"{session}\",\"uuid\":\"u{i}\",\"parentUuid\":null,\"timestamp\":\"2026-02-01T00:00:{:02}Z\",\"message\":{{\"id\":\"m{i}\",\"model\":\"claude-x\",\"usage\":{{\"input_tokens\":{i},\"output_tokens\":1}}}}}}\n",
                i % 60
            )
        })
        .collect()
}

#[test]
fn archive_list_verify_and_restore_from_the_command_line() {
    let h = home();
    let a = h.project.join("s1.jsonl");
    std::fs::write(&a, lines("s1", 0..10)).unwrap();
    std::fs::write(h.project.join("s2.jsonl"), lines("s2", 0..4)).unwrap();
    let run = json(&h.run(&["archive", "--json"]));
    assert_eq!(run["new_sources"], 2, "{run}");
    assert_eq!(run["lines"], 14);
    assert_eq!(json(&h.run(&["archive", "--json"]))["unchanged"], 2);
    let list = json(&h.run(&["archive", "--list", "--json"]));
    let sources = list["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    assert_eq!(sources[0]["session"], "s1");
    assert_eq!(sources[0]["agent"], "claude-code");
    assert_eq!(sources[0]["original_exists"], true);
    let verify = h.run(&["archive", "--verify", "--json"]);
    assert!(verify.status.success());
    assert_eq!(json(&verify)["ok"], true);
    // Restoring over the original is refused, and the file is untouched.
    let refused = h.run(&["archive", "--restore", "s1", "--json"]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(json(&refused)["error"], "exists");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), lines("s1", 0..10));
    // Deleted, it comes back byte for byte at its path; listed as gone before.
    std::fs::remove_file(&a).unwrap();
    let list = json(&h.run(&["archive", "--list", "--json"]));
    assert_eq!(list["sources"][0]["original_exists"], false);
    let restored = h.run(&["archive", "--restore", "s1"]);
    assert!(restored.status.success(), "{restored:?}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), lines("s1", 0..10));
    let unknown = h.run(&["archive", "--restore", "nope", "--json"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(json(&unknown)["error"], "no_match");
}

#[test]
fn runs_killed_at_random_points_lose_nothing_and_archive_nothing_twice() {
    let h = home();
    let mut expected = Vec::new();
    for i in 0..40 {
        let content = lines(&format!("k{i}"), 0..200);
        let path = h.project.join(format!("k{i}.jsonl"));
        std::fs::write(&path, &content).unwrap();
        expected.push((path, content));
    }
    let mut seed = 0x2545_f491_u64;
    // 30 kills in CI; `AGENTLOG_KILL_TRIALS=300` for the by-hand run in docs/RELIABILITY.md.
    let trials: usize = std::env::var("AGENTLOG_KILL_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(30);
    for trial in 0..trials {
        // Grow a few files, then kill a run somewhere in its work.
        for (path, content) in expected.iter_mut().skip(trial % 7).step_by(5) {
            content.push_str(&lines("more", trial * 10..trial * 10 + 10));
            std::fs::write(path, &content).unwrap();
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = h.command(&["archive", "--quiet"]).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(seed % 40_000));
        let _ = child.kill();
        let _ = child.wait();
        let verify = json(&h.run(&["archive", "--verify", "--json"]));
        assert_eq!(verify["ok"], true, "trial {trial}: {verify}");
    }
    let done = h.run(&["archive", "--json"]);
    assert!(done.status.success());
    let verify = json(&h.run(&["archive", "--verify", "--json"]));
    assert_eq!(verify["ok"], true);
    assert_eq!(verify["torn_index_bytes"], 0);
    assert_eq!(verify["unnamed_frame_bytes"], 0);
    // Every byte archived exactly once: the archive holds the files' bytes, no more.
    let total: usize = expected.iter().map(|(_, c)| c.len()).sum();
    assert_eq!(verify["bytes"], total as u64);
    let out = h.data.join("out");
    for (path, content) in &expected {
        let session = path.file_stem().unwrap().to_str().unwrap();
        let r = h.run(&[
            "archive",
            "--restore",
            session,
            "--to",
            out.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{r:?}");
        let back = std::fs::read_to_string(out.join(Path::new(path.file_name().unwrap())));
        assert_eq!(&back.unwrap(), content);
    }
}

#[test]
fn usage_warns_about_old_transcripts_not_archived_yet() {
    let h = home();
    let old = h.project.join("old.jsonl");
    std::fs::write(&old, lines("old", 0..3)).unwrap();
    std::fs::write(h.project.join("new.jsonl"), lines("new", 0..3)).unwrap();
    let month_ago = std::time::SystemTime::now() - Duration::from_hours(26 * 24);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(month_ago)
        .unwrap();
    let cache = h.home.join("cache");
    let usage = |h: &Place| {
        let out = h
            .command(&["usage", "--json"])
            .env("AGENTLOG_CACHE_DIR", &cache)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    // Cold, then warm from the snapshot (whose checks' stats the warning reuses).
    for _ in 0..2 {
        let warned = usage(&h);
        assert!(
            warned.contains("1 transcripts older than 25 days are not archived"),
            "{warned}"
        );
    }
    assert!(h.run(&["archive", "--quiet"]).status.success());
    assert_eq!(usage(&h), "");
    // Grown since it was archived: warned about again, though still old.
    let mut grown = std::fs::File::options().append(true).open(&old).unwrap();
    std::io::Write::write_all(&mut grown, lines("old", 3..4).as_bytes()).unwrap();
    grown.set_modified(month_ago).unwrap();
    drop(grown);
    let warned = usage(&h);
    assert!(
        warned.contains("1 transcripts older than 25 days are not archived"),
        "{warned}"
    );
}
