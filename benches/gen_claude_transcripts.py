#!/usr/bin/env python3
"""Generates a tree of Claude Code transcripts shaped like real ones, for the benchmark against
ccusage: hundreds of session files under <out>/home/.claude/projects/<project>/, assistant
messages written as one line per content block with streaming usage, exact duplicate lines,
sidechain lines, tool results of a few kilobytes, compactions (a compact_boundary line and an
isCompactSummary user line), and resumed sessions that start with a copy of an earlier
session's lines. Deterministic for a seed; each file's mtime is its last timestamp.

Usage: gen_claude_transcripts.py OUT_DIR SIZE_MB [--seed N]
Prints one JSON object: files, bytes, lines, the largest file.
"""

import json
import os
import random
import sys
import uuid
from datetime import datetime, timedelta, timezone

MODELS = ["claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"]
WORDS = ("the of to and a in is it you that he was for on are with as I his they be at one have "
         "this from or had by not word but what some we can out other were all there when up use "
         "your how said an each she which do their time if will way about many then them write "
         "would like so these her long make thing see him two has look more day could go come did "
         "number sound no most people my over know water than call first who may down side been").split()


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def uid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def base(session, cwd, kind, ts, parent, sidechain=False):
    return {
        "parentUuid": parent,
        "isSidechain": sidechain,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.1.39",
        "gitBranch": "main",
        "type": kind,
        "uuid": None,
        "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z",
    }


def session_lines(rng, session, cwd, start, turns, msg_counter):
    """Yields (line, timestamp) of one session."""
    ts = start
    parent = None
    model = rng.choice(MODELS)
    context = rng.randint(15000, 30000)
    since_compact = 0
    for _turn in range(turns):
        ts += timedelta(seconds=rng.randint(5, 90))
        user = base(session, cwd, "user", ts, parent)
        user["uuid"] = uid(rng)
        if rng.random() < 0.5:
            user["message"] = {"role": "user", "content": [{
                "tool_use_id": "toolu_" + uid(rng).replace("-", "")[:24],
                "type": "tool_result",
                "content": text(rng, rng.randint(100, 1500)),
            }]}
        else:
            user["message"] = {"role": "user", "content": text(rng, rng.randint(5, 80))}
        parent = user["uuid"]
        yield json.dumps(user, separators=(",", ":")), ts
        sidechain = rng.random() < 0.05
        msg_counter[0] += 1
        msg_id = f"msg_{session[:8]}{msg_counter[0]:010d}"
        req_id = f"req_{session[:8]}{msg_counter[0]:010d}"
        context += rng.randint(200, 4000)
        cache_create = rng.randint(0, 3000)
        blocks = rng.randint(1, 3)
        out_final = rng.randint(20, 2000)
        for b in range(blocks):
            ts += timedelta(milliseconds=rng.randint(200, 3000))
            line = base(session, cwd, "assistant", ts, parent, sidechain)
            line["uuid"] = uid(rng)
            out = out_final if b == blocks - 1 else rng.randint(1, out_final)
            kind = rng.choice(["text", "tool_use", "thinking"]) if b < blocks - 1 else "text"
            content = ({"type": "text", "text": text(rng, rng.randint(10, 200))} if kind == "text"
                       else {"type": "tool_use", "id": "toolu_" + uid(rng)[:20], "name": "Bash",
                             "input": {"command": text(rng, 8)}} if kind == "tool_use"
                       else {"type": "thinking", "thinking": text(rng, rng.randint(20, 300)),
                             "signature": uid(rng)})
            line["message"] = {
                "model": model, "id": msg_id, "type": "message", "role": "assistant",
                "content": [content], "stop_reason": None, "stop_sequence": None,
                "usage": {
                    "input_tokens": rng.randint(1, 10),
                    "cache_creation_input_tokens": cache_create,
                    "cache_read_input_tokens": context,
                    "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                       "ephemeral_1h_input_tokens": cache_create},
                    "output_tokens": out, "service_tier": "standard",
                },
            }
            line["requestId"] = req_id
            parent = line["uuid"]
            encoded = json.dumps(line, separators=(",", ":"))
            yield encoded, ts
            if rng.random() < 0.03:
                yield encoded, ts  # an exact duplicate line
        since_compact += 1
        if context > 160000 and since_compact > 20:
            ts += timedelta(seconds=30)
            boundary = base(session, cwd, "system", ts, None)
            boundary.update({"uuid": uid(rng), "subtype": "compact_boundary",
                             "content": "Conversation compacted", "isMeta": False,
                             "level": "info", "logicalParentUuid": parent,
                             "compactMetadata": {"trigger": "auto", "preTokens": context}})
            yield json.dumps(boundary, separators=(",", ":")), ts
            summary = base(session, cwd, "user", ts, boundary["uuid"])
            summary.update({"uuid": uid(rng), "isCompactSummary": True,
                            "message": {"role": "user", "content": text(rng, 600)}})
            parent = summary["uuid"]
            yield json.dumps(summary, separators=(",", ":")), ts
            context = rng.randint(15000, 30000)
            since_compact = 0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seed = 1
    if "--seed" in sys.argv:
        seed = int(sys.argv[sys.argv.index("--seed") + 1])
        args = [a for a in args if a != str(seed)]
    out, size_mb = args[0], float(args[1])
    rng = random.Random(seed)
    target = int(size_mb * 1e6)
    projects = os.path.join(out, "home", ".claude", "projects")
    now = datetime(2026, 11, 30, tzinfo=timezone.utc)
    written = lines = files = largest = 0
    previous = []  # (path, lines) of earlier sessions, for resumed copies
    msg_counter = [0]
    n_projects = max(1, int(size_mb // 40) + 3)
    while written < target:
        project = f"-home-user-project-{rng.randrange(n_projects):03d}"
        session = uid(rng)
        cwd = "/home/user/" + project
        start = now - timedelta(days=rng.uniform(0, 60))
        # Most sessions are a few hundred KB to a few MB; a few are much larger.
        turns = rng.choice([20, 40, 80, 150, 300, 800])
        body = []
        if previous and rng.random() < 0.15:
            _, earlier = rng.choice(previous)
            body.extend(earlier[: rng.randint(1, len(earlier))])
        last_ts = start
        for line, ts in session_lines(rng, session, cwd, start, turns, msg_counter):
            body.append(line)
            last_ts = ts
        path = os.path.join(projects, project, session + ".jsonl")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = ("\n".join(body) + "\n").encode()
        with open(path, "wb") as f:
            f.write(data)
        t = last_ts.timestamp()
        os.utime(path, (t, t))
        files += 1
        lines += len(body)
        written += len(data)
        largest = max(largest, len(data))
        if len(previous) < 50:
            previous.append((path, body[: min(len(body), 400)]))
    json.dump({"files": files, "bytes": written, "lines": lines, "largest_file": largest,
               "projects_dir": projects}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
