//! Field extraction alone, on lingtai-shaped lines: the byte-level fast path that
//! `Extractor::extract` takes, against the `serde_json` path that defines it (and that every line
//! took before the fast path existed). Throughput is in bytes of log.
//!
//! cargo bench --bench extract
// Benchmark setup: a failed step stops the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentlog::event::{Extractor, LineMemo, Profile};
use agentlog::synth::{SynthOptions, write_lingtai_log};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn lines() -> Vec<Vec<u8>> {
    let mut log = Vec::new();
    let options = SynthOptions {
        responses: 5_000,
        ..SynthOptions::default()
    };
    if let Err(e) = write_lingtai_log(&mut log, &options) {
        panic!("generating the log in memory failed: {e}");
    }
    log.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn extraction(c: &mut Criterion) {
    let lines = lines();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let extractor = Extractor::new(Profile::lingtai());
    for line in &lines {
        assert_eq!(
            extractor.extract(line),
            extractor.extract_with_serde(line),
            "the paths disagree on {}",
            String::from_utf8_lossy(line)
        );
    }
    let mut memo = LineMemo::new();
    for line in &lines {
        assert_eq!(
            extractor.extract_with_memo(&mut memo, line),
            extractor.extract_with_serde(line),
            "the paths disagree, with the memo, on {}",
            String::from_utf8_lossy(line)
        );
    }
    let mut group = c.benchmark_group("extract");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("fast path (Extractor::extract)", |b| {
        b.iter(|| {
            lines
                .iter()
                .filter(|line| extractor.extract(line).is_ok())
                .count()
        });
    });
    group.bench_function(
        "fast path, memo of the previous line (extract_with_memo)",
        |b| {
            let mut memo = LineMemo::new();
            b.iter(|| {
                lines
                    .iter()
                    .filter(|line| extractor.extract_with_memo(&mut memo, line).is_ok())
                    .count()
            });
        },
    );
    group.bench_function("serde path (extract_with_serde)", |b| {
        b.iter(|| {
            lines
                .iter()
                .filter(|line| extractor.extract_with_serde(line).is_ok())
                .count()
        });
    });
    group.finish();
}

criterion_group!(benches, extraction);
criterion_main!(benches);
