//! The run's surroundings: its settings from the environment, the machine and load recorded
//! with the figures, and the release CLI the whole-process benchmark spawns.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, SamplingMode};
use serde_json::json;

use super::data::{self, Size, report};

/// The run's settings (see the bench's module docs).
pub struct Config {
    pub smoke: bool,
    pub sizes: Vec<Size>,
    pub oneshot_above: u64,
    pub append: bool,
}

impl Config {
    pub fn from_env() -> Config {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        // `cargo test --benches` runs this binary without `--bench` (criterion's test mode:
        // each benchmark once); keep that cheap too.
        let test_mode = !std::env::args().any(|a| a == "--bench");
        let smoke = test_mode || var("AGENTLOG_BENCH_SMOKE").is_some_and(|v| v != "0");
        let sizes = var("AGENTLOG_BENCH_SIZES")
            .unwrap_or_else(|| if smoke { "1mb" } else { "1mb,10mb" }.to_owned());
        Config {
            smoke,
            sizes: data::parse_sizes(&sizes),
            oneshot_above: var("AGENTLOG_BENCH_ONESHOT_ABOVE").map_or(200_000_000, |v| {
                v.parse().expect("AGENTLOG_BENCH_ONESHOT_ABOVE")
            }),
            append: var("AGENTLOG_BENCH_APPEND").is_none_or(|v| v != "0"),
        }
    }

    /// Sub-microsecond to millisecond benchmarks.
    pub fn fast(&self, g: &mut BenchmarkGroup<'_, WallTime>) {
        g.sampling_mode(SamplingMode::Auto);
        if self.smoke {
            g.sample_size(10)
                .warm_up_time(Duration::from_millis(50))
                .measurement_time(Duration::from_millis(200));
        } else {
            g.sample_size(30)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
        }
    }

    /// Long benchmarks (whole-log work), and benchmarks with untimed per-iteration setup.
    pub fn heavy(&self, g: &mut BenchmarkGroup<'_, WallTime>) {
        g.sampling_mode(SamplingMode::Flat).sample_size(10);
        if self.smoke {
            g.warm_up_time(Duration::from_millis(20))
                .measurement_time(Duration::from_millis(100));
        } else {
            g.warm_up_time(Duration::from_millis(200))
                .measurement_time(Duration::from_secs(1));
        }
    }
}

/// The 1-minute load average: other work on the machine during a run makes figures noisy.
pub fn loadavg() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(-1.0)
}

pub fn record_machine(cfg: &Config) {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let git = Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "describe",
            "--always",
            "--dirty",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    report(
        "machine",
        json!({
            "nproc": std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
            "cpu": cpu, "rustc": rustc, "git": git,
            "date": jiff::Timestamp::now().to_string(),
            "smoke": cfg.smoke,
            "sizes": cfg.sizes.iter().map(|s| s.label.clone()).collect::<Vec<_>>(),
        }),
    );
}

/// The release CLI, copied aside so a concurrent rebuild cannot change it mid-run.
pub fn agentlog_bin() -> Option<PathBuf> {
    let src = std::env::var_os("AGENTLOG_BIN").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/agentlog"),
        PathBuf::from,
    );
    if !src.exists() {
        eprintln!(
            "WARNING: {} not found: skipping the whole-process benchmark (cargo build --release --bin agentlog)",
            src.display()
        );
        return None;
    }
    let built = fs::metadata(&src).and_then(|m| m.modified()).ok();
    let newest_src = newest_mtime(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    if let (Some(built), Some(newest)) = (built, newest_src)
        && newest > built
    {
        eprintln!(
            "WARNING: {} is older than src/: rebuild it for a fair whole-process figure",
            src.display()
        );
        report("warnings/agentlog_bin_older_than_src", json!(true));
    }
    let dst = data::data_root().join("bin/agentlog");
    fs::create_dir_all(dst.parent().unwrap()).unwrap();
    let _ = fs::remove_file(&dst);
    fs::copy(&src, &dst).unwrap();
    Some(dst)
}

fn newest_mtime(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let t = if path.is_dir() {
            newest_mtime(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).ok()
        };
        newest = newest.max(t);
    }
    newest
}
