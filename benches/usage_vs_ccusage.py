#!/usr/bin/env python3
"""Whole-process timings of `agentlog usage` and `agentlog statusline` against ccusage's native
binary on one home directory made by gen_agent_home.py, the two commands run in turn (A B A B
...) so that the machine's load hits both; median wall (and CPU) of each, the load average
beside each figure.

  cold        `usage --by day --json` with an empty cache directory, vs `daily --json --offline`
  warm        the same with the cache kept, nothing changed
  grown       the same after one Claude Code file grew by a turn before each run
  added       the same after a new Claude Code session (one turn) was written before each run
  statusline  `statusline` (Claude Code's status-line JSON on stdin, the largest session), warm,
              vs `statusline --offline` with its cache (both warmed first)
  floors      a stat of every file, and a read of every file (cat), as whole processes
  formats     per agent: `usage --by day --json DIR` cold (DIR: where that agent keeps its files)
              vs `NAME daily --json --offline`

and prints both tools' token totals (and costs) so that a figure over different counts is seen.
Writes benches/results/<UTC time>-<rev>-usage-vs-ccusage-<label>.json (every time, every
command) and prints a Markdown table.

Usage: benches/usage_vs_ccusage.py DATA_DIR [--runs N] [--figures cold,warm,...] [--label L]
  DATA_DIR   holds home/ (gen_agent_home.py DATA_DIR ...); caches go to DATA_DIR/cache-*
Environment: AGENTLOG_BIN (default target/release/agentlog), CCUSAGE_BIN (default the native
binary under target/ccusage, installed as transcripts_vs_ccusage.py installs it).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from time import perf_counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where each agent keeps its files under the home.
ROOTS = {"claude-code": ".claude/projects", "codex": ".codex/sessions",
         "gemini": ".gemini/tmp", "copilot": ".copilot/session-state",
         "opencode": ".local/share/opencode", "qwen": ".qwen/projects",
         "kimi": ".kimi/sessions", "pi": ".pi/agent/sessions"}
# ccusage's subcommand for each agent.
CCUSAGE_NAME = {"claude-code": "claude"}
OVERRIDES = ["CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_DATA_DIR", "QWEN_DATA_DIR",
             "KIMI_DATA_DIR", "OPENCODE_DATA_DIR", "PI_AGENT_DIR", "XDG_CACHE_HOME",
             "XDG_DATA_HOME", "XDG_CONFIG_HOME", "AGENTLOG_CACHE_DIR", "AGENTLOG_DATA_DIR"]


def arg(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def spawn(cmd, env, stdin_path=None):
    """Runs `cmd` to its end with its output thrown away: (wall seconds, CPU seconds, exit)."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 0, stdin_path or os.devnull, os.O_RDONLY, 0)]
    start = perf_counter()
    pid = os.posix_spawn(cmd[0], cmd, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def output(cmd, env, stdin_path=None):
    with open(stdin_path or os.devnull, "rb") as stdin:
        p = subprocess.run(cmd, env=env, stdin=stdin, capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    return p.stdout


class Bench:
    def __init__(self, data, runs):
        self.data = os.path.abspath(data)
        self.runs = runs
        self.agentlog = os.environ.get("AGENTLOG_BIN", os.path.join(ROOT, "target/release/agentlog"))
        self.ccusage = os.environ.get("CCUSAGE_BIN", os.path.join(
            ROOT, "target/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage"))
        if not os.access(self.ccusage, os.X_OK):
            os.chmod(self.ccusage, os.stat(self.ccusage).st_mode | 0o111)
        self.home = os.path.join(self.data, "home")
        env = {k: v for k, v in os.environ.items() if k not in OVERRIDES}
        env.update({"HOME": self.home, "TZ": "UTC", "NO_COLOR": "1",
                    "AGENTLOG_DATA_DIR": os.path.join(self.data, "agentlog-data")})
        self.base_env = env
        self.rows = []
        self.raw = []

    def env(self, cache):
        return {**self.base_env, "AGENTLOG_CACHE_DIR": os.path.join(self.data, cache)}

    def pair(self, what, a, b, env, target, before_a=None, stdin_path=None, runs=None):
        """A and B in turn, `runs` times each; medians and the load average around them."""
        runs = runs or self.runs
        load = [os.getloadavg()[0]]
        ta, tb = [], []
        for _ in range(runs):
            if before_a:
                before_a()
            wall, cpu, code = spawn(a, env, stdin_path)
            assert code == 0, (a, code)
            ta.append((wall, cpu))
            if b:
                wall, cpu, code = spawn(b, env, stdin_path)
                assert code == 0, (b, code)
                tb.append((wall, cpu))
        load.append(os.getloadavg()[0])
        med = lambda xs, i: statistics.median(x[i] for x in xs) if xs else None
        row = {"what": what, "agentlog_s": med(ta, 0), "agentlog_cpu_s": med(ta, 1),
               "ccusage_s": med(tb, 0), "ccusage_cpu_s": med(tb, 1), "target": target,
               "load": [round(x, 2) for x in load], "runs": runs}
        row["ratio"] = row["ccusage_s"] / row["agentlog_s"] if tb else None
        self.rows.append(row)
        self.raw.append({"what": what, "a": a, "b": b, "a_times": ta, "b_times": tb})
        print(fmt_row(row), flush=True)
        return row

    def totals(self, agent_args, cc_args, cache):
        """Both tools' token totals and costs for one pair of commands."""
        env = self.env(cache)
        ours = json.loads(output([self.agentlog, "usage", "--json", *agent_args], env))
        theirs = json.loads(output([self.ccusage, *cc_args, "--json", "--offline"], env))
        t, c = ours["totals"], theirs.get("totals", {})
        return {"agentlog_tokens": t.get("total_tokens"), "agentlog_cost": ours.get("cost_usd", t.get("cost_usd")),
                "ccusage_tokens": c.get("totalTokens"),
                "ccusage_cost": c.get("totalCost", c.get("costUSD"))}


def fmt_row(r):
    f = lambda s: "" if s is None else (f"{s * 1e3:.2f} ms" if s < 0.1 else f"{s:.2f} s")
    ratio = "" if r["ratio"] is None else f"{r['ratio']:.1f}x"
    return (f"| {r['what']} | {f(r['agentlog_s'])} (CPU {f(r['agentlog_cpu_s'])}) | "
            f"{f(r['ccusage_s'])} (CPU {f(r['ccusage_cpu_s'])}) | {ratio} | {r['target']} | {r['load'][0]}-{r['load'][1]} |")


def claude_files(home):
    """The home's Claude Code session files, sorted, without the sessions `added` wrote."""
    files = []
    for d, _, names in os.walk(os.path.join(home, ".claude/projects")):
        files += [os.path.join(d, n) for n in names
                  if n.endswith(".jsonl") and not n.startswith("added-")]
    return sorted(files)


def middle_claude_file(home):
    files = claude_files(home)
    return files[len(files) // 2]


def grow_one(home):
    """Appends a turn to one Claude Code file (transcripts_vs_ccusage.py's grow)."""
    sys.path.insert(0, os.path.join(ROOT, "benches"))
    argv, sys.argv = sys.argv, [sys.argv[0]]
    import transcripts_vs_ccusage as t  # noqa: E402 (its argument parsing reads sys.argv)
    sys.argv = argv
    path = middle_claude_file(home)
    return lambda: t.grow(path)


def add_one(home):
    """Writes a new Claude Code session of one turn (new ids) beside a middle file, as a
    session that just started would, each time it is called."""
    template = middle_claude_file(home)
    with open(template, "rb") as f:
        f.seek(max(0, os.path.getsize(template) - 65536))
        last = [l for l in f.read().split(b"\n") if b'"type":"assistant"' in l][-1]
    n = [0]

    def add():
        n[0] += 1
        asst = json.loads(last)
        tag = f"added-{os.getpid()}-{n[0]}"
        user = {k: asst[k] for k in ["isSidechain", "userType", "cwd", "version", "gitBranch"]
                if k in asst}
        user.update({"parentUuid": None, "type": "user", "sessionId": tag,
                     "uuid": f"{tag}-u", "timestamp": asst["timestamp"],
                     "message": {"role": "user", "content": "hello"}})
        asst.update({"sessionId": tag, "uuid": f"{tag}-a", "parentUuid": f"{tag}-u",
                     "requestId": f"req_{tag}"})
        asst["message"]["id"] = f"msg_{tag}"
        with open(os.path.join(os.path.dirname(template), f"{tag}.jsonl"), "w") as f:
            f.write(json.dumps(user, separators=(",", ":")) + "\n"
                    + json.dumps(asst, separators=(",", ":")) + "\n")
    return add


def statusline_input(bench):
    session = max(claude_files(bench.home), key=os.path.getsize)
    path = os.path.join(bench.data, "statusline-input.json")
    with open(path, "w") as f:
        json.dump({"session_id": os.path.basename(session)[:-6], "transcript_path": session,
                   "cwd": "/home/user", "model": {"id": "claude-opus-4-6",
                                                  "display_name": "Opus"},
                   "workspace": {"current_dir": "/home/user"}, "version": "2.1.39"}, f)
    return path


def main():
    data = sys.argv[1]
    runs = int(arg("--runs", "5"))
    figures = arg("--figures", "cold,warm,grown,statusline").split(",")
    label = arg("--label", os.path.basename(os.path.abspath(data)))
    b = Bench(data, runs)
    usage = [b.agentlog, "usage", "--by", "day", "--json"]
    daily = [b.ccusage, "daily", "--json", "--offline"]
    checks = {}
    print("| figure | agentlog | ccusage | ratio | target | load |\n|---|---|---|---|---|---|")
    if "cold" in figures:
        cache = os.path.join(b.data, "cache-cold")
        b.pair("usage cold vs daily", usage, daily, b.env("cache-cold"), ">= 3x",
               before_a=lambda: shutil.rmtree(cache, ignore_errors=True))
    if {"warm", "grown", "added", "statusline"} & set(figures):
        spawn(usage, b.env("cache-warm"))
        spawn(usage, b.env("cache-warm"))
        checks["all"] = b.totals(["--by", "day"], ["daily"], "cache-warm")
    if "warm" in figures:
        b.pair("usage warm vs daily", usage, daily, b.env("cache-warm"), ">= 100x",
               runs=max(runs, 10))
    if "grown" in figures:
        b.pair("usage warm, one file grew, vs daily", usage, daily, b.env("cache-warm"),
               ">= 100x", before_a=grow_one(b.home))
    if "added" in figures:
        b.pair("usage warm, a session added, vs daily", usage, daily, b.env("cache-warm"),
               "", before_a=add_one(b.home))
    if "statusline" in figures:
        stdin = statusline_input(b)
        status = [b.agentlog, "statusline"]
        cc_status = [b.ccusage, "statusline", "--offline"]
        for _ in range(2):
            spawn(status, b.env("cache-warm"), stdin)
            spawn(cc_status, b.env("cache-warm"), stdin)
        b.pair("statusline warm vs statusline (its cache)", status, cc_status,
               b.env("cache-warm"), "<= 2 ms", stdin_path=stdin, runs=max(runs, 30))
        b.pair("floor: agentlog --version", [b.agentlog, "--version"], ["/bin/true"],
               b.env("cache-warm"), "", runs=max(runs, 30))
    if "floors" in figures:
        sh = shutil.which("sh")
        b.pair("floor: stat every file (find -printf %s)",
               [sh, "-c", f"find {b.home} -type f -printf '%s\\n' >/dev/null"], None,
               b.base_env, "")
        b.pair("floor: read every file (find | xargs cat)",
               [sh, "-c", f"find {b.home} -type f -print0 | xargs -0 cat >/dev/null"], None,
               b.base_env, "")
    if "formats" in figures:
        # Each agent's files alone: agentlog given the agent's directory (so nothing else is
        # discovered or indexed), ccusage its subcommand for that agent.
        for agent, root in ROOTS.items():
            path = os.path.join(b.home, root)
            if not os.path.exists(path):
                continue
            cc = CCUSAGE_NAME.get(agent, agent)
            cache = os.path.join(b.data, f"cache-{agent}")
            b.pair(f"{agent}: usage DIR cold vs {cc} daily",
                   [*usage, path], [b.ccusage, cc, "daily", "--json", "--offline"],
                   b.env(f"cache-{agent}"), "no slower",
                   before_a=lambda c=cache: shutil.rmtree(c, ignore_errors=True))
            checks[agent] = b.totals(["--by", "day", path], [cc, "daily"], f"cache-{agent}")
    for k, v in checks.items():
        print(f"totals {k}: {v}")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True).stdout.strip()
    name = os.path.join(ROOT, "benches/results",
                        f"{stamp}-{rev}-usage-vs-ccusage-{label}.json")
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(b.home) for n in ns)
    with open(name, "w") as f:
        json.dump({"home_bytes": size, "rows": b.rows, "totals": checks, "raw": b.raw,
                   "ccusage": output([b.ccusage, "--version"], b.base_env).decode().strip()},
                  f, indent=1)
    print(f"home: {size / 1e6:.1f} MB; raw: {os.path.relpath(name, ROOT)}")


if __name__ == "__main__":
    main()
