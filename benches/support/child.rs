//! Child-process modes of the benchmark binary itself (`AGENTLOG_BENCH_CHILD=<mode>`), so the
//! parent can kill a writer with SIGKILL or read the peak memory of one approach's job (ours
//! and the peers') in isolation.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentlog::generation::{GenerationRequest, Tier, current_generation_at};
use agentlog::index::{CommitPolicy, Index, IndexOptions, Writer, WriterOptions};
use agentlog::log::{LogPaths, SyncPolicy};
use serde_json::{Value, json};

use super::data::{extra_lines, self_memory_kib};
use super::{reference, sidecar};

const MODE: &str = "AGENTLOG_BENCH_CHILD";

/// Runs the child mode if this process is a child; returns false otherwise.
pub fn run_if_child() -> bool {
    let Some(mode) = std::env::var_os(MODE) else {
        return false;
    };
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    match mode.to_str() {
        Some("hold-writer") => hold_writer(&args[0]),
        Some("build") => build(&args[0], &args[1]),
        // For profilers: `append DIR N BATCH` (flush-only), `open DIR N` (N fresh opens).
        Some("append") => append(&args[0], arg_num(&args[1]), arg_num(&args[2])),
        Some("open") => {
            let paths = LogPaths::for_agent_dir(&args[0]);
            for _ in 0..arg_num(&args[1]) {
                Index::open(&paths, &IndexOptions::default()).expect("child: open");
            }
        }
        Some("peak") => peak(&args),
        Some("baseline") => {
            let (hwm, rss) = self_memory_kib();
            println!("{}", json!({"vmhwm_kib": hwm, "vmrss_kib": rss}));
        }
        other => panic!("unknown child mode {other:?}"),
    }
    true
}

fn arg_num(p: &Path) -> usize {
    p.to_str().and_then(|s| s.parse().ok()).expect("a number")
}

/// Appends `n` events in batches of `batch` to a fresh log in `dir` (flush only).
fn append(dir: &Path, n: usize, batch: usize) {
    let _ = std::fs::remove_dir_all(dir);
    let paths = LogPaths::for_agent_dir(dir);
    let options = WriterOptions {
        sync: SyncPolicy::None,
        ..WriterOptions::default()
    };
    let mut writer = Writer::open(&paths, options).expect("child: open writer");
    let lines = extra_lines(10_000);
    let started = Instant::now();
    let mut done = 0;
    while done < n {
        let at = done % (lines.len() - batch);
        if batch == 1 {
            writer.append_json(&lines[at]).expect("child: append");
        } else {
            writer
                .append_batch_json(&lines[at..at + batch])
                .expect("child: append");
        }
        done += batch;
    }
    writer.close().expect("child: close");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"events": done, "secs": secs, "events_per_sec": rate(done, secs)})
    );
}

/// Opens a `Writer`, appends 100 events and commits the index, appends 10 more (left
/// uncommitted), says `ready`, and waits to be killed.
fn hold_writer(agent_dir: &Path) {
    let paths = LogPaths::for_agent_dir(agent_dir);
    let options = WriterOptions {
        sync: SyncPolicy::None,
        commit: CommitPolicy {
            rows: usize::MAX,
            bytes: u64::MAX,
            interval: Duration::from_hours(1),
        },
        ..WriterOptions::default()
    };
    let mut writer = Writer::open(&paths, options).expect("child: open writer");
    let lines = extra_lines(110);
    for line in &lines[..100] {
        writer.append_json(line).expect("child: append");
    }
    writer.commit_index().expect("child: commit");
    for line in &lines[100..110] {
        writer.append_json(line).expect("child: append");
    }
    println!("ready");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_mins(1));
    }
}

/// Builds the index of `log` from scratch at `index`, then prints the peak RSS.
fn build(log: &Path, index: &Path) {
    let _ = std::fs::remove_file(index);
    let (base_hwm, _) = self_memory_kib();
    let paths = LogPaths {
        log: log.to_path_buf(),
        index: index.to_path_buf(),
    };
    let started = Instant::now();
    let opened = Index::open(&paths, &IndexOptions::default()).expect("child: build");
    let secs = started.elapsed().as_secs_f64();
    let (hwm, rss) = self_memory_kib();
    println!(
        "{}",
        json!({"vmhwm_kib": hwm, "vmrss_kib": rss, "startup_vmhwm_kib": base_hwm, "secs": secs,
               "outcome": opened.outcome().code(), "events": opened.state().events})
    );
}

/// The jobs whose peak memory `peak` measures, each once in a fresh process.
pub const PEAK_JOBS: [&str; 7] = [
    "ours_answer",
    "ours_reverse_scan",
    "ours_full_scan",
    "ref_reverse_scan",
    "ref_full_scan",
    "sidecar_pair",
    "sidecar_rebuild",
];

/// `peak JOB PATH [ARG]`: runs one job of [`PEAK_JOBS`] once and prints its peak RSS (`VmHWM`,
/// which includes the process's start-up, reported apart), its time and its answer.
/// - `ours_answer`, `ours_reverse_scan`, `ours_full_scan`: `current_generation_at` on the agent
///   directory PATH, starting at that tier; ARG is the expected molt count.
/// - `ref_reverse_scan`, `ref_full_scan`: the reference's plain scans of the log PATH.
/// - `sidecar_pair`: the kernel's query pair on the sidecar PATH (new connections); ARG is
///   the molt count.
/// - `sidecar_rebuild`: the offline rebuild of the log PATH into the sidecar ARG.
fn peak(args: &[PathBuf]) {
    let job = args[0].to_str().expect("a job name");
    let path = &args[1];
    let (startup_hwm, _) = self_memory_kib();
    let started = Instant::now();
    let answer = match job {
        "ours_answer" | "ours_reverse_scan" | "ours_full_scan" => {
            let mut req = GenerationRequest::expecting(arg_num(&args[2]) as u64);
            req.start_tier = match job {
                "ours_answer" => Tier::Index,
                "ours_reverse_scan" => Tier::ReverseScan,
                _ => Tier::FullScan,
            };
            let paths = LogPaths::for_agent_dir(path);
            let a = current_generation_at(&paths, &req).expect("child: current_generation_at");
            json!({"tier": a.tier.as_str(), "api_calls": a.totals.api_calls})
        }
        "ref_reverse_scan" => {
            let s = reference::reverse_scan(path, reference::MAX_SCAN_BYTES);
            json!({"api_calls": s.map(|s| s.api_calls)})
        }
        "ref_full_scan" => json!({"api_calls": reference::full_scan(path).api_calls}),
        "sidecar_pair" => {
            let a = sidecar::pair_fresh_connections(path, arg_num(&args[2]) as u64);
            json!({"api_calls": a.map(|a| a.api_calls)})
        }
        "sidecar_rebuild" => {
            let stats = sidecar::offline_rebuild(path, &args[2]).expect("child: rebuild");
            json!({"rows": stats.rows, "import_secs": stats.import.as_secs_f64(),
                   "integrity_checkpoint_replace_secs": stats.finish.as_secs_f64()})
        }
        other => panic!("unknown peak job {other:?}"),
    };
    let secs = started.elapsed().as_secs_f64();
    let (hwm, rss) = self_memory_kib();
    println!(
        "{}",
        json!({"vmhwm_kib": hwm, "vmrss_kib": rss, "startup_vmhwm_kib": startup_hwm,
               "secs": secs, "answer": answer})
    );
}

fn spawn(mode: &str, args: &[&Path]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(MODE, mode)
        .args(args)
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn child")
}

/// Runs a child to completion and parses its one JSON line.
pub fn run_json(mode: &str, args: &[&Path]) -> Value {
    let out = spawn(mode, args).wait_with_output().expect("child output");
    assert!(
        out.status.success(),
        "child {mode} failed: {:?}",
        out.status
    );
    serde_json::from_slice(&out.stdout).expect("child json")
}

/// Starts a child holding a writer on `agent_dir`, waits for `ready`, kills it with SIGKILL.
pub fn kill_a_writer(agent_dir: &Path) {
    let mut child = spawn("hold-writer", &[agent_dir]);
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "hold-writer child did not get ready");
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
}

/// Events a second.
#[allow(clippy::cast_precision_loss, reason = "an event count far below 2^53")]
fn rate(events: usize, secs: f64) -> f64 {
    events as f64 / secs
}
