//! Transcript search (`agentlog search --transcripts`) over generated Claude Code transcripts:
//! 200 files of 500 lines by default (100,000 lines, about 45 MB), with a compaction boundary
//! in every file, against a plain scan of the files (memmem over every file, `rg -F` style).
//!
//! Scenarios, each with the phrase "zanzibar harbour" (in about 1 line in 5,000):
//! * warm: nothing changed since the last search;
//! * grew: one file grew by 10 lines (one of them torn until the next round) since the last
//!   search;
//! * cold: no index (the search index and the transcripts' own indexes deleted first).
//!
//! ```text
//! cargo bench --bench search_transcripts
//! AGENTLOG_BENCH_TRANSCRIPT_LINES=1000000 cargo bench --bench search_transcripts
//! ```

// Benchmark setup: a failed step stops the run with its message; word picks are small numbers.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentlog::search::{SearchConfig, TranscriptSearch, TranscriptSearchRequest};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const FILES: u64 = 200;
const RARE: &str = "zanzibar harbour";

fn lines() -> u64 {
    std::env::var("AGENTLOG_BENCH_TRANSCRIPT_LINES")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100_000)
}

const WORDS: &[&str] = &[
    "please",
    "look",
    "at",
    "the",
    "failing",
    "test",
    "in",
    "module",
    "parser",
    "and",
    "fix",
    "it",
    "migration",
    "schema",
    "index",
    "query",
    "cargo",
    "build",
    "error",
    "warning",
    "file",
    "line",
    "function",
    "return",
    "value",
    "type",
    "struct",
    "trait",
    "impl",
    "async",
];

/// xorshift64*: a fixed sequence, so the data is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn text(&mut self) -> String {
        let n = 8 + self.next() % 40;
        let mut words: Vec<&str> = (0..n)
            .map(|_| WORDS[(self.next() % WORDS.len() as u64) as usize])
            .collect();
        if self.next().is_multiple_of(5_000) {
            words.extend(RARE.split(' '));
        }
        words.join(" ")
    }
}

/// Line `n` of a Claude Code transcript: a user prompt, an assistant answer with a tool call, a
/// tool result, or (once per file, at `boundary`) a compaction boundary.
fn line(rng: &mut Rng, n: u64, boundary: bool) -> String {
    let ts = format!(
        "2026-01-{:02}T{:02}:{:02}:{:02}Z",
        1 + (n / 86_400) % 28,
        (n / 3600) % 24,
        (n / 60) % 60,
        n % 60
    );
    let v = if boundary {
        json!({"type":"system","subtype":"compact_boundary","uuid":format!("b{n}"),"sessionId":"s",
               "timestamp":ts,"compactMetadata":{"trigger":"auto","preTokens":100_000}})
    } else {
        match n % 3 {
            0 => json!({"type":"user","uuid":format!("u{n}"),"sessionId":"s","timestamp":ts,
                        "message":{"role":"user","content":rng.text()}}),
            1 => json!({"type":"assistant","uuid":format!("a{n}"),"sessionId":"s","timestamp":ts,
                        "requestId":format!("r{n}"),
                        "message":{"id":format!("m{n}"),"role":"assistant","model":"claude",
                                   "content":[{"type":"text","text":rng.text()},
                                              {"type":"tool_use","name":"Bash","input":{"command":rng.text()}}],
                                   "usage":{"input_tokens":10,"output_tokens":20,
                                            "cache_creation_input_tokens":0,"cache_read_input_tokens":5}}}),
            _ => json!({"type":"user","uuid":format!("t{n}"),"sessionId":"s","timestamp":ts,
                        "message":{"role":"user","content":[{"type":"tool_result","content":rng.text()}]}}),
        }
    };
    v.to_string()
}

/// The transcripts, generated once under target/bench-data/.
fn ensure_transcripts(total: u64) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(format!("search-transcripts-{total}"));
    let done = root.join(".generated");
    if done.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let per = total / FILES;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ total);
    for f in 0..FILES {
        let dir = root.join(format!("project-{:02}", f % 20));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("session-{f:04}.jsonl"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        for n in 0..per {
            writeln!(out, "{}", line(&mut rng, n, n == per / 2)).unwrap();
        }
    }
    std::fs::write(&done, b"").unwrap();
    // Let the files settle, so stamps are trusted as they would be on a machine in use.
    std::thread::sleep(Duration::from_millis(2_100));
    root
}

/// Every transcript read and searched for the phrase's bytes.
fn plain_scan(files: &[PathBuf], needle: &str) -> usize {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    files
        .iter()
        .map(|p| finder.find_iter(&std::fs::read(p).unwrap()).count())
        .sum()
}

fn files(root: &Path) -> Vec<PathBuf> {
    agentlog::transcript::discover(&[root.to_path_buf()]).0
}

fn request(root: &Path) -> TranscriptSearchRequest {
    TranscriptSearchRequest {
        query: RARE.into(),
        paths: vec![root.to_path_buf()],
        ..TranscriptSearchRequest::default()
    }
}

fn bench(c: &mut Criterion) {
    let total = lines();
    let root = ensure_transcripts(total);
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(format!("search-transcripts-{total}-cache"));
    let _ = std::fs::remove_dir_all(&cache);
    let all = files(&root);
    let mut search = TranscriptSearch::new(Some(cache.clone()), SearchConfig::default()).unwrap();
    let started = Instant::now();
    let first = search.search(&request(&root)).unwrap();
    eprintln!(
        "first search (cold build of {total} lines): {:?}, {} hits",
        started.elapsed(),
        first.hits.len()
    );
    assert!(!first.hits.is_empty());
    let mut group = c.benchmark_group(format!("search-transcripts/{total}"));
    group.sample_size(20);
    group.bench_function("warm/ours", |b| {
        b.iter(|| search.search(&request(&root)).unwrap());
    });
    group.bench_function("warm/plain-scan", |b| b.iter(|| plain_scan(&all, RARE)));
    // One file grows by 10 lines per search, the last one torn until the next round.
    let grown = all[all.len() / 2].clone();
    let mut rng = Rng(7);
    let mut n = 1_000_000u64;
    let mut torn = String::new();
    group.bench_function("grew/ours", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let mut text = std::mem::take(&mut torn);
                for _ in 0..10 {
                    n += 1;
                    text.push_str(&line(&mut rng, n, false));
                    text.push('\n');
                }
                n += 1;
                let next = line(&mut rng, n, false);
                let (head, tail) = next.split_at(next.len() / 2);
                text.push_str(head);
                torn = format!("{tail}\n");
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&grown)
                    .unwrap();
                f.write_all(text.as_bytes()).unwrap();
                drop(f);
                let start = Instant::now();
                search.search(&request(&root)).unwrap();
                spent += start.elapsed();
            }
            spent
        });
    });
    group.bench_function("grew/plain-scan", |b| b.iter(|| plain_scan(&all, RARE)));
    group.sample_size(10);
    group.bench_function("cold/ours", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let _ = std::fs::remove_dir_all(&cache);
                let mut fresh =
                    TranscriptSearch::new(Some(cache.clone()), SearchConfig::default()).unwrap();
                let start = Instant::now();
                fresh.search(&request(&root)).unwrap();
                spent += start.elapsed();
            }
            spent
        });
    });
    group.finish();
    // The grown file goes back to what was generated, for the next run.
    let _ = std::fs::remove_file(root.join(".generated"));
}

criterion_group!(benches, bench);
criterion_main!(benches);
