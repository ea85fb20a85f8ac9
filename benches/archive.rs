//! The archive, in process: the first archive of a 100 MB set of Claude Code transcripts (real
//! density, from `tests/common/transcript_gen.rs`), a run with nothing new (one stat a file),
//! and reading every file back (what restore reads: every frame decoded and checked), and a
//! warm `usage` with half the sessions only in the archive against all originals present.
//!
//! ```text
//! cargo bench --bench archive
//! ```

// Benchmark setup: a failed step stops the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/common/transcript_gen.rs"]
mod generate;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use agentlog::archive::{Archive, ArchiveOptions, archive};
use agentlog::transcript::{Format, OpenOptions, UsageOptions};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Bytes in the set.
const SET_BYTES: u64 = 100 << 20;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects");
    let mut files: Vec<PathBuf> = Vec::new();
    let mut total = 0u64;
    let mut i = 0u64;
    while total < SET_BYTES {
        let path = root.join(format!("p{}", i % 8)).join(format!("s{i}.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let bytes = generate::transcript(Format::ClaudeCode, i, 2000);
        total += bytes.len() as u64;
        std::fs::write(&path, bytes).unwrap();
        files.push(std::fs::canonicalize(&path).unwrap());
        i += 1;
    }
    let roots = vec![root.clone()];
    let mut group = c.benchmark_group("archive");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(total));
    let mut run = 0u32;
    group.bench_function("first_archive_100MB", |b| {
        b.iter(|| {
            run += 1;
            let options = ArchiveOptions {
                dir: Some(dir.path().join(format!("first{run}"))),
                ..ArchiveOptions::default()
            };
            black_box(archive(&roots, &options, &|_, _| {}).unwrap());
            std::fs::remove_dir_all(dir.path().join(format!("first{run}"))).unwrap();
        });
    });
    let kept = dir.path().join("kept");
    let options = ArchiveOptions {
        dir: Some(kept.clone()),
        ..ArchiveOptions::default()
    };
    archive(&roots, &options, &|_, _| {}).unwrap();
    // Old enough that each file's stat is trusted.
    std::thread::sleep(Duration::from_millis(2100));
    archive(&roots, &options, &|_, _| {}).unwrap();
    group.bench_function("read_back_100MB", |b| {
        b.iter(|| {
            let a = Archive::open(&kept).unwrap();
            for f in &files {
                black_box(a.read(f, None).unwrap().bytes.len());
            }
        });
    });
    group.throughput(Throughput::Elements(files.len() as u64));
    group.bench_function("nothing_new_run", |b| {
        b.iter(|| black_box(archive(&roots, &options, &|_, _| {}).unwrap()));
    });
    group.finish();

    // Warm usage: all originals, then half of them gone (read from the archive's copies).
    let usage_options = |cache: &str| UsageOptions {
        open: OpenOptions {
            index_dir: Some(dir.path().join(cache)),
            ..OpenOptions::default()
        },
        ..UsageOptions::default()
    };
    let mut group = c.benchmark_group("usage_warm");
    group.sample_size(20);
    let all = usage_options("cache-all");
    agentlog::archive::usage(&roots, &all, None, &|_, _| {});
    group.bench_function("all_originals", |b| {
        b.iter(|| black_box(agentlog::archive::usage(&roots, &all, None, &|_, _| {})));
    });
    for f in files.iter().step_by(2) {
        std::fs::remove_file(f).unwrap();
    }
    let half = usage_options("cache-half");
    agentlog::archive::usage(&roots, &half, Some(&kept), &|_, _| {});
    group.bench_function("half_archive_only", |b| {
        b.iter(|| {
            black_box(agentlog::archive::usage(
                &roots,
                &half,
                Some(&kept),
                &|_, _| {},
            ))
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
