//! The viewer's window reads (`/api/sessions/{id}/lines`): the first 100 lines of a session,
//! 100 lines from its middle, and its last 100 lines (`before=end`), on a small Claude Code
//! session (about 30 KB) and a large one (about 100 MB), both generated. A window costs its own
//! bytes, so the two sizes should take about the same time (target: at most 5 ms each).
//!
//! ```text
//! cargo bench --bench serve
//! AGENTLOG_BENCH_SERVE_MB=1000 cargo bench --bench serve
//! ```

// Benchmark setup: a failed step stops the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::path::{Path, PathBuf};

use agentlog::serve::window::{complete_end, read_backward, read_forward};
use agentlog::synth::{TranscriptSynth, synth_transcript};
use agentlog::transcript::Format;
use criterion::{Criterion, criterion_group, criterion_main};
use jiff::Timestamp;

/// Lines a page asks for at a time.
const WINDOW: usize = 100;

/// The large session's size in MB.
fn large_mb() -> u64 {
    std::env::var("AGENTLOG_BENCH_SERVE_MB")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// A generated Claude Code session of at least `bytes`, written once under `dir`.
fn session(dir: &Path, name: &str, bytes: u64) -> PathBuf {
    let path = dir.join(format!("{name}.jsonl"));
    if path.metadata().is_ok_and(|m| m.len() >= bytes) {
        return path;
    }
    let options = |turns| TranscriptSynth {
        format: Format::ClaudeCode,
        seed: 7,
        turns,
        compact_every: 500,
        start: Timestamp::from_second(1_780_000_000).unwrap(),
        session: format!("bench-{name}"),
        cwd: "/home/you/shop".to_owned(),
        model: "claude-sonnet-4-5".to_owned(),
    };
    // The bytes of one turn, from a sample, give the turns to ask for.
    let sample = synth_transcript(&options(100)).bytes.len() as u64 / 100;
    let turns = bytes.div_ceil(sample.max(1)).max(1);
    std::fs::write(&path, synth_transcript(&options(turns)).bytes).unwrap();
    path
}

fn windows(c: &mut Criterion) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-serve");
    std::fs::create_dir_all(&dir).unwrap();
    let sizes = [("30kb", 30_000), ("large", large_mb() * 1_000_000)];
    let mut group = c.benchmark_group("serve_window");
    for (name, bytes) in sizes {
        let path = session(&dir, name, bytes);
        let file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let end = complete_end(&file, len).unwrap();
        let format = Some(Format::ClaudeCode);
        // The line start just past the middle of the file.
        let content = std::fs::read(&path).unwrap();
        let half = content.len() / 2;
        let middle = memchr::memchr(b'\n', &content[half..]).map_or(0, |i| (half + i + 1) as u64);
        drop(content);
        // Each window is full, or reaches the end of the file its way.
        for (window, forward) in [
            (read_forward(&file, format, 0, WINDOW, end).unwrap(), true),
            (
                read_forward(&file, format, middle, WINDOW, end).unwrap(),
                true,
            ),
            (
                read_backward(&file, format, end, WINDOW, end).unwrap(),
                false,
            ),
        ] {
            let reached = if forward {
                window.next_offset == end
            } else {
                window.first_offset == 0
            };
            assert!(
                window.lines.len() == WINDOW || reached,
                "{name}: a short window"
            );
        }
        group.bench_function(format!("first_{name}"), |b| {
            b.iter(|| read_forward(&file, format, 0, WINDOW, end).unwrap());
        });
        group.bench_function(format!("middle_{name}"), |b| {
            b.iter(|| read_forward(&file, format, middle, WINDOW, end).unwrap());
        });
        group.bench_function(format!("last_{name}"), |b| {
            b.iter(|| read_backward(&file, format, end, WINDOW, end).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, windows);
criterion_main!(benches);
