#!/bin/bash
# Usage: python3 benches/gen_claude_transcripts.py DIR 100 --seed 7; DIR=DIR [BIN=...] benches/archive_usage_warm.sh
# warm usage: all originals vs half only in the archive (debug binary)
BIN=${BIN:-target/release/agentlog}
export HOME=${DIR:?set DIR}/home TZ=UTC AGENTLOG_DATA_DIR=${DIR:?set DIR}/data
run() { # label, args...
  local label=$1; shift
  "$BIN" usage --json "$@" >/dev/null 2>&1; sleep 2.2; "$BIN" usage --json "$@" > ${DIR:?set DIR}/$label.json 2>/dev/null
  python3 - "$label" "$BIN" "$@" <<'PY'
import subprocess, sys, time, json, os
label, binp, *args = sys.argv[1:]
ts=[]
for _ in range(15):
    t=time.perf_counter(); subprocess.run([binp,"usage","--json",*args],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL); ts.append(time.perf_counter()-t)
ts.sort()
d=json.load(open(f"${DIR:?set DIR}/{label}.json"))
print(label, "median %.1f ms" % (ts[len(ts)//2]*1000), "snapshot", d["snapshot"]["outcome"], "files", d["files"], "archive_only", d["archive_only_sessions"], "total", d["totals"]["total_tokens"] if "total_tokens" in d["totals"] else d["totals"])
PY
}
export AGENTLOG_CACHE_DIR=${DIR:?set DIR}/cache-all
run all_originals --no-archive
"$BIN" archive --quiet
export AGENTLOG_CACHE_DIR=${DIR:?set DIR}/cache-half
i=0; for f in $(find ${DIR:?set DIR}/home/.claude/projects -name '*.jsonl' | sort); do i=$((i+1)); [ $((i%2)) = 0 ] && rm "$f"; done
run half_archive_only
