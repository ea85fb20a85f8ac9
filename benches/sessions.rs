//! Session queries on large sessions: reading one event with a window of neighbours, and
//! filtering by type, must cost the window or the matches, not the log's length.
//!
//! Sessions of 10k and 100k events by default; `AGENTLOG_BENCH_SESSION_EVENTS=10000,1000000`
//! adds the 1M-event one (generated once under target/bench-data/). Each session holds exactly
//! 100 `compaction/summary` events whatever its size, so the filter's matches stay constant.
//! The surface and a surface type's records read the whole log by their nature; they are
//! measured per event of the log. Rewrites (tool-result prunes and compactions) are measured
//! on in-memory sessions: the whole fold, and one event appended to a live session.
//!
//! cargo bench --bench sessions
// Benchmark setup: a failed step stops the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentlog::query::{
    CheckpointPolicy, QueryConfig, QueryService, SessionEvent, SessionHeader, Store, StoreConfig,
    SurfaceOp, WindowRequest, fold_surface,
};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const RARE: &str = "compaction/summary";
const RARE_COUNT: u64 = 100;

fn sizes() -> Vec<u64> {
    std::env::var("AGENTLOG_BENCH_SESSION_EVENTS")
        .ok()
        .map_or_else(
            || vec![10_000, 100_000],
            |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        )
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
            b.iter(|| service.read_event(r).expect("read"));
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
            });
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
            });
        });
        group.bench_with_input(BenchmarkId::new("surface_type_records", n), &n, |b, _| {
            b.iter(|| {
                let found = service
                    .list_events_of_types("s", &["user/message"])
                    .expect("filter");
                assert!(!found.is_empty());
            });
        });
    }
    group.finish();
}

/// A `user/message`, `assistant/message` or `tool/result` (by `kind`) appended to the surface.
fn surface_event(kind: u64, seq: u64) -> SessionEvent {
    let (event_type, data) = match kind {
        0 => (
            "user/message",
            json!({"id": format!("u{seq}"), "role": "user", "source": {"kind": "user"},
                   "content": [{"type": "text", "text": "please look at the migration"}]}),
        ),
        1 => (
            "assistant/message",
            json!({"turn": 1, "step": 1, "message": {"id": format!("a{seq}"), "role": "assistant",
                   "source": {"kind": "model", "provider": "p", "model": "m"},
                   "content": [{"type": "text", "text": "looking at it now"}]}}),
        ),
        _ => (
            "tool/result",
            json!({"turn": 1, "step": 1, "message": {"id": format!("t{seq}"), "role": "user",
                   "source": {"kind": "tool", "callId": format!("c{seq}")},
                   "content": [{"type": "tool-result", "toolCallId": format!("c{seq}"),
                                "content": [{"type": "text", "text": "a long tool output"}]}]}}),
        ),
    };
    SessionEvent::new(
        event_type,
        seq,
        1_700_000_000_000 + i64::try_from(seq).unwrap(),
        data,
    )
    .with_surface_op(SurfaceOp::Append)
}

/// A session of `n` events that rewrites its history as long agent sessions do: turns of a
/// user message, an assistant reply and two tool results; every eighth event prunes the
/// content of a tool result forty nodes back, if that node is one; every 500 events a compaction replaces 100 nodes of the
/// older surface with a summary; at the middle one compaction replaces the whole surface.
/// Returns the events and the surface a naive model expects after them.
fn rewriting_session(n: u64) -> (Vec<SessionEvent>, Vec<u64>) {
    let mut events: Vec<SessionEvent> = Vec::new();
    // The model: the surface as a plain vector. Its edits stay near the end, so building it
    // is linear; the fold under test does not know that.
    let mut surface: Vec<u64> = Vec::new();
    while (events.len() as u64) < n {
        let seq = events.len() as u64;
        let len = surface.len();
        let event = if seq == n / 2 && len > 1 {
            let (first, last) = (surface[0], surface[len - 1]);
            let sources = std::mem::take(&mut surface);
            surface.push(seq);
            surface_event(0, seq)
                .with_surface_op(SurfaceOp::Replace {
                    start: first,
                    end: last,
                })
                .with_sources(sources)
        } else if seq % 500 == 499 && len > 300 {
            let range = len - 300..len - 200;
            let sources: Vec<u64> = surface[range.clone()].to_vec();
            let (first, last) = (sources[0], sources[sources.len() - 1]);
            surface.splice(range, [seq]);
            surface_event(0, seq)
                .with_surface_op(SurfaceOp::Replace {
                    start: first,
                    end: last,
                })
                .with_sources(sources)
        } else if seq % 8 == 7
            && len > 40
            && events[usize::try_from(surface[len - 40]).unwrap()].event_type == "tool/result"
        {
            let target = surface[len - 40];
            let mut pruned = events[usize::try_from(target).unwrap()].clone();
            pruned.seq = seq;
            pruned.data["message"]["content"][0]["content"] =
                json!([{"type": "text", "text": "[pruned]"}]);
            surface[len - 40] = seq;
            pruned
                .with_surface_op(SurfaceOp::Replace {
                    start: target,
                    end: target,
                })
                .with_sources(vec![target])
        } else {
            surface.push(seq);
            surface_event(seq % 4, seq)
        };
        events.push(event);
    }
    (events, surface)
}

/// Rewrites must cost each event its own work, not the surface's length: the whole fold of a
/// rewriting session (per event), and one (log-only) event appended to a live session of
/// that length.
fn rewrites(c: &mut Criterion) {
    let mut group = c.benchmark_group("session_rewrites");
    group.sample_size(10);
    for n in sizes() {
        let (events, expected) = rewriting_session(n);
        let fold = fold_surface(&events).expect("a valid session");
        assert_eq!(fold.nodes, expected, "the fold disagrees with the model");
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::new("fold_surface", n), &events, |b, events| {
            b.iter(|| fold_surface(events).expect("fold"));
        });
        group.throughput(Throughput::Elements(1));
        let dir = tempfile::tempdir().expect("temp dir");
        let config = StoreConfig {
            checkpoint: CheckpointPolicy {
                max_pending_events: usize::MAX,
                max_delay: Duration::from_hours(1),
            },
            ..Default::default()
        };
        let store = Store::open(dir.path(), config).expect("store");
        store
            .create_session(SessionHeader::new("s", 1))
            .expect("session");
        for chunk in events.chunks(1000) {
            store.append("s", chunk.to_vec()).expect("append");
        }
        // A log-only event, so the surface, and what each append costs, stays as it is.
        let mut next = n;
        group.bench_with_input(BenchmarkId::new("live_append_one", n), &n, |b, _| {
            b.iter_batched(
                || {
                    next += 1;
                    let seq = next - 1;
                    SessionEvent::new(
                        "step/start",
                        seq,
                        1_700_000_000_000 + i64::try_from(seq).unwrap(),
                        json!({"turn": 1, "step": seq}),
                    )
                },
                |event| store.append("s", vec![event]).expect("append"),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, reads, filters, whole_log, rewrites);
criterion_main!(benches);
