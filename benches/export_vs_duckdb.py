"""Whole-process comparison: `agentlog export` against DuckDB converting the same JSONL log to
Parquet, on one core, with wall time, MB/s of log, rows/s and peak RSS (/usr/bin/time -v).

    cargo build --release --bin agentlog
    AGENTLOG_BENCH_EXPORT_SIZES=100mb,1gb cargo bench --bench export    # generates the logs
    target/ci-venv/bin/python benches/export_vs_duckdb.py target/bench-data/export-100mb/agent

Rows of the table:
- agentlog, first export (JSON text kept / left out), run under `taskset -c 0` (one core);
- agentlog, incremental: the last 1 MB and 10 MB of the log (--appends) appended to an
  exported copy of the rest (MB/s and rows/s of the new bytes; out MB is the whole dataset);
- DuckDB, `SET threads = 1`: `read_json_objects` with the same fields extracted and the text
  kept, and the typed `read_json` reader without the text, each `COPY ... TO` one Parquet file
  with zstd. DuckDB computes no offsets, lines, seqs or generations; agentlog does.
Each figure is the median of --runs runs (default 3); the page cache is warm (one read first).
On a shared machine wall time includes waiting for the core; `cpu s` (user + system, from
/usr/bin/time) and MB per CPU second do not.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

DUCKDB_JSON = """
COPY (
  SELECT 'agent' AS source_id, 'bench' AS host, j->>'type' AS type,
         to_timestamp(TRY_CAST(j->>'ts' AS DOUBLE)) AS ts,
         TRY_CAST(j->>'input_tokens' AS BIGINT) AS input_tokens,
         TRY_CAST(j->>'output_tokens' AS BIGINT) AS output_tokens,
         TRY_CAST(j->>'cached_tokens' AS BIGINT) AS cached_tokens,
         TRY_CAST(j->>'thinking_tokens' AS BIGINT) AS thinking_tokens,
         j::VARCHAR AS json
  FROM read_json_objects('{log}', format = 'newline_delimited') AS t(j)
) TO '{out}' (FORMAT parquet, COMPRESSION zstd)
"""

DUCKDB_TYPED = """
COPY (
  SELECT 'agent' AS source_id, 'bench' AS host, type, to_timestamp(ts) AS ts,
         input_tokens, output_tokens, cached_tokens, thinking_tokens
  FROM read_json('{log}', format = 'newline_delimited', ignore_errors = true,
                 columns = {{type: 'VARCHAR', ts: 'DOUBLE', input_tokens: 'BIGINT',
                            output_tokens: 'BIGINT', cached_tokens: 'BIGINT',
                            thinking_tokens: 'BIGINT'}})
) TO '{out}' (FORMAT parquet, COMPRESSION zstd)
"""

DUCKDB_CHILD = """
import sys, time, duckdb
c = duckdb.connect()
c.execute("SET threads = 1")
start = time.perf_counter()
c.execute(sys.argv[1])
print(time.perf_counter() - start)
"""


def timed(cmd):
    """Runs cmd under /usr/bin/time -v; returns (wall seconds, peak RSS bytes, stdout)."""
    done = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    h, m, s = wall.groups()
    seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) * 1024
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", done.stderr).group(1))
              for kind in ("User", "System"))
    return seconds, rss, done.stdout, cpu


def tree_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("agent_dir")
    parser.add_argument("--agentlog", default="target/release/agentlog")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--appends", default="1000000,10000000",
                        help="bytes appended to an exported copy for the incremental rows")
    args = parser.parse_args()
    log = os.path.join(args.agent_dir, "logs", "events.jsonl")
    size = os.path.getsize(log)
    with open(log, "rb") as f:
        while f.read(1 << 24):
            pass
    work = tempfile.mkdtemp(prefix="agentlog-export-bench-")
    results = []
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []

    def measure(label, prepare, cmd_for, log_bytes, rows_of):
        runs = []
        for _ in range(args.runs):
            out = os.path.join(work, "out")
            shutil.rmtree(out, ignore_errors=True)
            prepare(out)
            seconds, rss, stdout, cpu = timed(cmd_for(out))
            inner = float(stdout.strip().splitlines()[-1]) if label.startswith("duckdb") else None
            runs.append((seconds, rss, tree_bytes(out), inner, stdout, cpu))
        seconds = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        rows = rows_of(runs[-1][4])
        inner = [r[3] for r in runs if r[3] is not None]
        cpu = statistics.median(r[5] for r in runs)
        results.append({
            "cpu_seconds": cpu, "cpu_mb_per_s": log_bytes / cpu / 1e6,
            "what": label, "seconds": seconds, "mb_per_s": log_bytes / seconds / 1e6,
            "rows_per_s": rows / seconds if rows else None, "rows": rows,
            "peak_rss_mb": rss / 1e6, "output_mb": runs[-1][2] / 1e6,
            "in_process_seconds": statistics.median(inner) if inner else None,
        })

    rows_first = {}

    def agentlog_rows(stdout):
        return json.loads(stdout)["rows"]

    for label, extra in [("agentlog first export", []), ("agentlog first export, --no-json-text", ["--no-json-text"])]:
        measure(label, lambda out: None,
                lambda out, extra=extra: [*one_core, args.agentlog, "export", args.agent_dir, "--out", out,
                                          "--host", "bench", "--json", *extra],
                size, agentlog_rows)
        rows_first.setdefault("rows", results[-1]["rows"])

    # Incremental: an exported copy of the log without its last N bytes, then those appended.
    with open(log, "rb") as f:
        data = f.read()
    growing = os.path.join(work, "growing")
    for appended in [int(float(a)) for a in args.appends.split(",")]:
        cut = data.rfind(b"\n", 0, len(data) - appended) + 1

        def prepare_incremental(out, cut=cut):
            shutil.rmtree(growing, ignore_errors=True)
            os.makedirs(os.path.join(growing, "logs"))
            with open(os.path.join(growing, "logs", "events.jsonl"), "wb") as f:
                f.write(data[:cut])
            subprocess.run([args.agentlog, "export", growing, "--out", out, "--host", "bench"], check=True,
                           capture_output=True)
            with open(os.path.join(growing, "logs", "events.jsonl"), "ab") as f:
                f.write(data[cut:])

        measure(f"agentlog incremental, last {(len(data) - cut) / 1e6:.1f} MB new", prepare_incremental,
                lambda out: [*one_core, args.agentlog, "export", growing, "--out", out, "--host", "bench",
                             "--json"],
                len(data) - cut, agentlog_rows)
    del data

    for label, sql in [("duckdb read_json_objects + text, threads=1", DUCKDB_JSON),
                       ("duckdb typed read_json, no text, threads=1", DUCKDB_TYPED)]:
        measure(label, lambda out: os.makedirs(out),
                lambda out, sql=sql: [*one_core, sys.executable, "-c", DUCKDB_CHILD,
                                      sql.format(log=log, out=os.path.join(out, "events.parquet"))],
                size, lambda stdout: rows_first["rows"])

    shutil.rmtree(work, ignore_errors=True)
    print(f"log: {log}, {size:,} bytes, {rows_first['rows']:,} events; median of {args.runs} runs, one core")
    print(f"{'what':48} {'s':>8} {'MB/s':>8} {'rows/s':>11} {'cpu s':>7} {'MB/cpu-s':>9} {'RSS MB':>8} "
          f"{'out MB':>8} {'in-proc s':>9}")
    for r in results:
        rows = f"{r['rows_per_s']:,.0f}" if r["rows_per_s"] else "-"
        inner = f"{r['in_process_seconds']:.2f}" if r["in_process_seconds"] else "-"
        print(f"{r['what']:48} {r['seconds']:8.2f} {r['mb_per_s']:8.1f} {rows:>11} {r['cpu_seconds']:7.2f} "
              f"{r['cpu_mb_per_s']:9.1f} {r['peak_rss_mb']:8.1f} {r['output_mb']:8.1f} {inner:>9}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
