//! The Rust call behind `agentlog.status(agent_dir, molt_count)`, timed by criterion on the
//! logs `bench/bench_status.py` generates: a cross-check from another process. The binding's
//! own cost per call is measured inside one Python process instead (`_status_timed`,
//! `_status_loop`), because figures from two processes minutes apart differ by more than that
//! cost on a shared machine. Run it through the script's `--rust` (docs/PERFORMANCE.md,
//! "Python binding"), or:
//!
//! `AGENTLOG_PY_BENCH_DATA=target/py-bench-data cargo bench -p agentlog-python --bench status`

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};

use agentlog::generation::{
    GenerationRequest, StatusReport, current_generation_at, expected_generation,
};
use agentlog::log::LogPaths;

/// What `agentlog.status(agent_dir, molt_count)` runs with the GIL released.
fn status(agent_dir: &Path, molt_count: Option<u64>) -> Option<StatusReport> {
    let expected = expected_generation(agent_dir, molt_count).ok()?;
    let mut request = GenerationRequest::latest();
    request.expected_molt_count = expected.map(|(n, _)| n);
    let current = current_generation_at(&LogPaths::for_agent_dir(agent_dir), &request).ok()?;
    Some(StatusReport::new(agent_dir, &current, expected))
}

fn bench(c: &mut Criterion) {
    let data = std::env::var_os("AGENTLOG_PY_BENCH_DATA")
        .map_or_else(|| PathBuf::from("target/py-bench-data"), PathBuf::from);
    let mut group = c.benchmark_group("rust_status");
    for size in ["10mb", "100mb", "1gb"] {
        let dir = data.join(size);
        // The generation the manifest names; the Python side passes it too.
        let Some(first) = status(&dir, None) else {
            eprintln!("skipping {size}: no generated log at {}", dir.display());
            continue;
        };
        let molt_count = first.molt_count;
        group.bench_function(size, |b| b.iter(|| status(&dir, molt_count)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
