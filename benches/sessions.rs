//! Session queries on large sessions: reading one event with a window of neighbours, and
//! filtering by type, must cost the window or the matches, not the log's length.
//!
//! Sessions of 10k and 100k events by default; `AGENTLOG_BENCH_SESSION_EVENTS=10000,1000000`
//! adds the 1M-event one (generated once under target/bench-data/). Each session holds exactly
//! 100 `compaction/summary` events whatever its size, so the filter's matches stay constant.
//! The surface and a surface type's records read the whole log by their nature; they are
//! measured per event of the log.
//!
//! cargo bench --bench sessions

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentlog::query::{QueryConfig, QueryService, Store, StoreConfig, WindowRequest};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const RARE: &str = "compaction/summary";
const RARE_COUNT: u64 = 100;

fn sizes() -> Vec<u64> {
    std::env::var("AGENTLOG_BENCH_SESSION_EVENTS")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000])
}

/// A dsh-style session of `n` events: turns of user message, assistant reply, tool call and
/// result, with `RARE_COUNT` rare events spread evenly.
fn write_session(root: &Path, n: u64) -> std::io::Result<()> {
    use std::io::Write;
    let dir = root.join("s");
    std::fs::create_dir_all(&dir)?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("events.jsonl"))?);
    writeln!(
        out,
        "{{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1}}"
    )?;
    let every = (n / RARE_COUNT).max(1);
    for seq in 0..n {
        let time = 1_700_000_000_000 + seq * 37;
        if seq % every == every / 2 && seq / every < RARE_COUNT {
            writeln!(
                out,
                "{{\"type\":\"{RARE}\",\"seq\":{seq},\"time\":{time},\"data\":{{\"summary\":\"turns so far, condensed\"}}}}"
            )?;
            continue;
        }
        match seq % 4 {
            0 => writeln!(
                out,
                "{{\"type\":\"user/message\",\"seq\":{seq},\"time\":{time},\"data\":{{\"id\":\"u{seq}\",\"role\":\"user\",\"source\":{{\"kind\":\"user\"}},\"content\":[{{\"type\":\"text\",\"text\":\"please look at the migration in step {seq}\"}}]}},\"surfaceOp\":\"append\"}}"
            )?,
            1 => writeln!(
                out,
                "{{\"type\":\"assistant/message\",\"seq\":{seq},\"time\":{time},\"data\":{{\"turn\":1,\"step\":1,\"message\":{{\"id\":\"a{seq}\",\"role\":\"assistant\",\"source\":{{\"kind\":\"model\",\"provider\":\"p\",\"model\":\"m\"}},\"content\":[{{\"type\":\"text\",\"text\":\"looking at it now\"}}]}}}},\"surfaceOp\":\"append\"}}"
            )?,
            2 => writeln!(
                out,
                "{{\"type\":\"step/start\",\"seq\":{seq},\"time\":{time},\"data\":{{\"turn\":1,\"step\":{seq}}}}}"
            )?,
            _ => writeln!(
                out,
                "{{\"type\":\"step/end\",\"seq\":{seq},\"time\":{time},\"data\":{{\"turn\":1,\"step\":{seq}}}}}"
            )?,
        }
    }
    out.flush()
}

/// The store of a session of `n` events, generated and indexed once.
fn store_root(n: u64) -> PathBuf {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("target/bench-data/session-{n}"));
    let done = root.join(".complete");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&root);
        write_session(&root, n).expect("generate session");
        // Build the index once, outside the measurements.
        let store = Store::open(&root, StoreConfig::default()).expect("store");
        let service = QueryService::new(&store, QueryConfig::default()).expect("service");
        let window = service
            .read_event(&WindowRequest::new("s", 0))
            .expect("first read");
        assert_eq!(window.target.seq, 0);
        std::fs::write(&done, b"").expect("mark");
    }
    root
}

fn reads(c: &mut Criterion) {
    let mut group = c.benchmark_group("session_read_window");
    group.measurement_time(Duration::from_secs(3));
    for n in sizes() {
        let root = store_root(n);
        let store = Store::open(&root, StoreConfig::default()).expect("store");
        let service = QueryService::new(&store, QueryConfig::default()).expect("service");
        for (label, seq) in [("start", 10), ("middle", n / 2), ("end", n - 10)] {
            let request = WindowRequest::new("s", seq).with_neighbours(3, 3);
            group.bench_with_input(
                BenchmarkId::new(format!("pm3/{label}"), n),
                &request,
                |b, r| b.iter(|| service.read_event(r).expect("read")),
            );
        }
        let wide = WindowRequest::new("s", n / 2).with_neighbours(50, 50);
        group.bench_with_input(BenchmarkId::new("pm50/middle", n), &wide, |b, r| {
            b.iter(|| service.read_event(r).expect("read"))
        });
    }
    group.finish();
}

fn filters(c: &mut Criterion) {
    let mut group = c.benchmark_group("session_filter_by_type");
    group.measurement_time(Duration::from_secs(3));
    for n in sizes() {
        let root = store_root(n);
        let store = Store::open(&root, StoreConfig::default()).expect("store");
        let service = QueryService::new(&store, QueryConfig::default()).expect("service");
        group.bench_with_input(BenchmarkId::new("rare_type_100_matches", n), &n, |b, _| {
            b.iter(|| {
                let found = service.list_events_of_types("s", &[RARE]).expect("filter");
                assert_eq!(found.len() as u64, RARE_COUNT.min(n));
            })
        });
    }
    group.finish();
}

/// Queries that read the whole log by their nature: the current surface, and the records of a
/// surface type (each record is classified by the surface fold). Their cost must grow linearly
/// with the log's events (throughput is per event of the log).
fn whole_log(c: &mut Criterion) {
    let mut group = c.benchmark_group("session_whole_log");
    group.sample_size(10);
    for n in sizes() {
        let root = store_root(n);
        let store = Store::open(&root, StoreConfig::default()).expect("store");
        let service = QueryService::new(&store, QueryConfig::default()).expect("service");
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::new("read_surface", n), &n, |b, _| {
            b.iter(|| {
                let surface = service.read_surface("s").expect("surface");
                assert!(!surface.events.is_empty());
            })
        });
        group.bench_with_input(BenchmarkId::new("surface_type_records", n), &n, |b, _| {
            b.iter(|| {
                let found = service
                    .list_events_of_types("s", &["user/message"])
                    .expect("filter");
                assert!(!found.is_empty());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, reads, filters, whole_log);
criterion_main!(benches);
