#!/bin/bash
# Warm `usage` with half the sessions only in the archive, against all originals present, as
# whole processes run in turn (A B A B ...), median wall of each; the same totals asserted.
#   all        the home as generated, archived (the archive read, as by default)
#   half       a copy of it, archived, then every second transcript deleted
#   no-archive the home with --no-archive (the reference of earlier runs)
# Usage: python3 benches/gen_claude_transcripts.py DIR 100 --seed 7
#        DIR=DIR [BIN=target/release/agentlog] [RUNS=15] benches/archive_usage_warm.sh
# Writes benches/results/<UTC time>-<rev>-archive-usage-warm.json.
set -eu
BIN=$(realpath "${BIN:-target/release/agentlog}")
DIR=$(realpath "${DIR:?set DIR}")
export TZ=UTC
rm -rf "$DIR/half" "$DIR/data-all" "$DIR/data-half" "$DIR"/cache-*
cp -a "$DIR/home" "$DIR/half"
HOME=$DIR/home AGENTLOG_DATA_DIR=$DIR/data-all "$BIN" archive --quiet
HOME=$DIR/half AGENTLOG_DATA_DIR=$DIR/data-half "$BIN" archive --quiet
i=0
for f in $(find "$DIR/half/.claude/projects" -name '*.jsonl' | sort); do
  i=$((i + 1))
  if [ $((i % 2)) = 0 ]; then rm "$f"; fi
done
python3 - "$BIN" "$DIR" "${RUNS:-15}" "$(git rev-parse --short HEAD)" <<'PY'
import json, os, statistics, subprocess, sys, time
from datetime import datetime, timezone

binp, d, runs, rev = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
cases = {
    "all": ({"HOME": f"{d}/home", "AGENTLOG_DATA_DIR": f"{d}/data-all",
             "AGENTLOG_CACHE_DIR": f"{d}/cache-all"}, []),
    "half": ({"HOME": f"{d}/half", "AGENTLOG_DATA_DIR": f"{d}/data-half",
              "AGENTLOG_CACHE_DIR": f"{d}/cache-half"}, []),
    "no-archive": ({"HOME": f"{d}/home", "AGENTLOG_DATA_DIR": f"{d}/data-all",
                    "AGENTLOG_CACHE_DIR": f"{d}/cache-none"}, ["--no-archive"]),
}
base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOG_", "XDG_"))}
def cmd(name):
    env, extra = cases[name]
    return [binp, "usage", "--json", *extra], {**base, **env}
totals = {}
for name in cases:
    c, env = cmd(name)
    subprocess.run(c, env=env, capture_output=True, check=True)
    time.sleep(2.2)  # past the window in which a file's stat is not trusted
    doc = json.loads(subprocess.run(c, env=env, capture_output=True, check=True).stdout)
    totals[name] = {"total_tokens": doc["totals"]["total_tokens"], "files": doc["files"],
                    "archive_only_sessions": doc["archive_only_sessions"],
                    "snapshot": doc["snapshot"]["outcome"]}
assert len({t["total_tokens"] for t in totals.values()}) == 1, totals
times = {name: [] for name in cases}
load = [os.getloadavg()[0]]
for _ in range(runs):
    for name in cases:
        c, env = cmd(name)
        t = time.perf_counter()
        subprocess.run(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[name].append(time.perf_counter() - t)
load.append(os.getloadavg()[0])
med = {name: statistics.median(ts) for name, ts in times.items()}
for name in cases:
    print(f"{name}: median {med[name] * 1e3:.1f} ms; {totals[name]}")
print(f"half / all: {med['half'] / med['all']:.2f}x (target within 2x); "
      f"load {load[0]:.2f}-{load[1]:.2f}")
stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M")
out = os.path.join(os.getcwd(), f"benches/results/{stamp}-{rev}-archive-usage-warm.json")
with open(out, "w") as f:
    json.dump({"medians_s": med, "times_s": times, "totals": totals, "load": load}, f, indent=1)
print(f"raw: {os.path.relpath(out)}")
PY
