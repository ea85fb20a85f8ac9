//! Benchmark inputs: deterministic lingtai-shaped logs of a few sizes, cached under
//! `target/bench-data/<size>/` (an agent directory: `logs/events.jsonl` and `.agent.json`),
//! plus scratch copies for the benchmarks that change a log, and the JSON report of the figures
//! criterion does not measure (memory, sizes on disk, repair counts).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agentlog::index::{Index, IndexOptions};
use agentlog::log::LogPaths;
use agentlog::synth::{SynthOptions, responses_for_bytes, write_lingtai_log};
use serde_json::{Value, json};

/// Seed of every cached log (change it and the cache regenerates).
pub const SEED: u64 = 42;
/// Seed of the extra lines that benchmarks append.
pub const EXTRA_SEED: u64 = 7;

/// Where cached data lives: `AGENTLOG_BENCH_DATA`, else `<crate>/target/bench-data`.
pub fn data_root() -> PathBuf {
    std::env::var_os("AGENTLOG_BENCH_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data"),
        PathBuf::from,
    )
}

/// A log size: its label (`1mb`) and target bytes (decimal units).
#[derive(Clone, Debug)]
pub struct Size {
    pub label: String,
    pub bytes: u64,
}

/// Parses `1mb,100mb,1gb` (also `kb`).
pub fn parse_sizes(spec: &str) -> Vec<Size> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let lower = s.to_ascii_lowercase();
            let (num, mult) = if let Some(n) = lower.strip_suffix("gb") {
                (n, 1_000_000_000)
            } else if let Some(n) = lower.strip_suffix("mb") {
                (n, 1_000_000)
            } else if let Some(n) = lower.strip_suffix("kb") {
                (n, 1_000)
            } else {
                (lower.as_str(), 1)
            };
            let n: u64 = num.parse().unwrap_or_else(|_| panic!("bad size {s:?}"));
            Size {
                label: lower.clone(),
                bytes: n * mult,
            }
        })
        .collect()
}

/// A cached agent directory and what we know about it.
pub struct Dataset {
    pub size: Size,
    /// The agent directory (`.agent.json`, `logs/`).
    pub dir: PathBuf,
    pub paths: LogPaths,
    /// The final `molt_count` (what `.agent.json` says).
    pub molt_count: u64,
    pub log_len: u64,
    pub lines: u64,
    pub api_calls_since_molt: u64,
    pub input_tokens_since_molt: u64,
}

fn synth_options(bytes: u64) -> SynthOptions {
    SynthOptions {
        seed: SEED,
        responses: responses_for_bytes(bytes),
        ..SynthOptions::default()
    }
}

impl Dataset {
    /// The cached log of `size`, generated if missing (or generated with other options).
    pub fn prepare(size: &Size) -> Dataset {
        let dir = data_root().join(&size.label);
        let paths = LogPaths::for_agent_dir(&dir);
        let options = synth_options(size.bytes);
        let meta_path = dir.join("synth.json");
        let wanted = json!({"seed": options.seed, "responses": options.responses});
        let cached: Option<Value> = fs::read(&meta_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let fresh = cached
            .as_ref()
            .is_some_and(|m| m["options"] == wanted && paths.log.exists());
        let summary = if fresh {
            cached.unwrap()["summary"].clone()
        } else {
            eprintln!(
                "bench-data: generating {} log ({} responses)...",
                size.label, options.responses
            );
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(paths.log.parent().unwrap()).unwrap();
            let tmp = paths.log.with_extension("jsonl.tmp");
            let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp).unwrap());
            let s = write_lingtai_log(&mut out, &options).unwrap();
            out.flush().unwrap();
            drop(out);
            fs::rename(&tmp, &paths.log).unwrap();
            fs::write(
                dir.join(".agent.json"),
                serde_json::to_vec(&json!({"agent_name": "alice", "molt_count": s.molt_count}))
                    .unwrap(),
            )
            .unwrap();
            let summary = json!({
                "lines": s.lines, "bytes": s.bytes, "molt_count": s.molt_count,
                "api_calls_since_molt": s.api_calls_since_molt,
                "input_tokens_since_molt": s.input_tokens_since_molt,
            });
            fs::write(
                &meta_path,
                serde_json::to_vec_pretty(&json!({"options": wanted, "summary": summary})).unwrap(),
            )
            .unwrap();
            summary
        };
        let n = |k: &str| summary[k].as_u64().unwrap();
        Dataset {
            size: size.clone(),
            dir,
            paths,
            molt_count: n("molt_count"),
            log_len: n("bytes"),
            lines: n("lines"),
            api_calls_since_molt: n("api_calls_since_molt"),
            input_tokens_since_molt: n("input_tokens_since_molt"),
        }
    }

    /// Makes sure the pristine index is built and current; returns it open.
    pub fn index(&self) -> Index {
        let index = Index::open(&self.paths, &IndexOptions::default()).expect("open index");
        if index.outcome().code() != "fresh" {
            eprintln!("bench-data: {} index {}", self.size.label, index.outcome());
        }
        index
    }

    /// The pristine SQLite sidecar, built with the offline rebuild if missing.
    pub fn sidecar(&self) -> PathBuf {
        let db = self.dir.join("logs/log.sqlite");
        let done = self.dir.join("logs/log.sqlite.done");
        if !done.exists() || !db.exists() {
            eprintln!(
                "bench-data: building the {} sqlite sidecar...",
                self.size.label
            );
            let stats = super::sidecar::offline_rebuild(&self.paths.log, &db).expect("sidecar");
            fs::write(&done, format!("{}\n", stats.rows)).unwrap();
        }
        db
    }

    /// A private copy of this agent directory (log, index, manifest) for benchmarks that
    /// change it, recreated on each call.
    pub fn scratch(&self, name: &str) -> LogPaths {
        self.index();
        let dir = self.dir.join("scratch").join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("logs")).unwrap();
        let paths = LogPaths::for_agent_dir(&dir);
        fs::copy(&self.paths.log, &paths.log).unwrap();
        fs::copy(&self.paths.index, &paths.index).unwrap();
        fs::copy(self.dir.join(".agent.json"), dir.join(".agent.json")).unwrap();
        paths
    }

    /// Removes all scratch copies.
    pub fn drop_scratch(&self) {
        let _ = fs::remove_dir_all(self.dir.join("scratch"));
    }
}

/// Lines (without `\n`) of another synthetic log, to append.
pub fn extra_lines(min_lines: usize) -> Vec<Vec<u8>> {
    let mut responses = (min_lines as u64 / 3).max(100);
    loop {
        let mut buf = Vec::new();
        write_lingtai_log(
            &mut buf,
            &SynthOptions {
                seed: EXTRA_SEED,
                responses,
                ..SynthOptions::default()
            },
        )
        .unwrap();
        let lines: Vec<Vec<u8>> = buf
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        if lines.len() >= min_lines {
            return lines;
        }
        responses *= 2;
    }
}

/// `VmHWM` and `VmRSS` of this process, in KiB.
pub fn self_memory_kib() -> (u64, u64) {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

static REPORT: Mutex<Option<serde_json::Map<String, Value>>> = Mutex::new(None);

/// Records a figure criterion does not measure, under `key` (e.g. `memory/1gb/build_peak_rss_kib`).
pub fn report(key: &str, value: Value) {
    eprintln!("report: {key} = {value}");
    let mut guard = REPORT.lock().unwrap();
    guard
        .get_or_insert_with(Default::default)
        .insert(key.to_owned(), value);
}

/// Merges the recorded figures into `<data>/report.json` (earlier runs' other keys are kept).
pub fn save_report() {
    let guard = REPORT.lock().unwrap();
    let Some(new) = guard.as_ref() else { return };
    let path = data_root().join("report.json");
    let mut all: serde_json::Map<String, Value> = fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    for (k, v) in new {
        all.insert(k.clone(), v.clone());
    }
    fs::create_dir_all(data_root()).unwrap();
    fs::write(
        &path,
        serde_json::to_vec_pretty(&Value::Object(all)).unwrap(),
    )
    .unwrap();
    eprintln!("report: saved {}", path.display());
}
