"""The exported dataset read by real DuckDB, after several incremental exports with appends,
truncations and killed exports in between.

After every export that finished:
- per agent, `SELECT sum(input_tokens) ... GROUP BY source_id, generation` over events/ equals
  `agentlog generations --json`, and so does the generations/ table;
- per source, count(*) equals the number of events (`agentlog index --json` for agents,
  `agentlog events --json` for sessions);
- per transcript (a vendored Claude Code transcript that grows with torn last lines and is cut
  back, and vendored Codex and pi ones), the generations/ table equals the generations of
  `agentlog transcript FILE --json`, and count(*) its complete lines.
After an export killed part way: no (host, source_id, offset) is visible twice.

Usage: python tests/export_duckdb.py path/to/agentlog   (CI runs it from .ci/run in a venv)
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import duckdb

AGENTLOG = sys.argv[1] if len(sys.argv) > 1 else "target/debug/agentlog"
SEED = int(os.environ.get("AGENTLOG_EXPORT_SEED", random.randrange(1 << 32)))
rng = random.Random(SEED)
checks = {"passed": 0, "failed": 0, "skipped": 0}


def agentlog(*args, check=True):
    done = subprocess.run([AGENTLOG, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"agentlog {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return done


def expect(condition, what):
    if condition:
        checks["passed"] += 1
    else:
        checks["failed"] += 1
        print(f"FAILED (seed {SEED}): {what}", file=sys.stderr)


class Agent:
    """A lingtai agent directory whose log this script writes (two UTC days, molts, noise)."""

    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        os.makedirs(os.path.join(self.dir, "logs"))
        self.log = os.path.join(self.dir, "logs", "events.jsonl")
        self.molts = 0
        self.ts = 1786060800.0 - 3600 * rng.random()  # an hour before a UTC midnight
        open(self.log, "wb").close()

    def line(self):
        self.ts += rng.random() * 60
        r = rng.random()
        if r < 0.05:
            self.molts += 1
            return {"type": "psyche_molt", "ts": self.ts, "molt_count": self.molts,
                    "initiator": rng.choice(["agent", "system"])}
        if r < 0.55:
            return {"type": "llm_response", "ts": self.ts, "input_tokens": rng.randrange(1, 90000),
                    "output_tokens": rng.randrange(0, 3000), "cached_tokens": rng.randrange(0, 500),
                    "thinking_tokens": rng.randrange(0, 200)}
        return {"type": rng.choice(["tool_call", "tool_result", "note"]), "ts": self.ts,
                "text": "雪" * rng.randrange(0, 40)}

    def append(self, n):
        with open(self.log, "ab") as f:
            for _ in range(n):
                if rng.random() < 0.01:
                    f.write(b"not json\n")
                f.write((json.dumps(self.line(), ensure_ascii=False) + "\n").encode())

    def truncate(self):
        with open(self.log, "rb") as f:
            data = f.read()
        cut = data.rfind(b"\n", 0, len(data) // 2) + 1
        with open(self.log, "wb") as f:
            f.write(data[:cut])

    def events(self):
        return json.loads(agentlog("index", self.dir, "--json").stdout)["events"]

    def generations(self):
        return json.loads(agentlog("generations", self.dir, "--json").stdout)


class Store:
    """A session store whose session logs this script writes."""

    def __init__(self, root):
        self.root = os.path.join(root, "store")
        self.seqs = {}
        for sid in ["s-one", "s-two"]:
            os.makedirs(os.path.join(self.root, sid))
            header = {"type": "session", "version": 0, "id": sid, "createdAt": 1786000000000 + len(self.seqs)}
            with open(self.path(sid), "w") as f:
                f.write(json.dumps(header) + "\n")
            self.seqs[sid] = 0

    def path(self, sid):
        return os.path.join(self.root, sid, "events.jsonl")

    def append(self, n):
        for sid in self.seqs:
            with open(self.path(sid), "a") as f:
                for _ in range(n):
                    seq = self.seqs[sid]
                    f.write(json.dumps({"type": "turn/start", "seq": seq, "time": 1786000000000 + seq * 1000,
                                        "data": {"turn": seq}}) + "\n")
                    self.seqs[sid] = seq + 1

    def events(self, sid):
        return len(json.loads(agentlog("events", self.root, sid, "--json").stdout))


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "transcripts")

# Each format's own names for (input, output, calls) under `usage.native` in
# `agentlog transcript --json` (the export's generation columns keep the formats' meanings).
USAGE_NAMES = {
    "claude-code": ("input_tokens", "output_tokens", "messages"),
    "codex": ("input_tokens", "output_tokens", "usage_events"),
    "pi": ("input", "output", "messages"),
}


class Transcripts:
    """A directory of transcripts: a Claude Code one this script grows (cut mid-line, so the
    last line is often torn) and cuts back, and a Codex and a pi one as they are."""

    def __init__(self, root):
        self.dir = os.path.join(root, "transcripts")
        self.index = os.path.join(root, "transcript-index")
        os.makedirs(os.path.join(self.dir, "proj"))
        with open(os.path.join(DATA, "claude-code", "258c7280-ae70-4798-800f-63464d01a85d.jsonl"), "rb") as f:
            self.full = f.read()
        self.growing = os.path.join(self.dir, "proj", "growing.jsonl")
        self.len = 0
        self.files = {"growing": self.growing}
        for name, src in [("codex-rollout", "codex/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"),
                          ("pi-branched", "pi/agentlogs-branched.jsonl")]:
            dest = os.path.join(self.dir, "proj", name + ".jsonl")
            shutil.copyfile(os.path.join(DATA, src), dest)
            self.files[name] = dest
        self.grow()

    def grow(self):
        self.len = min(len(self.full), self.len + rng.randrange(1, len(self.full) // 4))
        with open(self.growing, "wb") as f:
            f.write(self.full[:self.len])

    def truncate(self):
        self.len //= 2
        with open(self.growing, "wb") as f:
            f.write(self.full[:self.len])

    def answer(self, path):
        return json.loads(agentlog("transcript", path, "--json", "--index-dir", self.index).stdout)


def check_transcripts(out, transcripts, label):
    db = duckdb.connect()
    for sid, path in transcripts.files.items():
        answer = transcripts.answer(path)
        names = USAGE_NAMES[answer["format"]]
        expected = [(i, g["usage"]["native"][names[0]], g["usage"]["native"][names[1]],
                     g["usage"]["native"][names[2]])
                    for i, g in enumerate(answer["generations"])]
        table = db.execute(
            f"SELECT generation, input_tokens, output_tokens, api_calls FROM {events_glob(out, 'generations')} "
            f"WHERE source_kind = 'transcript' AND source_id = ? ORDER BY generation", [sid]).fetchall()
        expect([tuple(r) for r in table] == expected,
               f"{label}: transcript {sid}: generations {table} vs {expected}")
        count = db.execute(f"SELECT count(*) FROM {events_glob(out)} WHERE source_kind = 'transcript' "
                           f"AND source_id = ?", [sid]).fetchone()[0]
        expect(count == answer["lines"], f"{label}: transcript {sid}: count(*) {count} vs {answer['lines']} lines")
        per_gen = db.execute(
            f"SELECT generation, count(*) FROM {events_glob(out)} WHERE source_kind = 'transcript' "
            f"AND source_id = ? GROUP BY generation ORDER BY generation", [sid]).fetchall()
        expect(len(per_gen) == len(expected), f"{label}: transcript {sid}: lines in every generation")
    sessions = db.execute(f"SELECT count(*) FROM {events_glob(out, 'sessions')} "
                          f"WHERE source_kind = 'transcript'").fetchone()[0]
    expect(sessions == len(transcripts.files), f"{label}: transcript sessions rows {sessions}")


def events_glob(out, table="events"):
    return f"read_parquet('{out}/{table}/**/*.parquet', hive_partitioning = true)"


def check_exact(out, agents, store, label):
    db = duckdb.connect()
    for agent in agents:
        name = os.path.basename(agent.dir)
        expected = [(g["generation"], g["input_tokens"], g["output_tokens"], g["api_calls"])
                    for g in agent.generations()]
        got = db.execute(
            f"SELECT generation, sum(input_tokens), sum(output_tokens), count(input_tokens) "
            f"FROM {events_glob(out)} WHERE source_id = ? GROUP BY source_id, generation ORDER BY generation",
            [name]).fetchall()
        # A generation without events (a log that opens with a boundary) has no rows to sum.
        sums = {row[0]: tuple(int(v or 0) for v in row) for row in got}
        summed = [sums.get(g[0], (g[0], 0, 0, 0)) for g in expected]
        expect(summed == expected and set(sums) <= {g[0] for g in expected},
               f"{label}: {name}: token sums per generation {got} vs {expected}")
        table = db.execute(
            f"SELECT generation, input_tokens, output_tokens, api_calls FROM {events_glob(out, 'generations')} "
            f"WHERE source_id = ? ORDER BY generation", [name]).fetchall()
        expect([tuple(r) for r in table] == expected, f"{label}: {name}: generations table")
        count = db.execute(f"SELECT count(*) FROM {events_glob(out)} WHERE source_id = ?", [name]).fetchone()[0]
        expect(count == agent.events(), f"{label}: {name}: count(*) {count} vs {agent.events()} events")
    for sid in store.seqs:
        count = db.execute(f"SELECT count(*) FROM {events_glob(out)} WHERE source_kind = 'session' "
                           f"AND source_id = ?", [sid]).fetchone()[0]
        expect(count == store.events(sid), f"{label}: session {sid}: count(*) {count}")
    sessions = db.execute(f"SELECT count(*) FROM {events_glob(out, 'sessions')} "
                          f"WHERE source_kind = 'session'").fetchone()[0]
    expect(sessions == len(store.seqs), f"{label}: sessions table rows {sessions}")
    check_at_most_once(out, label)


def check_at_most_once(out, label):
    db = duckdb.connect()
    dupes = db.execute(f"SELECT count(*) FROM (SELECT host, source_id, \"offset\" FROM {events_glob(out)} "
                       f"GROUP BY ALL HAVING count(*) > 1)").fetchone()[0]
    expect(dupes == 0, f"{label}: {dupes} rows visible more than once")


INDEX_ARGS = []


def export(out, sources, *extra):
    return agentlog("export", *sources, "--out", out, "--host", "ci", "--json", *INDEX_ARGS, *extra)


def main():
    root = tempfile.mkdtemp(prefix="agentlog-duckdb-")
    try:
        out = os.path.join(root, "dataset")
        agents = [Agent(root, f"agent-{k}") for k in range(3)]
        store = Store(root)
        transcripts = Transcripts(root)
        INDEX_ARGS[:] = ["--index-dir", transcripts.index]
        sources = [a.dir for a in agents] + [store.root, transcripts.dir]
        for agent in agents:
            agent.append(rng.randrange(50, 400))
        store.append(5)
        export(out, sources)
        check_exact(out, agents, store, "first export")
        check_transcripts(out, transcripts, "first export")
        for round_ in range(6):
            for agent in agents:
                agent.append(rng.randrange(0, 200))
            store.append(rng.randrange(0, 4))
            transcripts.grow()
            if round_ % 3 == 1:
                rng.choice(agents).truncate()
                transcripts.truncate()
            if round_ % 2 == 1:
                # Kill an export part way (at one of its file-system steps), look, then rerun.
                # The same export on a copy of the dataset says how many steps it takes.
                probe = os.path.join(root, "probe")
                shutil.copytree(out, probe)
                steps = json.loads(export(probe, sources).stdout)["steps"]
                shutil.rmtree(probe)
                killed = agentlog("export", *sources, "--out", out, "--host", "ci", *INDEX_ARGS,
                                  "--abort-at-step", str(rng.randrange(1, steps + 1)), check=False)
                if "unexpected argument" in killed.stderr:
                    # A binary built without the testing feature (plain `cargo build`) has no
                    # crash hook: nothing was stopped, so say so rather than count a kill.
                    checks["skipped"] += 1
                else:
                    expect(killed.returncode != 0, f"round {round_}: the export was stopped")
                check_at_most_once(out, f"round {round_}, after a kill")
            export(out, sources, *(["--compact"] if round_ == 4 else []))
            check_exact(out, agents, store, f"round {round_}")
            check_transcripts(out, transcripts, f"round {round_}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"export_duckdb: {checks['passed']} passed, {checks['failed']} failed")
    if checks["skipped"]:
        print(f"export_duckdb: {checks['skipped']} kills skipped: {AGENTLOG} has no --abort-at-step "
              f"(build it with --features testing, as cargo test does)")
    return 1 if checks["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
