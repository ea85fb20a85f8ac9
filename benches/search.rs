//! Full-text search over generated stores of 1,000 sessions: our index against the reference's
//! approach (`benches/support/search_reference.rs`) and a plain scan of the logs (`rg -F` style:
//! memmem over every file).
//!
//! Scenarios, each with the phrase "zanzibar harbour" (in about 1 event in 5,000):
//! * warm: nothing changed since the last search;
//! * grew: one session grew by 10 events since the last search;
//! * grew1000: 100 sessions grew by 10 events each (1,000 new events);
//! * cold: no index (ours and the reference's are deleted first): the whole build.
//!
//! Plus, warm, a common word ("migration", in about 1 event in 10), which ranks many hits.
//!
//! Stores of 10k and 100k events by default; `AGENTLOG_BENCH_SEARCH_EVENTS=10000,100000,1000000`
//! adds the 1M one. Stores are generated once under target/bench-data/. Besides criterion's
//! report, a table of p50/p99 per scenario, build speed and index size is printed at the end
//! and written to target/bench-search.md.
//!
//! ```text
//! cargo bench --bench search
//! AGENTLOG_BENCH_SEARCH_EVENTS=10000,100000,1000000 cargo bench --bench search   # ~25 min
//! ```

// Benchmark setup: a failed step stops the run with its message. Figures are ratios of small
// counts, and SQLite keeps integers as i64, so the numeric casts are deliberate.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::unchecked_time_subtraction
)]

#[path = "support/search_reference.rs"]
mod search_reference;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use agentlog::query::{Store, StoreConfig};
use agentlog::search::{SearchConfig, SearchIndex, SessionSearchRequest};
use criterion::{Criterion, criterion_group, criterion_main};
use search_reference::RefSearch;
use serde_json::json;

const SESSIONS: u64 = 1_000;
const RARE: &str = "zanzibar harbour";
const COMMON: &str = "migration";

/// `AGENTLOG_BENCH_SMOKE=1`: few runs per scenario (CI checks that the bench runs).
fn smoke() -> bool {
    std::env::var_os("AGENTLOG_BENCH_SMOKE").is_some()
}

fn sizes() -> Vec<u64> {
    std::env::var("AGENTLOG_BENCH_SEARCH_EVENTS")
        .ok()
        .map_or_else(
            || vec![10_000, 100_000],
            |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        )
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
    "error",
    "handling",
    "for",
    "empty",
    "input",
    "then",
    "run",
    "suite",
    "again",
    "check",
    "logs",
    "config",
    "file",
    "value",
    "returns",
    "none",
    "when",
    "cache",
    "is",
    "cold",
    "build",
    "step",
    "takes",
    "long",
    "because",
    "of",
    "dependency",
    "graph",
    "resolution",
    "café",
    "naïve",
    "Straße",
    "deploy",
    "rollback",
    "window",
    "query",
    "index",
    "page",
    "cursor",
];

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn text(&mut self) -> String {
        let n = 8 + self.next() % 18;
        let mut words: Vec<&str> = (0..n)
            .map(|_| WORDS[(self.next() % WORDS.len() as u64) as usize])
            .collect();
        if self.next().is_multiple_of(10) {
            words.push(COMMON);
        }
        if self.next().is_multiple_of(5_000) {
            words.extend(RARE.split(' '));
        }
        words.join(" ")
    }
}

fn event_line(rng: &mut Rng, seq: u64) -> String {
    let time = 1_700_000_000_000u64 + seq * 1_000;
    let text = rng.text();
    let value = if seq.is_multiple_of(2) {
        json!({"type": "user/message", "seq": seq, "time": time,
               "data": {"id": format!("u{seq}"), "role": "user", "source": {"kind": "user"},
                        "content": [{"type": "text", "text": text}]},
               "surfaceOp": "append"})
    } else {
        json!({"type": "assistant/message", "seq": seq, "time": time,
               "data": {"turn": 1, "step": 1, "message": {"id": format!("a{seq}"),
                        "role": "assistant",
                        "source": {"kind": "model", "provider": "p", "model": "m"},
                        "content": [{"type": "text", "text": text}]}},
               "surfaceOp": "append"})
    };
    value.to_string()
}

/// The store of `events` events across [`SESSIONS`] sessions, generated once.
fn ensure_store(events: u64) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(format!("search-{events}"));
    let done = root.join(".generated");
    if done.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let per = events / SESSIONS;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ events);
    for s in 0..SESSIONS {
        let id = format!("session-{s:04}");
        let dir = root.join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(dir.join("events.jsonl")).unwrap());
        let header = json!({"type": "session", "version": 0, "id": id, "createdAt": s});
        writeln!(out, "{header}").unwrap();
        for seq in 0..per {
            writeln!(out, "{}", event_line(&mut rng, seq)).unwrap();
        }
    }
    std::fs::write(&done, b"").unwrap();
    // Let the files settle, so stamps are trusted as they would be on a machine in use.
    std::thread::sleep(Duration::from_millis(2_100));
    root
}

/// Appends 10 events to one session (seqs continue from its last line).
fn grow(root: &Path, session: u64, rng: &mut Rng) {
    let path = root
        .join(format!("session-{:04}", session % SESSIONS))
        .join("events.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let next = text.lines().count() as u64 - 1;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for seq in next..next + 10 {
        writeln!(f, "{}", event_line(rng, seq)).unwrap();
    }
}

/// Puts every log back to its generated length (the "grew" scenarios append).
fn restore(lengths: &[(PathBuf, u64)]) {
    for (path, len) in lengths {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        if f.metadata().unwrap().len() != *len {
            f.set_len(*len).unwrap();
        }
    }
}

fn lengths(root: &Path) -> Vec<(PathBuf, u64)> {
    (0..SESSIONS)
        .map(|s| {
            let p = root.join(format!("session-{s:04}")).join("events.jsonl");
            let len = std::fs::metadata(&p).unwrap().len();
            (p, len)
        })
        .collect()
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |es| {
        es.flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

/// A plain scan: every log read and searched for the phrase's bytes.
fn plain_scan(root: &Path, needle: &str) -> usize {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut hits = 0;
    for s in 0..SESSIONS {
        let p = root.join(format!("session-{s:04}")).join("events.jsonl");
        let bytes = std::fs::read(p).unwrap();
        hits += finder.find_iter(&bytes).count();
    }
    hits
}

/// One timed run: wall time and this thread's CPU time.
type Sample = (Duration, Duration);

static RESULTS: Mutex<Vec<(String, Vec<Sample>)>> = Mutex::new(Vec::new());

fn record(name: String, samples: Vec<Sample>) {
    RESULTS.lock().unwrap().push((name, samples));
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn request(query: &str) -> SessionSearchRequest {
    SessionSearchRequest {
        query: query.into(),
        ..SessionSearchRequest::default()
    }
}

/// Runs `f` (which times its own work) once untimed when `warm_up`, then `n` times, recording
/// the durations under `name`.
fn sample(name: String, n: usize, warm_up: bool, mut f: impl FnMut() -> Sample) {
    if warm_up {
        f();
    }
    let samples = (0..n).map(|_| f()).collect();
    record(name, samples);
}

fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        ts.tv_sec.cast_unsigned(),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

fn timed(f: impl FnOnce()) -> Sample {
    let cpu = thread_cpu();
    let t = Instant::now();
    f();
    (t.elapsed(), thread_cpu() - cpu)
}

fn bench(c: &mut Criterion) {
    let mut summary_extra = String::new();
    for events in sizes() {
        let root = ensure_store(events);
        let original = lengths(&root);
        restore(&original);
        let store = Store::open(&root, StoreConfig::default()).unwrap();
        let ref_db = root.with_extension("ref.sqlite");
        let big = events >= 1_000_000;
        let (warm_n, grew_n, cold_n) = if smoke() {
            (20, 12, 1)
        } else if big {
            (200, 40, 1)
        } else {
            (300, 60, 3)
        };

        // Cold: the whole build, ours then the reference's.
        let index_dir = root.join(agentlog::search::INDEX_DIR);
        let mut ours = SearchIndex::new(&store, SearchConfig::default());
        sample(format!("{events} cold ours"), cold_n, false, || {
            let _ = std::fs::remove_dir_all(&index_dir);
            ours = SearchIndex::new(&store, SearchConfig::default());
            timed(|| {
                ours.search_sessions(&request(RARE)).unwrap();
            })
        });
        // Sizes with the files closed: the last connection's close checkpoints the WAL, which
        // right after a build holds about as much again as the database file.
        ours = SearchIndex::new(&store, SearchConfig::default());
        let ours_size = dir_size(&index_dir);
        let remove_ref = || {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", ref_db.display()));
            }
        };
        let mut reference: Option<RefSearch> = None;
        sample(format!("{events} cold reference"), cold_n, false, || {
            reference = None;
            remove_ref();
            let fresh = reference.insert(RefSearch::open(&root, &ref_db));
            timed(|| {
                fresh.search(RARE, 20);
            })
        });
        if reference.take().is_none() {
            return;
        }
        let ref_size = std::fs::metadata(&ref_db).map_or(0, |m| m.len())
            + std::fs::metadata(format!("{}-wal", ref_db.display())).map_or(0, |m| m.len());
        let mut reference = RefSearch::open(&root, &ref_db);
        let log_bytes: u64 = original.iter().map(|(_, l)| l).sum();
        writeln!(
            summary_extra,
            "| {events} | {} | {} | {} |",
            log_bytes / 1_000_000,
            ours_size / 1_000_000,
            ref_size / 1_000_000
        )
        .unwrap();

        // Warm: nothing changed.
        let ours_hits = ours.search_sessions(&request(RARE)).unwrap().hits.len();
        let ref_hits = reference.search(RARE, 20).len();
        assert_eq!(
            ours_hits.min(20),
            ref_hits.min(20),
            "same page size of hits"
        );
        let mut group = c.benchmark_group(format!("search/{events}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(2));
        group.bench_function("warm/ours", |b| {
            b.iter(|| ours.search_sessions(&request(RARE)).unwrap());
        });
        group.bench_function("warm/reference", |b| b.iter(|| reference.search(RARE, 20)));
        group.bench_function("warm/plain-scan", |b| b.iter(|| plain_scan(&root, RARE)));
        group.finish();
        sample(format!("{events} warm ours"), warm_n, true, || {
            timed(|| {
                ours.search_sessions(&request(RARE)).unwrap();
            })
        });
        sample(format!("{events} warm reference"), warm_n / 4, true, || {
            timed(|| {
                reference.search(RARE, 20);
            })
        });
        sample(format!("{events} warm plain-scan"), 10, true, || {
            timed(|| {
                plain_scan(&root, RARE);
            })
        });
        sample(format!("{events} warm-common ours"), 20, true, || {
            timed(|| {
                ours.search_sessions(&request(COMMON)).unwrap();
            })
        });
        sample(format!("{events} warm-common reference"), 10, true, || {
            timed(|| {
                reference.search(COMMON, 20);
            })
        });

        // Grew: one session grew by 10 events since the last search.
        let mut rng = Rng(7);
        let mut next = 0u64;
        sample(format!("{events} grew ours"), grew_n, true, || {
            grow(&root, next * 37, &mut rng);
            next += 1;
            timed(|| {
                ours.search_sessions(&request(RARE)).unwrap();
            })
        });
        let grew_ref_n = if big { 5 } else { grew_n / 2 };
        sample(format!("{events} grew reference"), grew_ref_n, true, || {
            grow(&root, next * 37, &mut rng);
            next += 1;
            timed(|| {
                reference.search(RARE, 20);
            })
        });
        // Grew by 1,000 events: 100 sessions by 10 each (catching up scales with the events).
        sample(format!("{events} grew1000 ours"), grew_n / 6, true, || {
            for _ in 0..100 {
                grow(&root, next * 37, &mut rng);
                next += 1;
            }
            timed(|| {
                ours.search_sessions(&request(RARE)).unwrap();
            })
        });
        let (grew1000_ref_n, grew1000_ref_warm) =
            if big { (1, false) } else { (grew_n / 12, true) };
        sample(
            format!("{events} grew1000 reference"),
            grew1000_ref_n,
            grew1000_ref_warm,
            || {
                for _ in 0..100 {
                    grow(&root, next * 37, &mut rng);
                    next += 1;
                }
                timed(|| {
                    reference.search(RARE, 20);
                })
            },
        );
        restore(&original);
        ours.search_sessions(&request(RARE)).unwrap();
        // Written after every size, so a long run interrupted keeps what it measured.
        report(&summary_extra);
    }
}

fn report(sizes_table: &str) {
    let results = RESULTS.lock().unwrap();
    let mut out = String::from(
        "| events | scenario | engine | wall p50 | wall p99 | CPU p50 | CPU p99 | runs |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (name, samples) in results.iter() {
        let mut wall: Vec<Duration> = samples.iter().map(|s| s.0).collect();
        let mut cpu: Vec<Duration> = samples.iter().map(|s| s.1).collect();
        wall.sort();
        cpu.sort();
        let parts: Vec<&str> = name.split(' ').collect();
        writeln!(
            out,
            "| {} | {} | {} | {:.2?} | {:.2?} | {:.2?} | {:.2?} | {} |",
            parts[0],
            parts[1],
            parts[2],
            percentile(&wall, 0.5),
            percentile(&wall, 0.99),
            percentile(&cpu, 0.5),
            percentile(&cpu, 0.99),
            wall.len()
        )
        .unwrap();
    }
    out.push_str("\n| events | logs MB | our index MB (closed) | reference index MB (closed) |\n|---|---|---|---|\n");
    out.push_str(sizes_table);
    println!("\n{out}");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-search.md");
    let _ = std::fs::write(path, out);
}

criterion_group!(benches, bench);
criterion_main!(benches);
