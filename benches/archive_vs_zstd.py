#!/usr/bin/env python3
"""Whole-process figures of `agentlog archive` on one home directory made by gen_agent_home.py,
beside `zstd -3` on the same files:

  first     `agentlog archive --quiet` into a fresh data directory, pinned to one core
            (taskset -c 0): MB/s of transcript bytes, wall and CPU; then the archive's size
  nothing   a second run with nothing new (one stat a file)
  zstd      `zstd -3` of every file on its own, and of all files as one stream (cat | zstd -3),
            one thread: compressed bytes and MB/s
  restore   `agentlog archive --restore SESSION --to DIR` of every archived session, one process
            each (process start-up counted): bytes written / wall; and the largest session alone

Usage: benches/archive_vs_zstd.py DATA_DIR [--runs N] [--label L]
Writes benches/results/<UTC time>-<rev>-archive-vs-zstd-<label>.json and prints a table.
Environment: AGENTLOG_BIN (default target/release/agentlog).
"""

import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from time import perf_counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from usage_vs_ccusage import OVERRIDES, arg, spawn  # noqa: E402


def files_of(home):
    out = []
    for d, _, names in os.walk(home):
        out += [os.path.join(d, n) for n in names if n.endswith((".jsonl", ".json"))]
    return sorted(out)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(path) for n in ns)


def main():
    data = os.path.abspath(sys.argv[1])
    runs = int(arg("--runs", "3"))
    label = arg("--label", os.path.basename(data))
    agentlog = os.environ.get("AGENTLOG_BIN", os.path.join(ROOT, "target/release/agentlog"))
    home = os.path.join(data, "home")
    store = os.path.join(data, "archive-data")
    env = {k: v for k, v in os.environ.items() if k not in OVERRIDES}
    env.update({"HOME": home, "TZ": "UTC", "AGENTLOG_DATA_DIR": store,
                "AGENTLOG_CACHE_DIR": os.path.join(data, "archive-cache")})
    files = files_of(home)
    size = sum(os.path.getsize(f) for f in files)
    out = {"bytes": size, "files": len(files), "rows": {}}

    def row(what, times, bytes_, note=""):
        wall = statistics.median(t[0] for t in times)
        cpu = statistics.median(t[1] for t in times)
        r = {"wall_s": wall, "cpu_s": cpu, "mb_s": bytes_ / 1e6 / wall,
             "mb_per_cpu_s": bytes_ / 1e6 / cpu, "runs": len(times), "times": times,
             "load": round(os.getloadavg()[0], 2), "note": note}
        out["rows"][what] = r
        print(f"| {what} | {wall:.3f} s (CPU {cpu:.3f} s) | {r['mb_s']:.0f} MB/s "
              f"({r['mb_per_cpu_s']:.0f} per CPU s) | load {r['load']} | {note}", flush=True)

    first = [*"taskset -c 0".split(), agentlog, "archive", "--quiet"]
    first[0] = shutil.which("taskset")
    times = []
    for _ in range(runs):
        shutil.rmtree(store, ignore_errors=True)
        wall, cpu, code = spawn(first, env)
        assert code == 0, code
        times.append((wall, cpu))
    archived = dir_bytes(store)
    frames = os.path.getsize(os.path.join(store, "archive", "frames"))
    row("first archive, one core", times, size,
        f"archive {archived / 1e6:.1f} MB, ratio {size / archived:.3f}; frames alone "
        f"{frames / 1e6:.1f} MB, ratio {size / frames:.3f}")
    out["archive_bytes"] = archived
    times = [spawn(first, env)[:2] for _ in range(max(runs, 5))]
    row("nothing new", times, size, f"{len(files)} files")

    # zstd -3, one thread, on each file alone and on all as one stream.
    per_file = 0
    start = perf_counter()
    for f in files:
        per_file += len(subprocess.run(["zstd", "-3", "-T1", "-c", "-q", f],
                                       capture_output=True, check=True).stdout)
    per_file_s = perf_counter() - start
    listing = os.path.join(data, "archive-files.txt")
    with open(listing, "wb") as f:
        f.write(b"\0".join(os.fsencode(x) for x in files))
    times = []
    for _ in range(runs):
        t = perf_counter()
        p = subprocess.run(f"xargs -0 -a {listing} cat | taskset -c 0 zstd -3 -T1 -c -q | wc -c",
                           shell=True, capture_output=True, check=True, text=True)
        times.append((perf_counter() - t, perf_counter() - t))
    stream = int(p.stdout.strip())
    out["zstd"] = {"per_file_bytes": per_file, "per_file_s": per_file_s, "stream_bytes": stream}
    row("zstd -3 -T1, one stream (cat | zstd)", times, size,
        f"{stream / 1e6:.1f} MB, ratio {size / stream:.3f}; per file: {per_file / 1e6:.1f} MB, "
        f"ratio {size / per_file:.3f}")

    # Restore: every session, one process each, into a fresh directory.
    listed = json.loads(subprocess.run([agentlog, "archive", "--list", "--json"], env=env,
                                       capture_output=True, check=True).stdout)
    sources = listed.get("sources", listed if isinstance(listed, list) else [])
    sessions = {}
    for s in sources:
        sid = s.get("session_id") or s.get("path")
        sessions[sid] = sessions.get(sid, 0) + s.get("bytes", 0)
    to = os.path.join(data, "restored")
    times = []
    for _ in range(1):
        shutil.rmtree(to, ignore_errors=True)
        total_wall = total_cpu = 0.0
        for sid in sessions:
            wall, cpu, code = spawn([agentlog, "archive", "--restore", sid, "--to", to], env)
            assert code == 0, (sid, code)
            total_wall += wall
            total_cpu += cpu
        times.append((total_wall, total_cpu))
    restored = dir_bytes(to)
    row("restore every session (one process each)", times, restored,
        f"{len(sessions)} sessions, {restored / 1e6:.1f} MB written")
    big = max(sessions, key=sessions.get)
    times = []
    for _ in range(max(runs, 5)):
        shutil.rmtree(to, ignore_errors=True)
        times.append(spawn([agentlog, "archive", "--restore", big, "--to", to], env)[:2])
    row("restore the largest session", times, dir_bytes(to), f"{dir_bytes(to) / 1e6:.1f} MB")
    shutil.rmtree(to, ignore_errors=True)

    # One large session (the Claude Code files joined, ~200 MB), archived on its own: restore's
    # throughput where process start-up and the final sync are a small part.
    big_home = os.path.join(data, "restore-home")
    big = os.path.join(big_home, ".claude/projects/-home-user-big",
                       "00000000-0000-4000-8000-00000000b16a.jsonl")
    if not os.path.exists(big):
        os.makedirs(os.path.dirname(big), exist_ok=True)
        with open(big, "wb") as out_f:
            for f in files:
                if "/.claude/" in f and out_f.tell() < 200e6:
                    with open(f, "rb") as src:
                        out_f.write(src.read())
    big_env = {**env, "HOME": big_home, "AGENTLOG_DATA_DIR": os.path.join(data, "restore-data")}
    shutil.rmtree(big_env["AGENTLOG_DATA_DIR"], ignore_errors=True)
    assert spawn([agentlog, "archive", "--quiet"], big_env)[2] == 0
    times = []
    for _ in range(max(runs, 5)):
        shutil.rmtree(to, ignore_errors=True)
        wall, cpu, code = spawn([agentlog, "archive", "--restore",
                                 "00000000-0000-4000-8000-00000000b16a", "--to", to], big_env)
        assert code == 0, code
        times.append((wall, cpu))
    restored_files = files_of(to)
    assert len(restored_files) == 1 and filecmp.cmp(restored_files[0], big, shallow=False)
    row("restore one large session", times, os.path.getsize(big),
        f"{os.path.getsize(big) / 1e6:.1f} MB, byte for byte")
    shutil.rmtree(to, ignore_errors=True)
    # Floors under that restore: writing the bytes with one sync, and zstd's own decompression.
    os.makedirs(to, exist_ok=True)
    dd = [shutil.which("dd"), f"if={big}", f"of={to}/copy", "bs=4M", "conv=fsync", "status=none"]
    times = [spawn(dd, env)[:2] for _ in range(max(runs, 5))]
    row("floor: write it with one sync (dd conv=fsync)", times, os.path.getsize(big))
    packed = os.path.join(data, "big.zst")
    subprocess.run(["zstd", "-3", "-T1", "-q", "-f", big, "-o", packed], check=True)
    unzstd = [shutil.which("zstd"), "-d", "-T1", "-q", "-c", packed]
    times = [spawn(unzstd, env)[:2] for _ in range(max(runs, 5))]
    row("floor: zstd -d of it to /dev/null", times, os.path.getsize(big))
    os.remove(packed)
    shutil.rmtree(to, ignore_errors=True)

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True).stdout.strip()
    name = os.path.join(ROOT, f"benches/results/{stamp}-{rev}-archive-vs-zstd-{label}.json")
    with open(name, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{len(files)} files, {size / 1e6:.1f} MB; raw: {os.path.relpath(name, ROOT)}")


if __name__ == "__main__":
    main()
