//! How fast agentlog's extraction reads lingtai lines, against general JSON parsers on the same
//! lines, one thread each: serde_json, sonic-rs and simd-json (both SIMD; simd-json picks AVX2
//! at run time, sonic-rs needs `-C target-cpu=native` for it).
//!
//! ```sh
//! cargo run --release --manifest-path tools/json-peers/Cargo.toml -- [LOG] [MAX_BYTES]
//! RUSTFLAGS="-C target-cpu=native" cargo run --release --manifest-path tools/json-peers/Cargo.toml -- [LOG]
//! ```
//!
//! The lines are parsed one at a time, and again joined into JSON arrays of about 4 MiB (a
//! build's run), as a structural pass over a whole run would see them.
//!
//! Without `LOG`, a lingtai-shaped log of 30,000 responses (about 54 MB) is generated in memory.
//! Every parser must accept exactly the lines our extraction accepts, or the program fails.
//! Each one reads the whole line, as a build must: a line that is not JSON is not an event.
//! (serde_json's `IgnoredAny` checks the syntax but not the UTF-8 inside strings; sonic-rs,
//! simd-json and ours check both.) A parser that stops at the first key it wants (sonic-rs's
//! `get`) is not a peer and is left out.

use std::process::ExitCode;
use std::time::Instant;

use agentlog::event::{Extractor, LineMemo, Profile};
use agentlog::synth::{SynthOptions, write_lingtai_log};
use serde::de::IgnoredAny;

/// Rounds of one pass per parser; each one's median and best are reported.
const ROUNDS: usize = 15;

/// The size of the run a build reads at a time (`LineScanner`'s runs).
const RUN_BYTES: usize = 4 << 20;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("json-peers: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let log = match args.next() {
        Some(path) => std::fs::read(&path).map_err(|e| format!("cannot read {path}: {e}"))?,
        None => {
            let mut log = Vec::new();
            let options = SynthOptions {
                responses: 30_000,
                ..SynthOptions::default()
            };
            write_lingtai_log(&mut log, &options).map_err(|e| format!("generating: {e}"))?;
            log
        }
    };
    let max_bytes = match args.next() {
        Some(n) => n.parse().map_err(|e| format!("MAX_BYTES {n}: {e}"))?,
        None => 100_000_000,
    };
    // Whole lines only: cut at the last newline within the limit.
    let cut = log[..max_bytes.min(log.len())]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let lines: Vec<&[u8]> = log[..cut]
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .collect();
    let bytes = cut;
    println!(
        "{} lines, {} bytes ({:.0} per line); {ROUNDS} rounds, MB/s of log on one thread (median, best)",
        lines.len(),
        bytes,
        bytes as f64 / lines.len().max(1) as f64
    );

    let extractor = Extractor::new(Profile::lingtai());
    let expected = lines
        .iter()
        .filter(|line| extractor.extract(line).is_ok())
        .count();
    let newlines = log[..cut].iter().filter(|&&b| b == b'\n').count();
    // The same lines as JSON arrays of about 4 MiB (a build's run), commas for newlines: what a
    // structural pass over a whole run, its setup paid once per run, could do.
    let runs = as_arrays(&lines, RUN_BYTES);
    let mut memo = LineMemo::new();
    let mut copy = Vec::new();
    let mut buffers = simd_json::Buffers::default();
    let mut run_copy = Vec::new();
    let mut run_buffers = simd_json::Buffers::default();
    // Each pass returns how many lines it accepted (for memchr: how many newlines it counted).
    type Pass<'a> = Box<dyn FnMut() -> usize + 'a>;
    let mut parsers: Vec<(&str, usize, Pass)> = vec![
        (
            "agentlog: Extractor::extract (fast path)",
            expected,
            Box::new(|| accepted(&lines, |l| extractor.extract(l).is_ok())),
        ),
        (
            "agentlog: extract_with_memo (as a build reads)",
            expected,
            Box::new(|| {
                accepted(&lines, |l| {
                    extractor.extract_with_memo(&mut memo, l).is_ok()
                })
            }),
        ),
        (
            "agentlog: extract_with_serde (the definition)",
            expected,
            Box::new(|| accepted(&lines, |l| extractor.extract_with_serde(l).is_ok())),
        ),
        (
            "serde_json::from_slice::<IgnoredAny>",
            expected,
            Box::new(|| accepted(&lines, |l| serde_json::from_slice::<IgnoredAny>(l).is_ok())),
        ),
        (
            "sonic_rs::from_slice::<IgnoredAny>",
            expected,
            Box::new(|| accepted(&lines, |l| sonic_rs::from_slice::<IgnoredAny>(l).is_ok())),
        ),
        (
            "sonic_rs::to_object_iter (checked), every member",
            expected,
            Box::new(|| {
                accepted(&lines, |l| {
                    sonic_rs::to_object_iter(l).all(|member| member.is_ok())
                })
            }),
        ),
        (
            "simd_json::to_tape_with_buffers (line copied first)",
            expected,
            Box::new(|| {
                accepted(&lines, |l| {
                    // simd-json parses in place, so it needs its own mutable copy.
                    copy.clear();
                    copy.extend_from_slice(l);
                    simd_json::to_tape_with_buffers(&mut copy, &mut buffers).is_ok()
                })
            }),
        ),
        (
            "serde_json::from_slice::<IgnoredAny>, 4 MiB runs as arrays",
            expected,
            Box::new(|| {
                in_accepted_runs(&runs, |run| {
                    serde_json::from_slice::<IgnoredAny>(run).is_ok()
                })
            }),
        ),
        (
            "sonic_rs::from_slice::<IgnoredAny>, 4 MiB runs as arrays",
            expected,
            Box::new(|| {
                in_accepted_runs(&runs, |run| sonic_rs::from_slice::<IgnoredAny>(run).is_ok())
            }),
        ),
        (
            "simd_json::to_tape_with_buffers, 4 MiB runs as arrays",
            expected,
            Box::new(|| {
                in_accepted_runs(&runs, |run| {
                    run_copy.clear();
                    run_copy.extend_from_slice(run);
                    simd_json::to_tape_with_buffers(&mut run_copy, &mut run_buffers).is_ok()
                })
            }),
        ),
        (
            "memchr::memchr_iter(b'\\n').count() (the hardware line)",
            newlines,
            Box::new(|| memchr::memchr_iter(b'\n', &log[..cut]).count()),
        ),
    ];
    // Rounds, each timing every parser once, so that this machine's drift (10-40% within
    // minutes) falls on all of them alike.
    let mut secs = vec![Vec::with_capacity(ROUNDS); parsers.len()];
    for _ in 0..ROUNDS {
        for ((name, should, pass), times) in parsers.iter_mut().zip(&mut secs) {
            let started = Instant::now();
            let accepted = pass();
            times.push(started.elapsed().as_secs_f64());
            if accepted != *should {
                return Err(format!(
                    "{name} counted {accepted} lines, {should} expected"
                ));
            }
        }
    }
    for ((name, _, _), times) in parsers.iter().zip(&mut secs) {
        times.sort_by(f64::total_cmp);
        let mbps = |s: f64| bytes as f64 / s / 1e6;
        println!(
            "{name:58} {:7.0} {:7.0}",
            mbps(times[ROUNDS / 2]),
            mbps(times[0])
        );
    }
    Ok(())
}

/// `lines` as JSON arrays of about `run_bytes` each, with how many lines each one holds.
fn as_arrays(lines: &[&[u8]], run_bytes: usize) -> Vec<(Vec<u8>, usize)> {
    let mut runs = Vec::new();
    let mut run = Vec::with_capacity(run_bytes + 1024);
    let mut count = 0;
    for line in lines {
        run.push(if count == 0 { b'[' } else { b',' });
        run.extend_from_slice(line);
        count += 1;
        if run.len() >= run_bytes {
            run.push(b']');
            runs.push((std::mem::take(&mut run), count));
            count = 0;
        }
    }
    if count > 0 {
        run.push(b']');
        runs.push((run, count));
    }
    runs
}

/// How many of `lines` `parses` accepts.
fn accepted(lines: &[&[u8]], mut parses: impl FnMut(&[u8]) -> bool) -> usize {
    lines.iter().filter(|line| parses(line)).count()
}

/// How many lines the runs that `parses` accepts hold.
fn in_accepted_runs(runs: &[(Vec<u8>, usize)], mut parses: impl FnMut(&[u8]) -> bool) -> usize {
    runs.iter()
        .filter(|(run, _)| parses(run))
        .map(|(_, lines)| lines)
        .sum()
}
