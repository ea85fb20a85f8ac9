#!/usr/bin/env python3
"""Generates a home directory holding the transcripts of every supported agent, for the
benchmarks against ccusage: Claude Code sessions from gen_claude_transcripts.py, and every other
agent's files made by copying the real files vendored in tests/data/transcripts/ again and again,
each copy with fresh ids (every UUID, pi entry id and OpenCode id changed, so no copy merges
with another) and its times moved on 37 minutes a copy (ccusage merges Codex events by time),
written where the agent keeps them:

  codex     ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl
  gemini    ~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl (and older .json sessions)
  copilot   ~/.copilot/session-state/<id>/events.jsonl
  opencode  ~/.local/share/opencode/opencode.db (one database, its rows copied)
  qwen      ~/.qwen/projects/<project>/chats/<id>.jsonl
  kimi      ~/.kimi/sessions/<group>/<id>/wire.jsonl
  pi        ~/.pi/agent/sessions/<project>/<time>_<id>.jsonl

Usage: gen_agent_home.py OUT_DIR --claude MB [--codex MB] [--gemini MB] [--copilot MB]
       [--opencode MB] [--qwen MB] [--kimi MB] [--pi MB] [--seed N]
       gen_agent_home.py OUT_DIR --all MB   (Claude Code a third, Codex a sixth, the rest even)
Writes OUT_DIR/home/... and prints one JSON object: bytes and files per agent.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests/data/transcripts")
UUID = re.compile(rb"([0-9a-f]{8})(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
# pi's entry ids: eight hex digits.
SHORT_ID = re.compile(rb'("(?:id|parentId)":")([0-9a-f]{8})"')
ISO = re.compile(rb"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?Z")
EPOCH_MS = re.compile(rb'("(?:time|created_at|created|timestamp)":)(1\d{12})\b')
# Each copy's times move on by this much (wrapping after 150 days): ccusage takes Codex events
# with the same time and tokens for one, so copies must differ in time as well as in ids.
SHIFT = timedelta(minutes=37)
AGENTS = ["claude", "codex", "gemini", "copilot", "opencode", "qwen", "kimi", "pi"]


def arg(name, default=None):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def fresh(data, copy):
    """The bytes with every UUID's first eight hex digits (and pi's short ids) mixed with the
    copy number, so the same id maps to the same new one within a copy and to different ones
    across copies, and every time moved on by the copy's shift."""
    mix = (copy + 1) * 0x9E3779B1 & 0xFFFFFFFF
    shift = SHIFT * (copy % (150 * 24 * 60 // 37))

    def uuid(m):
        return b"%08x" % (int(m.group(1), 16) ^ mix) + m.group(2)

    def short(m):
        return m.group(1) + b"%08x" % (int(m.group(2), 16) ^ mix) + b'"'

    def iso(m):
        t = datetime.strptime(m.group(1).decode(), "%Y-%m-%dT%H:%M:%S") + shift
        return t.strftime("%Y-%m-%dT%H:%M:%S").encode() + (m.group(2) or b"") + b"Z"

    def epoch(m):
        return m.group(1) + str(int(m.group(2)) + int(shift.total_seconds()) * 1000).encode()

    data = SHORT_ID.sub(short, UUID.sub(uuid, data))
    return EPOCH_MS.sub(epoch, ISO.sub(iso, data)) if copy else data


def first_uuid(data):
    m = UUID.search(data)
    return (m.group(0) if m else b"00000000-0000-4000-8000-000000000000").decode()


def write(path, data, stats, agent):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    stats[agent]["bytes"] += len(data)
    stats[agent]["files"] += 1


def sources(sub, names):
    out = []
    for name in names:
        with open(os.path.join(DATA, sub, name), "rb") as f:
            out.append((name, f.read()))
    return out


def replicate(agent, budget, home, stats, place, srcs):
    """Copies the source files with fresh ids until `budget` bytes are written."""
    copy = 0
    while stats[agent]["bytes"] < budget:
        for name, data in srcs:
            new = fresh(data, copy)
            write(place(home, copy, name, new), new, stats, agent)
        copy += 1


def codex_path(home, copy, name, data):
    sid = first_uuid(data)
    stamp = name[len("rollout-"):len("rollout-") + 19]
    y, m, d = stamp[:4], stamp[5:7], stamp[8:10]
    return os.path.join(home, ".codex/sessions", y, m, d, f"rollout-{stamp}-{sid}.jsonl")


def gemini_path(home, copy, name, data):
    sid = first_uuid(data)
    project = f"project-{copy % 20:02d}"
    ext = ".json" if name.endswith(".json") else ".jsonl"
    return os.path.join(home, ".gemini/tmp", project, "chats",
                        f"session-2026-04-23T12-52-{sid[:8]}-{copy}{ext}")


def copilot_path(home, copy, name, data):
    # Each source is its own session: the copy number and source keep directories apart.
    sid = first_uuid(data)
    return os.path.join(home, ".copilot/session-state", f"{sid}-{copy:06d}-{len(name)}",
                        "events.jsonl")


def qwen_path(home, copy, name, data):
    return os.path.join(home, ".qwen/projects", f"project-{copy % 20:02d}", "chats",
                        f"{first_uuid(data)}-{copy:06d}.jsonl")


def kimi_path(home, copy, name, data):
    return os.path.join(home, ".kimi/sessions", f"group-{copy % 20:02d}",
                        f"{copy:08x}-0000-4000-8000-{len(name):012x}", "wire.jsonl")


def pi_path(home, copy, name, data):
    return os.path.join(home, ".pi/agent/sessions", f"--home-user-project-{copy % 20:02d}--",
                        f"2026-02-01T00-00-00-000Z_{copy:08x}-{name}")


def opencode(budget, home, stats):
    """One database: the vendored one (its WAL folded in) with its sessions, messages and parts
    copied under fresh ids until the file holds `budget` bytes."""
    src = os.path.join(DATA, "opencode/JulesGuiCs-dda98e9/opencode.db")
    out_dir = os.path.join(home, ".local/share/opencode")
    os.makedirs(out_dir, exist_ok=True)
    db = os.path.join(out_dir, "opencode.db")
    for ext in ["", "-wal", "-shm"]:
        if os.path.exists(src + ext):
            shutil.copy(src + ext, db + ext)
    con = sqlite3.connect(db)
    tables = {t: [r[1] for r in con.execute(f"PRAGMA table_info(`{t}`)")]
              for t in ["session", "message", "part", "session_message"]}
    rows = {t: con.execute(f"SELECT * FROM `{t}`").fetchall() for t in tables}
    copy = 0
    def size():
        return sum(os.path.getsize(db + e) for e in ["", "-wal"] if os.path.exists(db + e))

    while size() < budget:
        copy += 1
        suffix = f"k{copy:06d}"
        for t, cols in tables.items():
            new = []
            for r in rows[t]:
                r = list(r)
                for i, c in enumerate(cols):
                    if c in ("id", "session_id", "message_id", "parent_id") and r[i]:
                        r[i] = r[i] + suffix
                new.append(r)
            marks = ",".join("?" * len(cols))
            con.executemany(f"INSERT INTO `{t}` VALUES ({marks})", new)
        con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    for ext in ["-wal", "-shm"]:
        if os.path.exists(db + ext) and os.path.getsize(db + ext) == 0:
            os.remove(db + ext)
    stats["opencode"]["bytes"] = os.path.getsize(db)
    stats["opencode"]["files"] = 1


def main():
    out = sys.argv[1]
    seed = arg("--seed", "1")
    mb = {a: float(arg(f"--{a}", "0")) for a in AGENTS}
    if arg("--all"):
        total = float(arg("--all"))
        mb["claude"], mb["codex"] = total / 3, total / 6
        for a in ["gemini", "copilot", "opencode", "qwen", "kimi", "pi"]:
            mb[a] = total / 2 / 6
    home = os.path.join(out, "home")
    stats = {a: {"bytes": 0, "files": 0} for a in AGENTS if mb[a] > 0}
    if mb["claude"] > 0:
        info = json.loads(subprocess.run(
            [sys.executable, os.path.join(ROOT, "benches/gen_claude_transcripts.py"), out,
             str(mb["claude"]), "--seed", seed], check=True, capture_output=True,
            text=True).stdout)
        stats["claude"] = {"bytes": info["bytes"], "files": info["files"]}
    budget = {a: int(mb[a] * 1e6) for a in AGENTS}
    if budget["codex"]:
        replicate("codex", budget["codex"], home, stats, codex_path, sources("codex", [
            "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
            "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
            "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"]))
    if budget["gemini"]:
        replicate("gemini", budget["gemini"], home, stats, gemini_path, sources("gemini", [
            "gemini.jsonl", "session-2026-04-28T15-09-887ba529.jsonl",
            "test_conversation_gemini@894772f.json", "test_conversation_gemini@7bc2c73.json"]))
    if budget["copilot"]:
        replicate("copilot", budget["copilot"], home, stats, copilot_path, sources("copilot", [
            "07c40cd0-ff51-4d6e-bdcd-ac2f90877203/events.jsonl",
            "test_conversation_copilot.jsonl"]))
    if budget["qwen"]:
        replicate("qwen", budget["qwen"], home, stats, qwen_path,
                  sources("qwen", ["qwen_code.jsonl"]))
    if budget["kimi"]:
        replicate("kimi", budget["kimi"], home, stats, kimi_path,
                  sources("kimi", ["assistant_tools.jsonl"]))
    if budget["pi"]:
        replicate("pi", budget["pi"], home, stats, pi_path, sources("pi", [
            "agentlogs-branched.jsonl", "agentlogs-crud.jsonl", "agentlogs-image.jsonl"]))
    if budget["opencode"]:
        opencode(budget["opencode"], home, stats)
    stats["total"] = {"bytes": sum(s["bytes"] for s in stats.values()),
                      "files": sum(s["files"] for s in stats.values())}
    json.dump(stats, sys.stdout)
    print()


if __name__ == "__main__":
    main()
