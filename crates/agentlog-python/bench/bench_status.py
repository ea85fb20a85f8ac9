"""agentlog.status() from Python against the lingtai kernel's Python tiers, and the binding's
per-call overhead against the same Rust call.

Run from the repository root, with the package installed in the active venv:

    python crates/agentlog-python/bench/bench_status.py --sizes 10mb,100mb,1gb --rust

For each size a synthetic lingtai-shaped log is generated once (cached under --data), its index
built, and then, page cache warm, in process:
- agentlog.status(agent_dir, molt_count): median per call over repeated timeit batches;
- the kernel's reverse scan (tier 2) and full scan (tier 3): our faithful port (kernel_tiers.py),
  and with --kernel-src CHECKOUT the kernel's own agent_session.py from a local checkout of
  Lingtai-AI/lingtai-kernel, loaded by path (not part of this repository);
- the binding's own cost per call: each call timed from Python minus the Rust call inside it,
  which the binding times itself (`_status_timed`), so the two figures come from one call;
- with --rust, criterion's figure for the same call in Rust (benches/status.rs).
Every answer is checked against agentlog's before it is timed. Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import agentlog

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_tiers  # noqa: E402

SIZES = {"10mb": 10_000_000, "100mb": 100_000_000, "1gb": 1_000_000_000}
REPO = Path(__file__).resolve().parents[3]


def log_dir(data: Path, size: str) -> Path:
    d = data / size
    if not (d / "logs" / "events.jsonl").exists():
        print(f"generating {size} ...", file=sys.stderr)
        agentlog.write_synthetic_log(d, target_bytes=SIZES[size])
    return d


def per_call(fn, budget: float = 1.0, repeat: int = 9) -> float:
    """Median seconds per call over `repeat` batches sized to about budget/repeat seconds."""
    n, elapsed = 1, 0.0
    while elapsed < budget / repeat / 4:
        n *= 2
        elapsed = timeit.timeit(fn, number=n)
    n = max(1, int(n * (budget / repeat) / elapsed))
    return statistics.median(t / n for t in timeit.repeat(fn, number=n, repeat=repeat))


def overhead(d, n, calls: int = 3000) -> float:
    """The binding's own cost per call: the whole call, timed from Python, less the Rust call
    inside it, timed by the binding itself (agentlog._agentlog._status_timed), less the cost of
    reading the clock; median over `calls` calls."""
    from agentlog._agentlog import _status_timed

    clock = time.perf_counter
    empty = statistics.median(-(clock() - clock()) for _ in range(calls))
    samples = []
    for _ in range(calls):
        started = clock()
        _, inner = _status_timed(d, n)
        samples.append(clock() - started - inner - empty)
    return statistics.median(samples)


def wall(fn, runs: int) -> tuple:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def load_kernel(checkout: Path):
    path = checkout / "src" / "lingtai" / "kernel" / "agent_session.py"
    spec = importlib.util.spec_from_file_location("kernel_agent_session", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def rust_figures(data: Path) -> dict:
    env = dict(os.environ, AGENTLOG_PY_BENCH_DATA=str(data))
    subprocess.run(["cargo", "bench", "-p", "agentlog-python", "--bench", "status", "--",
                    "--warm-up-time", "1", "--measurement-time", "3"],
                   cwd=REPO, env=env, check=True, stdout=sys.stderr)
    figures = {}
    for size in SIZES:
        est = REPO / "target" / "criterion" / "rust_status" / size / "new" / "estimates.json"
        if est.exists():
            figures[size] = json.loads(est.read_text())["median"]["point_estimate"] / 1e9
    return figures


def fmt(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10mb,100mb,1gb")
    ap.add_argument("--data", type=Path, default=REPO / "target" / "py-bench-data")
    ap.add_argument("--kernel-src", type=Path, help="a local checkout of lingtai-kernel")
    ap.add_argument("--rust", action="store_true", help="also run the criterion bench")
    ap.add_argument("--full-scan-runs", type=int, default=3)
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    kernel = load_kernel(args.kernel_src) if args.kernel_src else None
    dirs = {size: log_dir(args.data, size) for size in sizes}
    rust = rust_figures(args.data) if args.rust else {}

    rows = []
    for size in sizes:
        d = dirs[size]
        log = str(d / "logs" / "events.jsonl")
        ours = agentlog.status(d)  # builds the index on first use; every call validates it
        n = ours.molt_count
        want = (ours.api_calls, ours.input_tokens)
        py = per_call(lambda: agentlog.status(d, n))
        own = overhead(d, n)
        t2, r2 = wall(lambda: kernel_tiers.reverse_scan(log), 5)
        assert r2 is None or (r2["api_calls"], r2["input_tokens"]) == want, (size, r2, want)
        t3, r3 = wall(lambda: kernel_tiers.full_scan(log), args.full_scan_runs)
        assert (r3["api_calls"], r3["input_tokens"]) == want, (size, r3, want)
        row = {"size": size, "bytes": os.path.getsize(log), "status": py,
               "port_t2": t2 if r2 is not None else None, "port_t3": t3,
               "rust": rust.get(size), "overhead": own}
        if kernel is not None:
            k2, s2 = wall(lambda: kernel._rebuild_via_reverse_scan(Path(log), n), 5)
            k3, s3 = wall(lambda: kernel._rebuild_via_full_scan(Path(log), n), args.full_scan_runs)
            assert (s3.api_calls, s3.input_tokens) == want
            row.update(kernel_t2=k2 if s2 is not None else None, kernel_t3=k3)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    head = ["log", "agentlog.status()", "kernel tier 2 (port)", "kernel tier 3 (port)"]
    if kernel is not None:
        head += ["kernel tier 2 (its code)", "kernel tier 3 (its code)"]
    head += ["tier 2 / status", "tier 3 / status", "Rust call (criterion)",
             "binding overhead per call"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        t2 = r.get("kernel_t2", r["port_t2"]) if kernel is not None else r["port_t2"]
        t3 = r.get("kernel_t3", r["port_t3"]) if kernel is not None else r["port_t3"]
        cells = [f"{r['size']} ({r['bytes'] / 1e6:,.0f} MB)", fmt(r["status"]), fmt(r["port_t2"]),
                 fmt(r["port_t3"])]
        if kernel is not None:
            cells += [fmt(r.get("kernel_t2")), fmt(r.get("kernel_t3"))]
        cells += [f"{t2 / r['status']:,.0f}x" if t2 else "- (defers to tier 3)",
                  f"{t3 / r['status']:,.0f}x", fmt(r["rust"]), fmt(r["overhead"])]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
