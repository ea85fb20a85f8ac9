//! The headline benchmarks: the agent-log figures of `docs/PERFORMANCE.md`, with the peers
//! (the lingtai kernel's SQLite sidecar and its plain JSONL scans) measured in the same run on
//! the same logs.
//!
//! ```text
//! cargo build --release --bin agentlog          # for the whole-process figure
//! cargo bench --bench headline                  # 1 MB and 10 MB logs
//! AGENTLOG_BENCH_SIZES=1mb,10mb,100mb,1gb cargo bench --bench headline   # docs/PERFORMANCE.md
//! AGENTLOG_BENCH_SMOKE=1 cargo bench --bench headline   # CI smoke: 1 MB, short timings
//! python3 benches/summarize.py                  # the results table, from target/criterion
//! ```
//!
//! Environment:
//! * `AGENTLOG_BENCH_SIZES`: comma-separated sizes (`1mb`, `10mb`, `100mb`, `1gb`, ...);
//!   default `1mb,10mb` (`1mb` in smoke mode).
//! * `AGENTLOG_BENCH_SMOKE=1`: short warm-up and measurement, fewer samples (also implied when
//!   the binary runs without `--bench`, as under `cargo test --benches`).
//! * `AGENTLOG_BENCH_ONESHOT_ABOVE`: logs larger than this many bytes time the sidecar's
//!   offline rebuild once (while building the cached sidecar) instead of under criterion;
//!   default 200000000.
//! * `AGENTLOG_BENCH_APPEND=0`: skip the (size-independent) append benchmarks.
//! * `AGENTLOG_BIN`: the CLI to spawn (default `target/release/agentlog`; skipped if absent).
//! * `AGENTLOG_BENCH_DATA`: where logs are cached (default `target/bench-data`).
//!
//! Figures criterion cannot measure (peak RSS, sizes on disk, repair counts, one-shot
//! timings, the machine) go to `target/bench-data/report.json`.
// Benchmark setup: a failed step stops the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/child.rs"]
mod child;
#[path = "support/data.rs"]
mod data;
#[path = "support/reference.rs"]
mod reference;
#[path = "support/run.rs"]
mod run;
#[path = "support/sidecar.rs"]
mod sidecar;

use std::cell::{Cell, OnceCell, RefCell};
use std::fs::{self, File, OpenOptions};
use std::hint::black_box;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentlog::generation::{
    GenerationRequest, Tier, current_generation_at, from_state, full_scan, reverse_scan,
};
use agentlog::index::{Index, IndexOptions, Writer, WriterOptions};
use agentlog::log::{LogPaths, SyncPolicy};
use criterion::{BenchmarkId, Criterion, Throughput};
use serde_json::{Value, json};

use data::{Dataset, report};
use run::{Config, agentlog_bin, loadavg, record_machine};

fn main() {
    if child::run_if_child() {
        return;
    }
    let cfg = Config::from_env();
    let mut c = Criterion::default().without_plots().configure_from_args();
    record_machine(&cfg);
    let bin = agentlog_bin();
    let extra = data::extra_lines(10_000);
    for size in &cfg.sizes {
        report(&format!("load/{}/start", size.label), json!(loadavg()));
        let ds = Dataset::prepare(size);
        let _ = ds.index();
        let work = ds.scratch("work");
        since_molt(&mut c, &cfg, &ds, bin.as_deref(), &work);
        build(&mut c, &cfg, &ds, &extra);
        catch_up(&mut c, &cfg, &ds, &work, &extra);
        open(&mut c, &cfg, &ds, &work);
        hardware(&mut c, &cfg, &ds);
        memory_and_disk(&cfg, &ds);
        report(&format!("load/{}/end", size.label), json!(loadavg()));
        ds.drop_scratch();
        data::save_report();
    }
    if cfg.append {
        append(&mut c, &cfg, &extra);
    }
    c.final_summary();
    data::save_report();
}

/// `part / whole` for the report.
#[allow(
    clippy::cast_precision_loss,
    reason = "file sizes are far below 2^53 bytes"
)]
fn ratio(part: u64, whole: u64) -> f64 {
    part as f64 / whole as f64
}

fn check(key: &str, ok: bool, detail: &Value) {
    if !ok {
        eprintln!("WARNING: check {key} failed: {detail}");
    }
    report(
        &format!("checks/{key}"),
        json!({"ok": ok, "detail": detail}),
    );
}

/// 1. "Tokens since the last molt", every way we and the peers answer it.
fn since_molt(c: &mut Criterion, cfg: &Config, ds: &Dataset, bin: Option<&Path>, work: &LogPaths) {
    let label = &ds.size.label;
    let req = GenerationRequest::expecting(ds.molt_count);
    let index = ds.index();
    let answer = from_state(index.state(), &req).expect("since-molt answer");
    check(
        &format!("{label}/index_answer"),
        answer.totals.api_calls == ds.api_calls_since_molt
            && answer.totals.input_tokens == u128::from(ds.input_tokens_since_molt),
        &json!({"api_calls": answer.totals.api_calls, "expected": ds.api_calls_since_molt}),
    );
    let mut g = c.benchmark_group(format!("since_molt/{label}"));
    cfg.fast(&mut g);

    // (a) In-process, on an open handle: O(1).
    g.bench_function("a_index_state", |b| {
        b.iter(|| from_state(black_box(index.state()), black_box(&req)).unwrap());
    });
    let writer: OnceCell<Writer> = OnceCell::new();
    g.bench_function("a_writer_state", |b| {
        let w = writer.get_or_init(|| {
            Writer::open(
                work,
                WriterOptions {
                    sync: SyncPolicy::None,
                    ..WriterOptions::default()
                },
            )
            .expect("open writer")
        });
        b.iter(|| from_state(black_box(w.state()), black_box(&req)).unwrap());
    });
    if let Some(w) = writer.into_inner() {
        w.close().expect("close writer");
    }

    // (b) Open + validate + answer, from the index tier.
    let first = current_generation_at(&ds.paths, &req).expect("current_generation_at");
    check(
        &format!("{label}/open_validate_answer_tier"),
        first.tier == Tier::Index
            && first
                .index_outcome
                .as_ref()
                .map(agentlog::index::IndexOutcome::code)
                == Some("fresh"),
        &json!({"tier": first.tier.as_str(), "outcome": first.index_outcome.as_ref().map(agentlog::index::IndexOutcome::code)}),
    );
    g.bench_function("b_open_validate_answer", |b| {
        b.iter(|| current_generation_at(black_box(&ds.paths), &req).unwrap());
    });

    // (c) The whole process: `agentlog status DIR --json`.
    if let Some(bin) = bin {
        let run = || {
            Command::new(bin)
                .args(["status".as_ref(), ds.dir.as_os_str(), "--json".as_ref()])
                .stdin(Stdio::null())
                .output()
                .expect("spawn agentlog")
        };
        let out = run();
        let parsed: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        check(
            &format!("{label}/process_status"),
            out.status.success()
                && parsed["tier"] == "index"
                && parsed["index_outcome"] == "fresh"
                && parsed["api_calls"] == ds.api_calls_since_molt,
            &json!({"status": out.status.code(), "tier": parsed["tier"], "outcome": parsed["index_outcome"],
                   "api_calls": parsed["api_calls"]}),
        );
        g.bench_function("c_process_status_cli", |b| {
            b.iter(|| {
                let out = run();
                assert!(out.status.success());
                out
            });
        });
    }

    // (d) Our scan tiers (through the same entry point, starting at that tier).
    let at_tier = |tier| {
        let mut r = GenerationRequest::expecting(ds.molt_count);
        r.start_tier = tier;
        r
    };
    let (rev_req, full_req) = (at_tier(Tier::ReverseScan), at_tier(Tier::FullScan));
    let rev = current_generation_at(&ds.paths, &rev_req).expect("reverse scan");
    check(
        &format!("{label}/reverse_scan_tier"),
        rev.tier == Tier::ReverseScan && rev.totals == answer.totals,
        &json!({"tier": rev.tier.as_str(), "bytes_read": rev.bytes_read}),
    );
    g.bench_function("d_reverse_scan_tier", |b| {
        b.iter(|| current_generation_at(&ds.paths, &rev_req).unwrap());
    });
    // The tier functions alone, without opening the file or labelling.
    let log = File::open(&ds.paths.log).unwrap();
    let opts = IndexOptions::default();
    let extractor = opts.extractor();
    g.bench_function("d_reverse_scan_fn", |b| {
        b.iter(|| reverse_scan(&log, 8 << 20, &extractor, opts.max_line).unwrap());
    });

    // (e) The reference's plain reverse scan.
    let r = reference::reverse_scan(&ds.paths.log, reference::MAX_SCAN_BYTES);
    check(
        &format!("{label}/ref_reverse_scan"),
        r.as_ref()
            .is_some_and(|r| r.api_calls == ds.api_calls_since_molt),
        &json!({"found": r.is_some(), "api_calls": r.as_ref().map(|r| r.api_calls)}),
    );
    g.bench_function("e_ref_reverse_scan", |b| {
        b.iter(|| reference::reverse_scan(black_box(&ds.paths.log), reference::MAX_SCAN_BYTES));
    });

    // (f) The SQLite sidecar's tier-1 pair.
    let db = ds.sidecar();
    let pair = sidecar::pair_fresh_connections(&db, ds.molt_count);
    // The pair counts by wall clock (`ts >= boundary_ts`): a response logged in the
    // molt's millisecond, before it, counts too. The generator logs a molt in its response's
    // millisecond when no tool call came between (a third of molts). So the port is checked
    // against its own rule, computed by a plain pass, and whether that gives the truth is
    // reported beside it.
    let by_clock = reference::by_wall_clock(&ds.paths.log);
    let as_specified = pair.is_some_and(|p| {
        u64::try_from(p.api_calls) == Ok(by_clock.api_calls)
            && p.input_tokens == by_clock.input_tokens
    });
    let truthful = pair.is_some_and(|p| {
        u64::try_from(p.api_calls) == Ok(ds.api_calls_since_molt)
            && u64::try_from(p.input_tokens) == Ok(ds.input_tokens_since_molt)
    });
    check(
        &format!("{label}/sidecar_pair"),
        as_specified,
        &json!({
            "pair": format!("{pair:?}"),
            "differs_from_truth": !truthful,
            "truth_api_calls": ds.api_calls_since_molt,
            "by_wall_clock_api_calls": by_clock.api_calls,
        }),
    );
    g.bench_function("f_sidecar_pair_fresh_connections", |b| {
        b.iter(|| sidecar::pair_fresh_connections(black_box(&db), ds.molt_count).unwrap());
    });
    let conn = sidecar::open_read_only(&db).expect("open sidecar");
    g.bench_function("f_sidecar_pair_open_connection", |b| {
        b.iter(|| sidecar::pair_open_connection(black_box(&conn), ds.molt_count).unwrap());
    });
    drop(conn);

    // (d, e) Full scans: ours and the reference's.
    cfg.heavy(&mut g);
    g.throughput(Throughput::Bytes(ds.log_len));
    let full = current_generation_at(&ds.paths, &full_req).expect("full scan");
    check(
        &format!("{label}/full_scan_tier"),
        full.tier == Tier::FullScan && full.totals == answer.totals,
        &json!({"tier": full.tier.as_str()}),
    );
    g.bench_function("d_full_scan_tier", |b| {
        b.iter(|| current_generation_at(&ds.paths, &full_req).unwrap());
    });
    g.bench_function("d_full_scan_fn", |b| {
        b.iter(|| full_scan(&log, extractor.clone(), opts.max_line).unwrap());
    });
    let rf = reference::full_scan(&ds.paths.log);
    check(
        &format!("{label}/ref_full_scan"),
        rf.api_calls == ds.api_calls_since_molt,
        &json!({"api_calls": rf.api_calls}),
    );
    g.bench_function("e_ref_full_scan", |b| {
        b.iter(|| reference::full_scan(black_box(&ds.paths.log)));
    });
    g.finish();
}

/// 2. Building the index from scratch, and the sidecar's imports.
fn build(c: &mut Criterion, cfg: &Config, ds: &Dataset, extra: &[Vec<u8>]) {
    let label = &ds.size.label;
    let scratch = ds.dir.join("scratch/build");
    fs::create_dir_all(&scratch).unwrap();
    let paths = LogPaths {
        log: ds.paths.log.clone(),
        index: scratch.join("events.index.redb"),
    };
    let mut g = c.benchmark_group(format!("build/{label}"));
    cfg.heavy(&mut g);
    g.throughput(Throughput::Bytes(ds.log_len));
    g.bench_function("ours_from_scratch", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let _ = fs::remove_file(&paths.index);
                let t = Instant::now();
                let index = Index::open(&paths, &IndexOptions::default()).unwrap();
                total += t.elapsed();
                assert_eq!(index.outcome().code(), "created");
                assert_eq!(index.state().lines, ds.lines);
            }
            total
        });
    });
    let _ = fs::remove_file(&paths.index);

    // The offline rebuild (one transaction). Above the one-shot size it is timed once, when
    // the cached sidecar is built, rather than ten-plus times under criterion.
    let target = scratch.join("log.sqlite");
    let phases: RefCell<Vec<sidecar::RebuildStats>> = RefCell::new(Vec::new());
    if ds.log_len <= cfg.oneshot_above {
        g.bench_function("sidecar_offline_rebuild", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let _ = fs::remove_file(&target);
                    let t = Instant::now();
                    let stats = sidecar::offline_rebuild(&ds.paths.log, &target).unwrap();
                    total += t.elapsed();
                    phases.borrow_mut().push(stats);
                }
                total
            });
        });
    } else {
        // In a child, which also gives its peak memory (`memory_and_disk` skips it then).
        let _ = fs::remove_file(&target);
        let job = PathBuf::from("sidecar_rebuild");
        let out = child::run_json("peak", &[&job, &ds.paths.log, &target]);
        report(
            &format!("oneshot/{label}/sidecar_offline_rebuild_secs"),
            out["secs"].clone(),
        );
        report(
            &format!("build/{label}/sidecar_offline_rebuild_phases"),
            out["answer"].clone(),
        );
        report(&format!("memory/{label}/sidecar_rebuild"), out);
    }
    let _ = fs::remove_file(&target);
    if let Some(p) = phases.borrow().last() {
        report(
            &format!("build/{label}/sidecar_offline_rebuild_phases"),
            json!({"rows": p.rows, "import_secs": p.import.as_secs_f64(),
                   "integrity_checkpoint_replace_secs": p.finish.as_secs_f64()}),
        );
    }

    // The runtime import (connection + schema script + commit per event), into a copy of the
    // full sidecar of this size: the per-event steady-state cost; the doc extrapolates it.
    let runtime_db = scratch.join("runtime.sqlite");
    let ready = Cell::new(false);
    let next = Cell::new(0usize);
    let rows: Vec<sidecar::EventRow> = extra
        .iter()
        .filter_map(|l| sidecar::parse_line(l).map(sidecar::event_row))
        .collect();
    let source = ds.paths.log.display().to_string();
    g.throughput(Throughput::Elements(1));
    g.bench_function("sidecar_runtime_import_per_event", |b| {
        if !ready.replace(true) {
            fs::copy(ds.sidecar(), &runtime_db).unwrap();
        }
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                let i = next.get();
                next.set(i + 1);
                let row = &rows[i % rows.len()];
                sidecar::runtime_log_event(&runtime_db, row, &source, ds.log_len + i as u64)
                    .unwrap();
            }
            t.elapsed()
        });
    });
    g.finish();
    let _ = fs::remove_file(&runtime_db);
}

fn append_lines(log: &Path, lines: &[Vec<u8>], from: usize, n: usize) {
    let mut buf = Vec::with_capacity(n * 600);
    for i in 0..n {
        buf.extend_from_slice(&lines[(from + i) % lines.len()]);
        buf.push(b'\n');
    }
    OpenOptions::new()
        .append(true)
        .open(log)
        .unwrap()
        .write_all(&buf)
        .unwrap();
}

/// 3. Catch-up: N lines appended by another program, indexed on the next open.
///
/// `open_after_append` commits them (`max_memory_tail: 0`); `folded_in_memory` is a reader
/// folding a tail under the default `max_memory_tail` in memory (the tail is committed after
/// each timed open, outside the timing, so every open starts from a current index).
fn catch_up(c: &mut Criterion, cfg: &Config, ds: &Dataset, work: &LogPaths, extra: &[Vec<u8>]) {
    let mut g = c.benchmark_group(format!("catch_up/{}", ds.size.label));
    cfg.heavy(&mut g);
    let opts = IndexOptions {
        max_memory_tail: 0,
        ..IndexOptions::default()
    };
    let _ = Index::open(work, &opts).unwrap();
    let cursor = Cell::new(0usize);
    let in_memory = IndexOptions::default();
    for n in [1usize, 100] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("folded_in_memory", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    append_lines(&work.log, extra, cursor.get(), n);
                    cursor.set(cursor.get() + n);
                    let t = Instant::now();
                    let index = Index::open(work, &in_memory).unwrap();
                    total += t.elapsed();
                    assert_eq!(index.outcome().code(), "read_only", "{}", index.outcome());
                    assert_eq!(index.outcome().work().1, n as u64, "{}", index.outcome());
                    drop(index);
                    let committed = Index::open(work, &opts).unwrap();
                    assert_eq!(committed.outcome().work().1, n as u64);
                }
                total
            });
        });
    }
    for n in [0usize, 1, 100, 10_000] {
        g.throughput(Throughput::Elements(n.max(1) as u64));
        g.bench_function(BenchmarkId::new("open_after_append", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    append_lines(&work.log, extra, cursor.get(), n);
                    cursor.set(cursor.get() + n);
                    let t = Instant::now();
                    let index = Index::open(work, &opts).unwrap();
                    total += t.elapsed();
                    assert_eq!(index.outcome().work().1, n as u64, "{}", index.outcome());
                }
                total
            });
        });
    }
    g.finish();
}

/// 5. Open + validate after a clean close, and after a writer was killed with SIGKILL.
fn open(c: &mut Criterion, cfg: &Config, ds: &Dataset, work: &LogPaths) {
    let label = &ds.size.label;
    let opts = IndexOptions::default();
    let mut g = c.benchmark_group(format!("open/{label}"));
    cfg.fast(&mut g);
    g.bench_function("clean", |b| {
        b.iter(|| {
            let index = Index::open(&ds.paths, &opts).unwrap();
            assert_eq!(index.outcome().code(), "fresh");
            index
        });
    });
    cfg.heavy(&mut g);
    if cfg.smoke {
        g.measurement_time(Duration::from_millis(20));
    }
    let agent_dir = work.log.parent().unwrap().parent().unwrap().to_path_buf();
    let (kills, repaired) = (Cell::new(0u64), Cell::new(0u64));
    g.bench_function("after_sigkill", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                child::kill_a_writer(&agent_dir);
                let t = Instant::now();
                let index = Index::open(work, &opts).unwrap();
                total += t.elapsed();
                kills.set(kills.get() + 1);
                repaired.set(repaired.get() + u64::from(index.was_repaired()));
                assert_eq!(index.outcome().work().1, 10, "{}", index.outcome());
            }
            total
        });
    });
    g.finish();
    if kills.get() > 0 {
        report(
            &format!("open/{label}/after_sigkill"),
            json!({"kills": kills.get(), "redb_repaired": repaired.get()}),
        );
    }
}

/// 6. What the hardware does with the same file: read it, count its newlines.
fn hardware(c: &mut Criterion, cfg: &Config, ds: &Dataset) {
    let mut g = c.benchmark_group(format!("hardware/{}", ds.size.label));
    cfg.heavy(&mut g);
    g.throughput(Throughput::Bytes(ds.log_len));
    let mut buf = vec![0u8; 128 << 10];
    let mut read_all = |count: bool| {
        let mut f = File::open(&ds.paths.log).unwrap();
        let mut lines = 0usize;
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            if count {
                lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
            }
        }
        lines
    };
    g.bench_function("read_to_devnull", |b| b.iter(|| read_all(false)));
    assert_eq!(read_all(true) as u64, ds.lines);
    g.bench_function("memchr_newline_count", |b| b.iter(|| read_all(true)));
    // The disk's sync latency, which bounds every durable commit (redb's, SQLite's, ours):
    // append 4 KiB and `fdatasync`.
    cfg.fast(&mut g);
    g.throughput(Throughput::Elements(1));
    let probe = ds.dir.join("scratch/fsync-probe");
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&probe)
        .unwrap();
    let page = vec![b'x'; 4096];
    g.bench_function("append_4k_fdatasync", |b| {
        b.iter(|| {
            f.write_all(&page).unwrap();
            f.sync_data().unwrap();
        });
    });
    drop(f);
    let _ = fs::remove_file(&probe);
    g.finish();
}

/// 7. Peak RSS of each approach's job (a child process each), and sizes on disk.
fn memory_and_disk(cfg: &Config, ds: &Dataset) {
    let label = &ds.size.label;
    let index = ds.dir.join("scratch/memory.index.redb");
    let base = child::run_json("baseline", &[]);
    let built = child::run_json("build", &[&ds.paths.log, &index]);
    report(&format!("memory/{label}/baseline"), base);
    report(&format!("memory/{label}/build"), built);
    let molts = PathBuf::from(ds.molt_count.to_string());
    let rebuilt = ds.dir.join("scratch/memory.sqlite");
    let sidecar_db = ds.sidecar();
    for job in child::PEAK_JOBS {
        let job_path = PathBuf::from(job);
        let args: Vec<&Path> = match job {
            "ours_answer" | "ours_reverse_scan" | "ours_full_scan" => {
                vec![&job_path, &ds.dir, &molts]
            }
            "ref_reverse_scan" | "ref_full_scan" => vec![&job_path, &ds.paths.log],
            "sidecar_pair" => vec![&job_path, &sidecar_db, &molts],
            // Above the one-shot size, `build` ran this child already (its one timed rebuild).
            _ if ds.log_len > cfg.oneshot_above => continue,
            _ => vec![&job_path, &ds.paths.log, &rebuilt],
        };
        report(
            &format!("memory/{label}/{job}"),
            child::run_json("peak", &args),
        );
    }
    let _ = fs::remove_file(&rebuilt);
    let len = |p: &Path| fs::metadata(p).map_or(0, |m| m.len());
    let (log, idx, sqlite) = (len(&ds.paths.log), len(&index), len(&ds.sidecar()));
    report(
        &format!("disk/{label}"),
        json!({"log_bytes": log, "lines": ds.lines, "index_bytes": idx, "sidecar_bytes": sqlite,
               "index_over_log": ratio(idx, log), "sidecar_over_log": ratio(sqlite, log)}),
    );
    let _ = fs::remove_file(&index);
}

/// 4. Appending events: ours under each durability policy, and the kernel's write paths.
fn append(c: &mut Criterion, cfg: &Config, extra: &[Vec<u8>]) {
    let root = data::data_root().join("append");
    let _ = fs::remove_dir_all(&root);
    let mut g = c.benchmark_group("append");
    cfg.fast(&mut g);
    let policies = [
        ("none", SyncPolicy::None),
        (
            "interval_50ms",
            SyncPolicy::Interval(SyncPolicy::DEFAULT_INTERVAL),
        ),
        ("fsync", SyncPolicy::Fsync),
    ];
    let batch100: Vec<&[u8]> = extra[..100].iter().map(Vec::as_slice).collect();
    for (name, policy) in policies {
        for batch in [1usize, 100] {
            let dir = root.join(format!("{name}-{batch}"));
            let writer: OnceCell<RefCell<Writer>> = OnceCell::new();
            let cursor = Cell::new(0usize);
            g.throughput(Throughput::Elements(batch as u64));
            g.bench_function(BenchmarkId::new(format!("ours_{name}"), batch), |b| {
                let w = writer.get_or_init(|| {
                    let paths = LogPaths::for_agent_dir(&dir);
                    RefCell::new(
                        Writer::open(
                            &paths,
                            WriterOptions {
                                sync: policy,
                                ..WriterOptions::default()
                            },
                        )
                        .unwrap(),
                    )
                });
                let mut w = w.borrow_mut();
                b.iter_custom(|iters| {
                    let started = Instant::now();
                    for _ in 0..iters {
                        if batch == 1 {
                            let i = cursor.get();
                            cursor.set(i + 1);
                            w.append_json(&extra[i % extra.len()]).unwrap();
                        } else {
                            w.append_batch_json(&batch100).unwrap();
                        }
                    }
                    started.elapsed()
                });
            });
            if let Some(w) = writer.into_inner() {
                let w = w.into_inner();
                let events = w.state().events;
                let started = Instant::now();
                w.close().unwrap();
                report(
                    &format!("append/ours_{name}/{batch}"),
                    json!({"events_appended": events, "close_secs": started.elapsed().as_secs_f64()}),
                );
            }
            let _ = fs::remove_dir_all(&dir);
        }
    }

    // The kernel's JSONL appender: write + flush per event (no fsync, ever).
    g.throughput(Throughput::Elements(1));
    let jsonl = root.join("plain/events.jsonl");
    fs::create_dir_all(jsonl.parent().unwrap()).unwrap();
    let file = RefCell::new(
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&jsonl)
            .unwrap(),
    );
    let cursor = Cell::new(0usize);
    g.bench_function("peer_jsonl_write_flush", |b| {
        let mut file = file.borrow_mut();
        let mut line = Vec::with_capacity(4096);
        b.iter_custom(|iters| {
            let started = Instant::now();
            for _ in 0..iters {
                let i = cursor.get();
                cursor.set(i + 1);
                line.clear();
                line.extend_from_slice(&extra[i % extra.len()]);
                line.push(b'\n');
                file.write_all(&line).unwrap();
                file.flush().unwrap();
            }
            started.elapsed()
        });
    });
    drop(file);

    // The sidecar's per-event insert: as the runtime does it, and on a kept-open connection.
    let rows: Vec<sidecar::EventRow> = extra
        .iter()
        .filter_map(|l| sidecar::parse_line(l).map(sidecar::event_row))
        .collect();
    let source = jsonl.display().to_string();
    let db = root.join("plain/log.sqlite");
    let offset = Cell::new(0u64);
    g.bench_function("peer_sidecar_runtime_log_event", |b| {
        b.iter_custom(|iters| {
            let started = Instant::now();
            for _ in 0..iters {
                let i = offset.get();
                offset.set(i + 1);
                sidecar::runtime_log_event(
                    &db,
                    &rows[usize::try_from(i).unwrap() % rows.len()],
                    &source,
                    i,
                )
                .unwrap();
            }
            started.elapsed()
        });
    });
    let kept: OnceCell<rusqlite::Connection> = OnceCell::new();
    g.bench_function("peer_sidecar_kept_open_insert_commit", |b| {
        let conn = kept.get_or_init(|| sidecar::open_kept(&db).unwrap());
        b.iter_custom(|iters| {
            let started = Instant::now();
            for _ in 0..iters {
                let i = offset.get();
                offset.set(i + 1);
                sidecar::insert(
                    conn,
                    &rows[usize::try_from(i).unwrap() % rows.len()],
                    &source,
                    i,
                    None,
                )
                .unwrap();
            }
            started.elapsed()
        });
    });
    drop(kept);
    g.finish();
    let _ = fs::remove_dir_all(&root);
}
