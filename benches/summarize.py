#!/usr/bin/env python3
"""Turns the headline benchmark's output into the agent-log figures of docs/PERFORMANCE.md.

Reads criterion's estimates (target/criterion/**/new/) and the figures criterion cannot
measure (target/bench-data/report.json), prints Markdown. Usage:

    python3 benches/summarize.py [--criterion DIR] [--report FILE] [--sizes 1mb,100mb,1gb]
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_criterion(base):
    out = {}
    for dirpath, _dirs, files in os.walk(base):
        if os.path.basename(dirpath) != "new" or "benchmark.json" not in files:
            continue
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            bench = json.load(f)
        with open(os.path.join(dirpath, "estimates.json")) as f:
            est = json.load(f)
        typical = est.get("slope") or est["mean"]
        out[bench["full_id"]] = {
            "ns": typical["point_estimate"],
            "lo": typical["confidence_interval"]["lower_bound"],
            "hi": typical["confidence_interval"]["upper_bound"],
            "throughput": bench.get("throughput"),
        }
    return out


def fmt_time(ns):
    if ns is None:
        return "n/a"
    if ns < 1e3:
        return f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def fmt_rate(x, unit):
    if x is None:
        return "n/a"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M{unit}"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k{unit}"
    return f"{x:.1f} {unit}"


def fmt_ratio(x):
    if x is None:
        return "n/a"
    if x >= 100:
        return f"{x:,.0f}x"
    return f"{x:.1f}x"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--criterion", default=os.path.join(ROOT, "target/criterion"))
    ap.add_argument("--report", default=os.path.join(ROOT, "target/bench-data/report.json"))
    ap.add_argument("--sizes", default=None)
    args = ap.parse_args()
    c = load_criterion(args.criterion)
    with open(args.report) as f:
        rep = json.load(f)
    sizes = (args.sizes or ",".join(rep.get("machine", {}).get("sizes", ["1mb"]))).split(",")

    def t(key):
        v = c.get(key)
        return v["ns"] if v else None

    def disk(size, k):
        return rep.get(f"disk/{size}", {}).get(k)

    def ratio(a, b):
        return a / b if a and b else None

    hdr = "| figure | " + " | ".join(sizes) + " |"
    sep = "|---|" + "---|" * len(sizes)

    def row(label, fn):
        cells = []
        for s in sizes:
            try:
                cells.append(fn(s))
            except (TypeError, KeyError, ZeroDivisionError):
                cells.append("n/a")
        print(f"| {label} | " + " | ".join(cells) + " |")

    m = rep.get("machine", {})
    print(f"Machine: {m.get('nproc')} CPUs, {m.get('cpu')}, {m.get('rustc')}, git {m.get('git')}, run {m.get('date')}\n")
    print("Log sizes: " + ", ".join(
        f"{s} = {disk(s, 'log_bytes') or 0:,} bytes / {disk(s, 'lines') or 0:,} lines" for s in sizes) + "\n")

    sm = lambda s, k: t(f"since_molt/{s}/{k}")
    print("### Since-molt answer\n")
    print(hdr)
    print(sep)
    items = [
        ("(a) in-process, open `Index` handle: `from_state(index.state())`", "a_index_state"),
        ("(a) in-process, live `Writer`: `from_state(writer.state())`", "a_writer_state"),
        ("(b) open + validate + answer: `current_generation_at` (index tier)", "b_open_validate_answer"),
        ("(c) whole process: `agentlog status DIR --json`", "c_process_status_cli"),
        ("(d) ours, reverse-scan tier (8 MiB tail)", "d_reverse_scan_tier"),
        ("(d) ours, full-scan tier", "d_full_scan_tier"),
        ("(e) reference reverse scan (plain, 8 MiB tail)", "e_ref_reverse_scan"),
        ("(e) reference full scan (plain)", "e_ref_full_scan"),
        ("(f) sidecar Q1+Q2, new connection per query (as the kernel)", "f_sidecar_pair_fresh_connections"),
        ("(f) sidecar Q1+Q2 on an open connection", "f_sidecar_pair_open_connection"),
    ]
    for label, k in items:
        row(label, lambda s, k=k: fmt_time(sm(s, k)))
    row("ratio: sidecar pair (new conns) / (b)", lambda s: fmt_ratio(ratio(sm(s, "f_sidecar_pair_fresh_connections"), sm(s, "b_open_validate_answer"))))
    row("ratio: sidecar pair (open conn) / (a)", lambda s: fmt_ratio(ratio(sm(s, "f_sidecar_pair_open_connection"), sm(s, "a_index_state"))))
    row("ratio: reference full scan / (b)", lambda s: fmt_ratio(ratio(sm(s, "e_ref_full_scan"), sm(s, "b_open_validate_answer"))))
    row("ratio: reference reverse scan / (b)", lambda s: fmt_ratio(ratio(sm(s, "e_ref_reverse_scan"), sm(s, "b_open_validate_answer"))))
    print()

    def mbps(s, key):
        ns = t(key)
        return disk(s, "log_bytes") / (ns / 1e9) / 1e6 if ns else None

    print("### Build, scans and the hardware (MB = 10^6 bytes; page cache warm)\n")
    print(hdr)
    print(sep)
    b = lambda s: t(f"build/{s}/ours_from_scratch")
    row("ours: index from scratch (`Index::open`, no index)", lambda s: f"{fmt_time(b(s))} = {mbps(s, f'build/{s}/ours_from_scratch'):.0f} MB/s, {fmt_rate(disk(s, 'lines') / (b(s) / 1e9), 'ev/s')}")

    def sidecar_rebuild_ns(s):
        v = t(f"build/{s}/sidecar_offline_rebuild")
        if v is None:
            one = rep.get(f"oneshot/{s}/sidecar_offline_rebuild_secs")
            v = one * 1e9 if one else None
        return v

    row("sidecar: offline rebuild, one transaction", lambda s: f"{fmt_time(sidecar_rebuild_ns(s))} = {disk(s, 'log_bytes') / sidecar_rebuild_ns(s) * 1e3:.1f} MB/s" + (" (1 run)" if t(f'build/{s}/sidecar_offline_rebuild') is None else ""))
    row("sidecar: offline rebuild, insert+commit phase only", lambda s: (lambda p: f"{p['import_secs']:.2f} s = {disk(s, 'log_bytes') / p['import_secs'] / 1e6:.1f} MB/s")(rep[f"build/{s}/sidecar_offline_rebuild_phases"]))
    rt = lambda s: t(f"build/{s}/sidecar_runtime_import_per_event")
    row("sidecar: runtime import, per event into this sidecar", lambda s: f"{fmt_time(rt(s))}/event")
    row("sidecar: runtime import of the whole log (extrapolated)", lambda s: f"≈ {fmt_time(rt(s) * disk(s, 'lines'))}")
    row("ratio: offline rebuild / ours", lambda s: fmt_ratio(ratio(sidecar_rebuild_ns(s), b(s))))
    row("ratio: offline insert+commit phase / ours", lambda s: fmt_ratio(ratio(rep[f"build/{s}/sidecar_offline_rebuild_phases"]["import_secs"] * 1e9, b(s))))
    row("ratio: runtime import (extrapolated) / ours", lambda s: fmt_ratio(ratio(rt(s) * disk(s, "lines"), b(s))))
    row("ours: full-scan tier (no index writes)", lambda s: f"{mbps(s, f'since_molt/{s}/d_full_scan_tier'):.0f} MB/s")
    row("reference full scan (plain)", lambda s: f"{mbps(s, f'since_molt/{s}/e_ref_full_scan'):.0f} MB/s")
    row("hardware: read to /dev/null", lambda s: f"{mbps(s, f'hardware/{s}/read_to_devnull'):.0f} MB/s")
    row("hardware: memchr newline count", lambda s: f"{mbps(s, f'hardware/{s}/memchr_newline_count'):.0f} MB/s")
    row("build as a fraction of the memchr count", lambda s: f"{100 * ratio(t(f'hardware/{s}/memchr_newline_count'), b(s)):.1f}%")
    print()

    print("### Catch-up on open (N lines appended by another program)\n")
    print(hdr)
    print(sep)
    for n in [0, 1, 100, 10000]:
        key = lambda s, n=n: t(f"catch_up/{s}/open_after_append/{n}")
        if n == 0:
            row("N = 0 (fresh: validate only)", lambda s: fmt_time(key(s)))
        else:
            row(f"N = {n:,}: open, and per event", lambda s, n=n, key=key: f"{fmt_time(key(s))}, {fmt_time(key(s) / n)}/ev")
    row("marginal cost per event, (t(10k) - t(1)) / 9,999", lambda s: f"{fmt_time((t(f'catch_up/{s}/open_after_append/10000') - t(f'catch_up/{s}/open_after_append/1')) / 9999)}/ev")
    for n in [1, 100]:
        key = lambda s, n=n: t(f"catch_up/{s}/folded_in_memory/{n}")
        row(f"N = {n:,} folded in memory by a reader (default `max_memory_tail`, nothing written)", lambda s, key=key: fmt_time(key(s)))
    print()

    print("### Open + validate\n")
    print(hdr)
    print(sep)
    row("after a clean close (`Index::open`, fresh)", lambda s: fmt_time(t(f"open/{s}/clean")))
    row("after SIGKILL of a writer (10 uncommitted events caught up)", lambda s: fmt_time(t(f"open/{s}/after_sigkill")))
    row("  redb repairs needed / kills", lambda s: f"{rep[f'open/{s}/after_sigkill']['redb_repaired']} / {rep[f'open/{s}/after_sigkill']['kills']}")
    print()

    print("### Memory and disk\n")
    print(hdr)
    print(sep)
    mem = lambda s: rep[f"memory/{s}/build"]
    row("peak RSS of a full build (VmHWM, child process)", lambda s: f"{mem(s)['vmhwm_kib'] / 1024:.1f} MiB")
    row("  of which above process start-up", lambda s: f"{(mem(s)['vmhwm_kib'] - mem(s)['startup_vmhwm_kib']) / 1024:.1f} MiB")
    jobs = [
        ("ours_answer", "ours: open + validate + answer (index tier)"),
        ("ours_reverse_scan", "ours: reverse-scan tier"),
        ("ours_full_scan", "ours: full-scan tier"),
        ("sidecar_pair", "sidecar: the query pair, new connections"),
        ("sidecar_rebuild", "sidecar: offline rebuild"),
        ("ref_reverse_scan", "reference reverse scan (plain, 8 MiB tail)"),
        ("ref_full_scan", "reference full scan (plain)"),
    ]
    for job, label in jobs:
        def peak(s, job=job):
            m = rep.get(f"memory/{s}/{job}")
            if not m:
                return "n/a"
            above = (m["vmhwm_kib"] - m["startup_vmhwm_kib"]) / 1024
            return f"{m['vmhwm_kib'] / 1024:.1f} MiB ({above:.1f} above start-up)"
        row(f"peak RSS, {label}", peak)
    row("index size / log size", lambda s: f"{disk(s, 'index_bytes') / 1e6:.1f} MB = {100 * disk(s, 'index_over_log'):.1f}%")
    row("sidecar size / log size", lambda s: f"{disk(s, 'sidecar_bytes') / 1e6:.1f} MB = {100 * disk(s, 'sidecar_over_log'):.1f}%")
    print()

    print("### Append (size-independent; events/s)\n")
    print("| path | batch 1 | batch 100 |")
    print("|---|---|---|")
    for name, label in [("none", "ours, flush only (`SyncPolicy::None`)"), ("interval_50ms", "ours, group commit (`Interval(50ms)`)"), ("fsync", "ours, fsync per call (`Fsync`)")]:
        cells = []
        for batch in [1, 100]:
            ns = t(f"append/ours_{name}/{batch}")
            cells.append(fmt_rate(batch / (ns / 1e9), "ev/s") + f" ({fmt_time(ns / batch)}/ev)" if ns else "n/a")
        print(f"| {label} | " + " | ".join(cells) + " |")
    for key, label in [("peer_jsonl_write_flush", "kernel JSONL appender: write + flush"), ("peer_sidecar_runtime_log_event", "kernel sidecar runtime insert (conn + schema + commit per event)"), ("peer_sidecar_kept_open_insert_commit", "sidecar insert + commit on a kept-open connection")]:
        ns = t(f"append/{key}")
        print(f"| {label} | {fmt_rate(1 / (ns / 1e9), 'ev/s') + f' ({fmt_time(ns)}/ev)' if ns else 'n/a'} | – |")
    print()

    # Targets.
    print("### Issue targets\n")
    print("| target | measured | met? |")
    print("|---|---|---|")
    a = [sm(s, "a_index_state") for s in sizes]
    aw = [sm(s, "a_writer_state") for s in sizes]
    if all(a):
        ok = max(a + aw) < 1000 and max(a) / min(a) <= 2
        print(f"| since-molt in-process < 1 µs, flat across sizes (max/min ≤ 2) | {', '.join(fmt_time(x) for x in a)} (index); {', '.join(fmt_time(x) for x in aw if x)} (writer); max/min {max(a) / min(a):.2f} | {'met' if ok else 'MISSED'} |")
    small, big = sizes[0], sizes[-1]
    c_small, c_big = sm(small, "c_process_status_cli"), sm(big, "c_process_status_cli")
    if c_small and c_big:
        r = c_big / c_small
        print(f"| whole-process status at {big} within 2x of {small} | {fmt_time(c_big)} vs {fmt_time(c_small)} = {r:.2f}x | {'met' if r <= 2 else 'MISSED'} |")
    for s in sizes:
        if not b(s):
            continue
        mb = mbps(s, f"build/{s}/ours_from_scratch")
        print(f"| build ≥ 250 MB/s on one core ({s}) | {mb:.0f} MB/s | {'met' if mb >= 250 else 'MISSED'} |")
        rr = ratio(sidecar_rebuild_ns(s), b(s))
        ri = ratio(rep[f"build/{s}/sidecar_offline_rebuild_phases"]["import_secs"] * 1e9, b(s))
        if rr:
            print(f"| build ≥ 10x the batched sidecar import ({s}) | {fmt_ratio(rr)} (whole rebuild); {fmt_ratio(ri)} (insert+commit phase only) | {'met' if min(rr, ri) >= 10 else ('met for the whole rebuild only' if rr >= 10 else 'MISSED')} |")
        frac = ratio(t(f"hardware/{s}/memchr_newline_count"), b(s))
        print(f"| build ≥ 25% of the memchr newline count ({s}) | {100 * frac:.1f}% | {'met' if frac >= 0.25 else 'MISSED'} |")
    for batch in [1, 100]:
        ns = t(f"append/ours_none/{batch}")
        if ns:
            eps = batch / (ns / 1e9)
            print(f"| append flush-only ≥ 500k events/s (batch {batch}) | {fmt_rate(eps, 'ev/s')} | {'met' if eps >= 5e5 else 'MISSED'} |")
    pf, po = sm(big, "f_sidecar_pair_fresh_connections"), sm(big, "f_sidecar_pair_open_connection")
    if pf and po:
        r1 = po / sm(big, "a_index_state")
        r2 = pf / sm(big, "b_open_validate_answer")
        r3 = pf / sm(big, "a_index_state")
        print(f"| since-molt ≥ 1000x faster than the sidecar pair at {big} | in-process (a) vs pair on open conn: {fmt_ratio(r1)}; (a) vs pair as the kernel runs it: {fmt_ratio(r3)}; open+validate+answer (b) vs pair as the kernel runs it: {fmt_ratio(r2)} | {'met' if min(r1, r3) >= 1000 else 'MISSED'} for (a); {'met' if r2 >= 1000 else 'MISSED'} for (b) |")
    failed = [k for k, v in rep.items() if k.startswith("checks/") and not v.get("ok")]
    print(f"\nCorrectness checks (our tiers agree with the generator's totals; each peer answers as the reference specifies): {'all passed' if not failed else 'FAILED: ' + ', '.join(failed)}")
    wrong = [(k, v["detail"]) for k, v in rep.items()
             if k.startswith("checks/") and v.get("ok") and v.get("detail", {}).get("differs_from_truth")]
    for k, d in wrong:
        print(f"- {k[len('checks/'):]}: {d.get('by_wall_clock_api_calls')} calls since the molt, the truth is "
              f"{d.get('truth_api_calls')}: the reference's `ts >= boundary_ts` counts a response logged "
              "in the molt's millisecond, before it")


if __name__ == "__main__":
    sys.exit(main())
