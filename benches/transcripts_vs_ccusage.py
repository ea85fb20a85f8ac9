#!/usr/bin/env python3
"""Whole-process benchmark of agentlog's transcript commands against ccusage.

Generates Claude Code transcripts under target/bench-data/transcripts-<size>mb (once per size),
installs ccusage into target/ccusage (npm install --prefix), points HOME and CLAUDE_CONFIG_DIR
at the generated tree (TZ=UTC, so both tools cut days alike), and times, as whole processes:

  first    the first `agentlog usage --by day --json` (empty cache) vs `ccusage daily --json --offline`
  warm     `agentlog usage --by day --json` after one file grew vs the same ccusage call
  status   `agentlog statusline` vs `ccusage statusline` (its own cache on, and off)
  history  `agentlog transcript FILE --json` warm on a 1 MB transcript vs one holding the whole corpus,
           and the same corpus with one compaction in five kept (about 2 MB of transcript per
           generation, as in the real Claude Code fixtures that compact; the generator compacts
           about five times as often)

and checks that both tools report the same tokens per day. Prints a Markdown table and writes
benches/results/<UTC time>-transcripts-vs-ccusage.csv.

Usage: benches/transcripts_vs_ccusage.py [--size MB] [--smoke] [--runs N]
  --size MB   corpus size (default 200; the issue's target is 1000)
  --smoke     a 5 MB corpus and few runs (CI)
Environment: CCUSAGE_VERSION (default 20.0.24: the newest with a linux-x64 binary published),
AGENTLOG_BIN (default target/release/agentlog, built if missing).
"""

import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def arg(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


SMOKE = "--smoke" in sys.argv
SIZE = float(arg("--size", "5" if SMOKE else "200"))
RUNS = int(arg("--runs", "2" if SMOKE else "5"))
CCUSAGE_VERSION = os.environ.get("CCUSAGE_VERSION", "20.0.24")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def setup():
    agentlog = os.environ.get("AGENTLOG_BIN", os.path.join(ROOT, "target/release/agentlog"))
    if not os.path.exists(agentlog):
        sh(["cargo", "build", "--release", "--bin", "agentlog"], cwd=ROOT)
    prefix = os.path.join(ROOT, "target/ccusage")
    native = os.path.join(prefix, "node_modules/@ccusage/ccusage-linux-x64/bin/ccusage")
    if not os.path.exists(native):
        os.makedirs(prefix, exist_ok=True)
        sh(["npm", "install", "--silent", "--prefix", prefix, f"ccusage@{CCUSAGE_VERSION}"])
    # The npm wrapper execs this native binary; timing the binary leaves node's start out.
    # npm can unpack it without its execute bit (the wrapper sets it on first run).
    if os.path.exists(native) and not os.access(native, os.X_OK):
        os.chmod(native, os.stat(native).st_mode | 0o111)
    ccusage = native if os.path.exists(native) else os.path.join(prefix, "node_modules/.bin/ccusage")
    data = os.path.join(ROOT, f"target/bench-data/transcripts-{SIZE:g}mb")
    info_path = os.path.join(data, "info.json")
    if not os.path.exists(info_path):
        shutil.rmtree(data, ignore_errors=True)
        out = sh([sys.executable, os.path.join(ROOT, "benches/gen_claude_transcripts.py"), data,
                  str(SIZE)], capture_output=True, text=True).stdout
        with open(info_path, "w") as f:
            f.write(out)
    with open(info_path) as f:
        info = json.load(f)
    return agentlog, ccusage, data, info


def env_for(data):
    home = os.path.join(data, "home")
    env = dict(os.environ)
    env.update({
        "HOME": home,
        "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        "AGENTLOG_CACHE_DIR": os.path.join(data, "cache"),
        "TZ": "UTC",
        "NO_COLOR": "1",
    })
    for k in ["XDG_CACHE_HOME", "XDG_CONFIG_HOME", "CODEX_HOME"]:
        env.pop(k, None)
    return env


def timed(cmd, env, stdin=None):
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, input=stdin, capture_output=True)
    took = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    return took, p.stdout


ALL = []  # (command, every time) for the raw data


def median_of(n, cmd, env, stdin=None, before=None):
    times = []
    out = b""
    for _ in range(n):
        if before:
            before()
        t, out = timed(cmd, env, stdin)
        times.append(t)
    ALL.append((" ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd)), times))
    return statistics.median(times), out


def files_of(data):
    projects = os.path.join(data, "home/.claude/projects")
    out = []
    for d, _, names in os.walk(projects):
        out += [os.path.join(d, n) for n in names if n.endswith(".jsonl")]
    return sorted(out)


def grow(path, n=[0]):
    """Appends one new turn to a session file: a user line and an assistant line (a new
    message id), shaped like the file's own lines."""
    n[0] += 1
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 65536))
        last = [l for l in f.read().split(b"\n") if b'"type":"assistant"' in l][-1]
    asst = json.loads(last)
    ts = asst["timestamp"]
    user = {k: asst[k] for k in ["parentUuid", "isSidechain", "userType", "cwd", "sessionId",
                                  "version", "gitBranch"]}
    # Ids new to every file, in this run and any earlier one on the same home.
    tag = f"{os.getpid()}-{n[0]}"
    user.update({"type": "user", "uuid": f"grow-u-{tag}", "timestamp": ts,
                 "message": {"role": "user", "content": "more"}})
    asst.update({"uuid": f"grow-a-{tag}", "parentUuid": f"grow-u-{tag}",
                 "requestId": f"req_grow_{tag}"})
    asst["message"]["id"] = f"msg_grow_{tag}"
    with open(path, "a") as f:
        f.write(json.dumps(user, separators=(",", ":")) + "\n"
                + json.dumps(asst, separators=(",", ":")) + "\n")


def keep_one_compaction_in_five(src_path, out_path):
    """Copies a Claude Code transcript without four compactions in five (each a boundary line
    and the compact-summary line after it)."""
    n, drop_summary = 0, False
    with open(src_path, "rb") as src, open(out_path, "wb") as out:
        for line in src:
            if drop_summary:
                drop_summary = False
                if b'"isCompactSummary":true' in line:
                    continue
            if b'"subtype":"compact_boundary"' in line:
                n += 1
                if n % 5:
                    drop_summary = True
                    continue
            out.write(line)


def per_day_agentlog(out):
    doc = json.loads(out)
    return {r["day"]: r["total_tokens"] for r in doc["rows"]}, doc


def per_day_ccusage(out):
    doc = json.loads(out)
    rows = doc.get("daily") or doc.get("data") or []
    days = {}
    for r in rows:
        day = r.get("date") or r.get("period")
        total = r.get("totalTokens")
        if total is None:
            total = sum(r.get(k, 0) for k in ["inputTokens", "outputTokens",
                                             "cacheCreationTokens", "cacheReadTokens"])
        days[day] = days.get(day, 0) + total
    return days


def main():
    agentlog, ccusage, data, info = setup()
    env = env_for(data)
    cache = env["AGENTLOG_CACHE_DIR"]
    rows = []

    def row(what, ours, theirs, target):
        ratio = theirs / ours if ours and theirs else None
        rows.append({"what": what, "agentlog_s": ours, "ccusage_s": theirs,
                     "ratio": ratio, "target": target})

    usage = [agentlog, "usage", "--by", "day", "--json"]
    daily = [ccusage, "daily", "--json", "--offline"]
    first, out = median_of(max(1, RUNS // 2), usage, env,
                           before=lambda: shutil.rmtree(cache, ignore_errors=True))
    ours_days, doc = per_day_agentlog(out)
    cc_first, cc_out = median_of(max(1, RUNS // 2), daily, env)
    theirs_days = per_day_ccusage(cc_out)
    row("first run: usage --by day --json vs daily --json --offline", first, cc_first,
        "no slower")
    files = files_of(data)
    grown = files[len(files) // 2]
    warm, out = median_of(RUNS, usage, env, before=lambda: grow(grown))
    assert json.loads(out)["index_outcomes"].get("caught_up") == 1, out[:500]
    cc_warm, cc_out = median_of(max(1, RUNS // 2), daily, env)
    row("warm usage after one file grew", warm, cc_warm, ">= 100x")
    ours_days, doc = per_day_agentlog(out)
    theirs_days = per_day_ccusage(cc_out)
    mismatched = {d: (ours_days.get(d), theirs_days.get(d))
                  for d in set(ours_days) | set(theirs_days)
                  if ours_days.get(d) != theirs_days.get(d)}

    session = max(files, key=os.path.getsize)
    stdin = json.dumps({"session_id": os.path.basename(session)[:-6],
                        "transcript_path": session, "cwd": "/home/user",
                        "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
                        "workspace": {"current_dir": "/home/user"}, "version": "2.1.39"}).encode()
    timed([agentlog, "statusline"], env, stdin)
    status, _ = median_of(RUNS * 4, [agentlog, "statusline"], env, stdin)
    timed([ccusage, "statusline", "--offline"], env, stdin)
    cc_status, _ = median_of(RUNS, [ccusage, "statusline", "--offline"], env, stdin)
    cc_status_nc, _ = median_of(max(1, RUNS // 2), [ccusage, "statusline", "--offline",
                                                     "--no-cache"], env, stdin)
    row("statusline warm (ccusage with its cache)", status, cc_status, "< 5 ms")
    row("statusline warm (ccusage --no-cache)", status, cc_status_nc, "< 5 ms")

    # One transcript of ~1 MB and one holding the whole corpus, outside the projects tree.
    hist = os.path.join(data, "history")
    os.makedirs(hist, exist_ok=True)
    small, big = os.path.join(hist, "small.jsonl"), os.path.join(hist, "all.jsonl")
    if not os.path.exists(big):
        with open(big, "wb") as b, open(small, "wb") as s:
            for f in files:
                with open(f, "rb") as src:
                    chunk = src.read()
                b.write(chunk)
                if s.tell() < 1_000_000:
                    s.write(chunk[: 1_000_000 - s.tell()].rsplit(b"\n", 1)[0] + b"\n")
    sparse = os.path.join(hist, "sparse.jsonl")
    if not os.path.exists(sparse):
        keep_one_compaction_in_five(big, sparse)
    for name, path in [("1 MB", small), (f"{os.path.getsize(big) / 1e6:.0f} MB", big),
                       (f"{os.path.getsize(sparse) / 1e6:.0f} MB, one compaction in five", sparse)]:
        _, out = timed([agentlog, "transcript", path, "--json"], env)
        t, _ = median_of(RUNS * 4, [agentlog, "transcript", path, "--json"], env)
        n = len(json.loads(out)["boundaries"])
        row(f"transcript --json warm, {name} of history ({n} compactions)", t, None,
            "< 5 ms, flat")
    floor, _ = median_of(RUNS * 4, ["/bin/true"], env)
    row("process floor (/bin/true from this script)", floor, None, "")

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True).stdout.strip()
    results = os.path.join(ROOT, "benches/results")
    name = os.path.join(results, f"{stamp}-{rev}-transcripts-vs-ccusage{'-smoke' if SMOKE else ''}.csv")
    with open(name, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["what", "agentlog_s", "ccusage_s", "ratio", "target",
                                          "corpus_mb", "files", "lines"])
        w.writeheader()
        for r in rows:
            w.writerow({**r, "corpus_mb": round(info["bytes"] / 1e6, 1), "files": info["files"],
                        "lines": info["lines"]})
    print(f"corpus: {info['files']} files, {info['bytes'] / 1e6:.1f} MB, {info['lines']} lines; "
          f"ccusage {CCUSAGE_VERSION}; {doc['cross_file_duplicates']} messages in several files")
    print("| what | agentlog | ccusage | ratio | target |")
    print("|---|---|---|---|---|")
    for r in rows:
        fmt = lambda s: "" if s is None else (f"{s * 1e3:.1f} ms" if s < 10 else f"{s:.1f} s")
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        print(f"| {r['what']} | {fmt(r['agentlog_s'])} | {fmt(r['ccusage_s'])} | {ratio} | {r['target']} |")
    if mismatched:
        print(f"days where the tools disagree (agentlog, ccusage): {dict(sorted(mismatched.items())[:10])}")
    else:
        print(f"both tools report the same total tokens on all {len(ours_days)} days")
    with open(name[:-4] + "-times.json", "w") as f:
        json.dump([{"command": c, "seconds": t} for c, t in ALL], f, indent=0)
    print(f"raw: {os.path.relpath(name, ROOT)} (every time: -times.json beside it)")


if __name__ == "__main__":
    main()
