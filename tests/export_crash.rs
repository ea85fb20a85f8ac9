//! Kill trials: a real `agentlog export` process is killed part way, at random, while the log
//! changes between exports (appends, truncations, same-length rewrites), and with `--compact`.
//!
//! Right after each kill, what an engine would read (final-named parts only) holds every row at
//! most once, and all of it comes from one version of the log, never two. After the next
//! export, it holds exactly the log's events (the naive oracle).
//!
//! Two ways of killing: at a file-system step drawn at random among the steps the export takes
//! (`--abort-at-step`: the process aborts right after that step, as a SIGKILL there would), and
//! a real SIGKILL after a random delay; for an agent log and for a Claude Code transcript (whose
//! generations come from its own index). Rounds: `AGENTLOG_EXPORT_CRASH_ROUNDS` each (default 8);
//! `AGENTLOG_EXPORT_CRASH_SEED` replays a run.
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
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{Agent, synthetic};
use export_support::{
    assert_events_match, assert_generations_match, assert_no_leftovers, read_table,
};

struct Rng(agentlog::synth::Rng);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.range(0, n.max(1) - 1)
    }
}

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

fn rng() -> Rng {
    let seed = env("AGENTLOG_EXPORT_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("AGENTLOG_EXPORT_CRASH_SEED={seed}");
    Rng(agentlog::synth::Rng(seed))
}

fn export_command(agent: &Agent, out: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentlog"));
    command
        .args([
            "export",
            agent.path().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--host", "crash", "--json"])
        .args(extra)
        .env("AGENTLOG_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// Runs an export to completion; returns its file-system step count.
fn export_ok(agent: &Agent, out: &Path, extra: &[&str]) -> u64 {
    let output = export_command(agent, out, extra).output().unwrap();
    assert!(output.status.success(), "export failed");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["steps"].as_u64().unwrap() + report["compact"]["steps"].as_u64().unwrap_or(0)
}

fn source_id(agent: &Agent) -> String {
    let dir = std::fs::canonicalize(agent.path()).unwrap();
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

/// What an engine reads now: each row at most once, all from one version of the log.
fn assert_at_most_once_and_one_version(out: &Path, versions: &[&[u8]], what: &str) {
    let rows = read_table(out, "events");
    let mut offsets: Vec<i64> = rows.iter().map(|r| r.int("offset").unwrap()).collect();
    offsets.sort_unstable();
    let total = offsets.len();
    offsets.dedup();
    assert_eq!(offsets.len(), total, "{what}: a row is visible twice");
    let line_at = |log: &[u8], offset: usize| -> Option<Vec<u8>> {
        let rest = log.get(offset..)?;
        let end = rest.iter().position(|&b| b == b'\n')?;
        Some(rest[..end].to_vec())
    };
    let from_version = |log: &[u8]| {
        rows.iter().all(|r| {
            let offset = r.int("offset").unwrap() as usize;
            line_at(log, offset).as_deref() == r.text("json").as_deref().map(str::as_bytes)
        })
    };
    assert!(
        versions.iter().any(|v| from_version(v)),
        "{what}: the visible rows mix versions of the log"
    );
}

fn assert_exact(out: &Path, agent: &Agent) {
    let log = agent.log();
    assert_events_match(out, &source_id(agent), &log);
    assert_generations_match(out, &source_id(agent), &log);
    assert_no_leftovers(out);
}

/// Changes the log as a round asks: appends, a truncation, or a same-length rewrite.
fn change(agent: &Agent, rng: &mut Rng, round: u64) {
    let log = agent.log();
    match rng.below(4) {
        0 => {
            let cut = log[..log.len() * 2 / 3]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            agent.write_log(&log[..cut]);
        }
        1 => {
            let mut rewritten = log.clone();
            if let Some(at) = rewritten.iter().position(|&b| b.is_ascii_digit()) {
                rewritten[at] = if rewritten[at] == b'9' {
                    b'1'
                } else {
                    rewritten[at] + 1
                };
            }
            agent.write_log(&rewritten);
        }
        _ => agent.append_raw(&synthetic(20 + rng.below(300), round)),
    }
}

#[test]
fn exports_killed_at_random_steps_never_show_a_row_twice_and_recover_exactly() {
    let mut rng = rng();
    let rounds = env("AGENTLOG_EXPORT_CRASH_ROUNDS").unwrap_or(8);
    let agent = Agent::with_log(&synthetic(300, 1));
    let out = tempfile::tempdir().unwrap();
    export_ok(&agent, out.path(), &[]);
    let mut aborted = 0;
    for round in 0..rounds {
        let before = agent.log();
        change(&agent, &mut rng, round);
        let after = agent.log();
        let compact: &[&str] = if rng.below(3) == 0 {
            &["--compact"]
        } else {
            &[]
        };
        // The same export on a copy of the dataset tells how many steps it takes.
        let probe = tempfile::tempdir().unwrap();
        copy_dir(out.path(), probe.path());
        let steps = export_ok(&agent, probe.path(), compact);
        let step = 1 + rng.below(steps);
        let mut args = compact.to_vec();
        let step_arg = step.to_string();
        args.extend(["--abort-at-step", &step_arg]);
        let status = export_command(&agent, out.path(), &args).status().unwrap();
        aborted += u64::from(!status.success());
        let what = format!("round {round}, aborted at step {step} of {steps}");
        assert_at_most_once_and_one_version(out.path(), &[&before, &after], &what);
        export_ok(&agent, out.path(), &[]);
        assert_exact(out.path(), &agent);
    }
    eprintln!("{aborted} of {rounds} exports aborted at a random step, each recovered exactly");
    assert_eq!(aborted, rounds, "every drawn step is within the export");
}

#[test]
fn exports_killed_by_sigkill_at_random_times_recover_exactly() {
    let mut rng = rng();
    let rounds = env("AGENTLOG_EXPORT_CRASH_ROUNDS").unwrap_or(8);
    // Large enough that an export takes a while, so kills land inside it.
    let agent = Agent::with_log(&synthetic(2500, 2));
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let probe = tempfile::tempdir().unwrap();
    export_ok(&agent, probe.path(), &[]);
    let full = started.elapsed();
    let mut killed = 0;
    for round in 0..rounds {
        let before = agent.log();
        // Mostly same-length rewrites: each export is then a whole one, as long as the one
        // timed, so the kill lands inside it.
        if round > 0 && rng.below(4) > 0 {
            rewrite_a_digit(&agent, &mut rng);
        } else if round > 0 {
            change(&agent, &mut rng, round);
        }
        let after = agent.log();
        let mut child = export_command(&agent, out.path(), &[]).spawn().unwrap();
        let delay = full.mul_f64(rng.below(1000) as f64 / 1000.0);
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
        let what = format!("round {round}, SIGKILL after {delay:?}");
        assert_at_most_once_and_one_version(out.path(), &[&before, &after], &what);
        export_ok(&agent, out.path(), &[]);
        assert_exact(out.path(), &agent);
    }
    eprintln!(
        "{killed} of {rounds} exports killed by SIGKILL while running, each recovered exactly"
    );
}

/// Rewrites one digit inside the head or the tail window (64 KiB each), where the O(1) check
/// looks: a same-length rewrite between them is only caught by a deep check (docs/EXPORT.md).
fn rewrite_a_digit(agent: &Agent, rng: &mut Rng) {
    let mut log = agent.log();
    let window = (64 << 10).min(log.len() as u64);
    let at = if rng.below(2) == 0 {
        rng.below(window)
    } else {
        log.len() as u64 - 1 - rng.below(window)
    } as usize;
    let Some(digit) = (at..log.len())
        .chain(0..at)
        .find(|&i| log[i].is_ascii_digit())
    else {
        return;
    };
    log[digit] = if log[digit] == b'9' {
        b'1'
    } else {
        log[digit] + 1
    };
    agent.write_log(&log);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `agentlog export` of one transcript, its index in `index`.
fn transcript_command(path: &Path, index: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentlog"));
    command
        .args([
            "export",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--index-dir", index.to_str().unwrap()])
        .args(["--host", "crash", "--json"])
        .args(extra)
        .env("AGENTLOG_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

fn transcript_ok(path: &Path, index: &Path, out: &Path) -> u64 {
    let output = transcript_command(path, index, out, &[]).output().unwrap();
    assert!(output.status.success(), "export failed");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["steps"].as_u64().unwrap()
}

/// The transcript's complete lines are its rows, once each, and its generations the oracle's.
fn assert_transcript_exact(out: &Path, log: &[u8], what: &str) {
    use agentlog::transcript::Format;
    let end = log.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let lines = memchr::memchr_iter(b'\n', &log[..end]).count();
    assert_at_most_once_and_one_version(out, &[log], what);
    assert_eq!(
        read_table(out, "events").len(),
        lines,
        "{what}: rows = complete lines"
    );
    let expected = oracle::expected(Format::ClaudeCode, &log[..end]);
    let mut generations = read_table(out, "generations");
    generations.sort_by_key(|r| r.int("generation"));
    let outputs: Vec<Option<i64>> = generations.iter().map(|r| r.int("output_tokens")).collect();
    let want: Vec<Option<i64>> = expected
        .generations
        .iter()
        .map(|t| Some(t.output as i64))
        .collect();
    assert_eq!(outputs, want, "{what}: output tokens per generation");
    assert_no_leftovers(out);
}

#[test]
fn transcript_exports_killed_at_random_steps_or_times_recover_exactly() {
    use agentlog::transcript::Format;
    let mut rng = rng();
    let rounds = env("AGENTLOG_EXPORT_CRASH_ROUNDS").unwrap_or(8);
    let full = generate::transcript(Format::ClaudeCode, 7, 1200);
    let dir = tempfile::tempdir().unwrap();
    let index = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let path = dir.path().join("proj").join("session.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut len = full.len() / 4;
    std::fs::write(&path, &full[..len]).unwrap();
    transcript_ok(&path, index.path(), out.path());
    let (mut aborted, mut killed) = (0, 0);
    for round in 0..rounds {
        let before = std::fs::read(&path).unwrap();
        // Grow (often to a torn line), or cut back, or rewrite the start.
        let after = match rng.below(4) {
            0 => {
                len = (len / 2).max(1);
                full[..len].to_vec()
            }
            1 => {
                let mut other = generate::transcript(Format::ClaudeCode, 100 + round, 300);
                other.truncate(len.min(other.len()));
                other
            }
            _ => {
                len = (len + 1 + rng.below(full.len() as u64 / 4) as usize).min(full.len());
                full[..len].to_vec()
            }
        };
        std::fs::write(&path, &after).unwrap();
        let what = format!("round {round}");
        if round % 2 == 0 {
            let probe = tempfile::tempdir().unwrap();
            copy_dir(out.path(), probe.path());
            let steps = transcript_ok(&path, index.path(), probe.path());
            let step = (1 + rng.below(steps)).to_string();
            let command = &mut transcript_command(
                &path,
                index.path(),
                out.path(),
                &["--abort-at-step", &step],
            );
            aborted += u64::from(!command.status().unwrap().success());
        } else {
            let started = Instant::now();
            let probe = tempfile::tempdir().unwrap();
            copy_dir(out.path(), probe.path());
            transcript_ok(&path, index.path(), probe.path());
            let took = started.elapsed();
            let mut child = transcript_command(&path, index.path(), out.path(), &[])
                .spawn()
                .unwrap();
            std::thread::sleep(took.mul_f64(rng.below(1000) as f64 / 1000.0));
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                killed += 1;
            }
            child.wait().unwrap();
        }
        assert_at_most_once_and_one_version(out.path(), &[&before, &after], &what);
        transcript_ok(&path, index.path(), out.path());
        assert_transcript_exact(out.path(), &after, &what);
    }
    eprintln!(
        "transcript: {aborted} aborted at a step, {killed} killed by SIGKILL, each recovered"
    );
}
