"""agentlog.status() from Python against the lingtai kernel's Python tiers, and the binding's
per-call overhead against the same Rust call.

Run from the repository root, with the package installed in the active venv:

    python crates/agentlog-python/bench/bench_status.py --sizes 10mb,100mb,1gb --rust

For each size a synthetic lingtai-shaped log is generated once (cached under --data), its index
built, and then, page cache warm, in process:
- the binding's figures, the sizes interleaved: --rounds rounds, each measuring every size (in
  turn forwards and backwards) three ways, taking turns in blocks of 50 calls: `agentlog.status(
  agent_dir, molt_count)` timed call by call from Python; the same Rust call in a loop that
  never returns to Python (`_status_loop`); and each call timed from Python less the Rust call
  inside it, which the binding times itself (`_status_timed`), so the two figures come from one
  call: the binding's own cost. `status()` less the loop's call is the all-in figure: the
  binding's cost plus the Rust call running colder after Python's work. Each figure is the
  median over rounds of each round's median; every round's figures go to stderr. Interleaving
  matters: on a shared machine the per-call figures move with the load by 2-5x within a
  minute, and a size measured alone in a slow minute looks slower;
- the kernel's reverse scan (tier 2) and full scan (tier 3): our faithful port (kernel_tiers.py),
  and with --kernel-src CHECKOUT the kernel's own agent_session.py from a local checkout of
  Lingtai-AI/lingtai-kernel, loaded by path (not part of this repository);
- with --rust, criterion's figure for the same call in Rust (benches/status.rs), in another
  process: a cross-check, not used for the binding's cost.
Every answer is checked against agentlog's before it is timed. Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time
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


def binding_figures(dirs: dict, counts: dict, rounds: int, calls: int, block: int = 50) -> dict:
    """Per size: `status` (seconds per call of status() from Python), `rust` (the Rust call in
    a loop in this process), `inner` (the same Rust call timed inside a Python call), `cost`
    (the binding's own cost per call: the whole call less `inner`), and `all_in` (`status` less
    `rust`: the binding's cost plus the Rust call running colder between Python calls), and
    `switches` (the round's involuntary context switches: how shared the core was). Each is
    the median over rounds of the round's median; within a round the ways take turns in blocks
    of `block` calls, so they share the machine's state. `rounds` holds every round's figures."""
    from agentlog._agentlog import _status_loop, _status_timed

    clock = time.perf_counter
    med = statistics.median

    def python(d, n, empty, out):
        status = agentlog.status
        for _ in range(block):
            started = clock()
            status(d, n)
            out["status"].append(clock() - started - empty)

    def paired(d, n, empty, out):
        for _ in range(block):
            started = clock()
            _, inner = _status_timed(d, n)
            out["cost"].append(clock() - started - inner - empty)
            out["inner"].append(inner)

    def rust(d, n, empty, out):
        out["rust"].extend(_status_loop(d, n, block))

    ways = [python, paired, rust]
    names = ["status", "cost", "inner", "rust", "all_in", "switches"]
    per = {size: {name: [] for name in names} for size in dirs}
    sizes = list(dirs)
    for r in range(rounds):
        for size in sizes if r % 2 == 0 else sizes[::-1]:
            d, n = dirs[size], counts[size]
            # Reading the clock twice, subtracted from every sample.
            empty = med(-(clock() - clock()) for _ in range(1000))
            out = {name: [] for name in names}
            switched = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
            for b in range(max(1, calls // block)):
                for way in ways[b % 3:] + ways[:b % 3]:
                    way(d, n, empty, out)
            got = {name: med(v) for name, v in out.items() if v}
            got["all_in"] = got["status"] - got["rust"]
            # Times another process took the core from this one.
            got["switches"] = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw - switched
            for name in names:
                per[size][name].append(got[name])
    return {size: {**{name: med(v) for name, v in per[size].items()}, "rounds": per[size]}
            for size in sizes}


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


def fmt(seconds, digits: int = 1) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.{digits}f} µs"


def spearman(a: list, b: list) -> float:
    """Rank correlation (no ties expected among float timings)."""
    def ranks(x):
        order = sorted(range(len(x)), key=x.__getitem__)
        r = [0.0] * len(x)
        for k, i in enumerate(order):
            r[i] = float(k)
        return r
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else 0.0


def spread(load: list, binding: dict) -> str:
    """The footnote: the load; per size, the binding's cost in its fastest and slowest round;
    and how closely, over every round of every size, the binding's cost follows the speed of
    the whole call (the machine's state at that moment)."""
    cost = [c for b in binding.values() for c in b["rounds"]["cost"]]
    whole = [t for b in binding.values() for t in b["rounds"]["status"]]
    return (f"\nload average (1 min) before and after the binding's rounds: {load[0]:.2f}, "
            f"{load[1]:.2f}; the binding's cost in the fastest and the slowest round: "
            + "; ".join(f"{size} {min(b['rounds']['cost']) * 1e6:.2f}-"
                        f"{max(b['rounds']['cost']) * 1e6:.2f} µs" for size, b in binding.items())
            + f"; rank correlation of the round's binding cost with its status() time, "
            f"{len(cost)} rounds: {spearman(cost, whole):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10mb,100mb,1gb")
    ap.add_argument("--data", type=Path, default=REPO / "target" / "py-bench-data")
    ap.add_argument("--kernel-src", type=Path, help="a local checkout of lingtai-kernel")
    ap.add_argument("--rust", action="store_true", help="also run the criterion bench")
    ap.add_argument("--full-scan-runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=15, help="rounds of the binding's figures")
    ap.add_argument("--calls", type=int, default=1000, help="calls per size, way and round")
    ap.add_argument("--binding-only", action="store_true",
                    help="the binding's figures alone, without the kernel's tiers")
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    kernel = load_kernel(args.kernel_src) if args.kernel_src else None
    dirs = {size: log_dir(args.data, size) for size in sizes}
    rust = rust_figures(args.data) if args.rust else {}

    counts = {}
    for size in sizes:
        # Builds the index on first use; every later call validates it.
        counts[size] = agentlog.status(dirs[size]).molt_count
    load = [os.getloadavg()[0]]
    binding = binding_figures(dirs, counts, args.rounds, args.calls)
    load.append(os.getloadavg()[0])
    print(json.dumps({"load_1min": load, "binding": binding}), file=sys.stderr)

    if args.binding_only:
        print("| log | agentlog.status() | the Rust call, same process | binding's cost per call "
              "| all in: status() less the Rust call |\n|---|---|---|---|---|")
        for size, b in binding.items():
            print(f"| {size} | {fmt(b['status'])} | {fmt(b['rust'])} | {fmt(b['cost'], 2)} | "
                  f"{fmt(b['all_in'], 2)} |")
        print(spread(load, binding))
        return

    rows = []
    for size in sizes:
        d, n = dirs[size], counts[size]
        log = str(d / "logs" / "events.jsonl")
        ours = agentlog.status(d, n)
        want = (ours.api_calls, ours.input_tokens)
        t2, r2 = wall(lambda: kernel_tiers.reverse_scan(log), 5)
        assert r2 is None or (r2["api_calls"], r2["input_tokens"]) == want, (size, r2, want)
        t3, r3 = wall(lambda: kernel_tiers.full_scan(log), args.full_scan_runs)
        assert (r3["api_calls"], r3["input_tokens"]) == want, (size, r3, want)
        b = binding[size]
        row = {"size": size, "bytes": os.path.getsize(log), "status": b["status"],
               "rust_in_process": b["rust"], "overhead": b["cost"], "all_in": b["all_in"],
               "port_t2": t2 if r2 is not None else None, "port_t3": t3,
               "rust_criterion": rust.get(size)}
        if kernel is not None:
            k2, s2 = wall(lambda: kernel._rebuild_via_reverse_scan(Path(log), n), 5)
            k3, s3 = wall(lambda: kernel._rebuild_via_full_scan(Path(log), n), args.full_scan_runs)
            assert (s3.api_calls, s3.input_tokens) == want
            row.update(kernel_t2=k2 if s2 is not None else None, kernel_t3=k3)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    head = ["log", "agentlog.status()", "the Rust call, same process",
            "binding's cost per call", "all in: status() less the Rust call",
            "kernel tier 2 (port)", "kernel tier 3 (port)"]
    if kernel is not None:
        head += ["kernel tier 2 (its code)", "kernel tier 3 (its code)"]
    head += ["tier 2 / status", "tier 3 / status"]
    if rust:
        head += ["Rust call (criterion, another process)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        t2 = r.get("kernel_t2", r["port_t2"]) if kernel is not None else r["port_t2"]
        t3 = r.get("kernel_t3", r["port_t3"]) if kernel is not None else r["port_t3"]
        cells = [f"{r['size']} ({r['bytes'] / 1e6:,.0f} MB)", fmt(r["status"]),
                 fmt(r["rust_in_process"]), fmt(r["overhead"], 2), fmt(r["all_in"], 2),
                 fmt(r["port_t2"]), fmt(r["port_t3"])]
        if kernel is not None:
            cells += [fmt(r.get("kernel_t2")), fmt(r.get("kernel_t3"))]
        cells += [f"{t2 / r['status']:,.0f}x" if t2 else "- (defers to tier 3)",
                  f"{t3 / r['status']:,.0f}x"]
        if rust:
            cells += [fmt(r["rust_criterion"])]
        print("| " + " | ".join(cells) + " |")
    print(spread(load, binding))


if __name__ == "__main__":
    main()
