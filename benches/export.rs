//! Parquet export throughput, in bytes of log: a first export of a whole log (with and without
//! the JSON text column), and an incremental export of the last 1% appended to an exported log.
//! DuckDB converting the same log, and peak RSS, are measured whole-process by
//! `benches/export_vs_duckdb.py` (docs/PERFORMANCE.md).
//!
//! ```text
//! cargo bench --bench export                                   # a 10 MB log
//! AGENTLOG_BENCH_EXPORT_SIZES=100mb,1gb cargo bench --bench export
//! AGENTLOG_BENCH_SMOKE=1 cargo bench --bench export            # CI: 1 MB, quick settings
//! ```
//!
//! Logs are generated once under `target/bench-data/export-<size>/` (`AGENTLOG_BENCH_DATA`
//! moves them).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentlog::export::{ExportOptions, export};
use agentlog::synth::{SynthOptions, responses_for_bytes, write_lingtai_log};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

fn sizes() -> Vec<(String, u64)> {
    let default = if std::env::var_os("AGENTLOG_BENCH_SMOKE").is_some() {
        "1mb"
    } else {
        "10mb"
    };
    let spec = std::env::var("AGENTLOG_BENCH_EXPORT_SIZES").unwrap_or_else(|_| default.to_owned());
    spec.split(',')
        .filter_map(|s| {
            let s = s.trim().to_lowercase();
            let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
            let scale = match unit {
                "kb" => 1_000,
                "mb" => 1_000_000,
                "gb" => 1_000_000_000,
                _ => return None,
            };
            Some((s.clone(), number.parse::<u64>().ok()? * scale))
        })
        .collect()
}

fn data_dir() -> PathBuf {
    std::env::var_os("AGENTLOG_BENCH_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data"),
        PathBuf::from,
    )
}

/// The agent directory holding a log of about `bytes` bytes, generated if missing.
fn agent(name: &str, bytes: u64) -> PathBuf {
    let dir = data_dir().join(format!("export-{name}")).join("agent");
    let log = dir.join("logs/events.jsonl");
    let marker = dir.join("generated");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(&bytes.to_string()) {
        std::fs::create_dir_all(dir.join("logs")).unwrap_or_else(|e| panic!("{e}"));
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display())),
        );
        let options = SynthOptions {
            responses: responses_for_bytes(bytes),
            ..SynthOptions::default()
        };
        write_lingtai_log(&mut file, &options).unwrap_or_else(|e| panic!("{e}"));
        drop(file);
        std::fs::write(&marker, bytes.to_string()).unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

fn options(out: &Path, json_text: bool) -> ExportOptions {
    ExportOptions {
        host: "bench".to_owned(),
        json_text,
        ..ExportOptions::new(out)
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(from)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

fn bench(c: &mut Criterion) {
    for (name, bytes) in sizes() {
        let dir = agent(&name, bytes);
        let log = dir.join("logs/events.jsonl");
        let full = std::fs::read(&log).unwrap_or_else(|e| panic!("{e}"));
        let len = full.len() as u64;

        let mut group = c.benchmark_group(format!("export/{name}"));
        group.sample_size(10);
        group.throughput(Throughput::Bytes(len));
        for (label, json_text) in [("first", true), ("first, no json text", false)] {
            group.bench_function(label, |b| {
                b.iter_batched(
                    || tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
                    |out| {
                        let report = export(
                            std::slice::from_ref(&dir),
                            &options(out.path(), json_text),
                            &mut |_| {},
                        )
                        .unwrap_or_else(|e| panic!("{e}"));
                        assert_eq!(report.log_bytes, len);
                        out
                    },
                    BatchSize::PerIteration,
                );
            });
        }

        // An exported log whose last 1% is new: the export reads only that.
        let growing = data_dir().join(format!("export-{name}")).join("growing");
        let _ = std::fs::remove_dir_all(&growing);
        std::fs::create_dir_all(growing.join("logs")).unwrap_or_else(|e| panic!("{e}"));
        let cut = full[..full.len() * 99 / 100]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        std::fs::write(growing.join("logs/events.jsonl"), &full[..cut])
            .unwrap_or_else(|e| panic!("{e}"));
        let template = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        export(
            std::slice::from_ref(&growing),
            &options(template.path(), true),
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(growing.join("logs/events.jsonl"), &full).unwrap_or_else(|e| panic!("{e}"));
        let new = len - cut as u64;
        group.throughput(Throughput::Bytes(new));
        group.bench_function("incremental, last 1% new", |b| {
            b.iter_batched(
                || {
                    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                    copy_dir(template.path(), out.path());
                    out
                },
                |out| {
                    let report = export(
                        std::slice::from_ref(&growing),
                        &options(out.path(), true),
                        &mut |_| {},
                    )
                    .unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(report.log_bytes, new, "only the new bytes are read");
                    out
                },
                BatchSize::PerIteration,
            );
        });
        group.finish();
    }
}

fn config() -> Criterion {
    let criterion = Criterion::default();
    if std::env::var_os("AGENTLOG_BENCH_SMOKE").is_some() {
        criterion
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(500))
    } else {
        criterion
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
