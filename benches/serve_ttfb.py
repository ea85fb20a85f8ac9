#!/usr/bin/env python3
"""Time to first byte of the viewer on a small and a 100 MB session: the session page, its
report (`/api/sessions/{id}`), its first window of 100 lines and its last (`before=end`), each
the median of 20 requests after one warm-up (which builds the indexes). Prints one JSON object
with the medians in ms and the big/small ratios.

Usage: serve_ttfb.py AGENTLOG_BINARY [SIZE_MB]   (default 100)
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "transcripts" / "claude-code"


def grow(src, dst, size):
    """A Claude Code transcript of `size` bytes: the lines of `src` repeated, each message id
    and uuid made unique per copy."""
    lines = src.read_text().splitlines()
    with open(dst, "w") as out:
        n, written = 0, 0
        while written < size:
            for line in lines:
                line = line.replace('"id":"msg_', f'"id":"msg_{n}_').replace('"uuid":"', f'"uuid":"{n}-')
                out.write(line + "\n")
                written += len(line) + 1
            n += 1


def ttfb(port, token, path):
    """Seconds from connecting to the first byte of the answer."""
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
        first = s.recv(1)
        elapsed = time.perf_counter() - start
        while s.recv(1 << 16):
            pass
    assert first == b"H"
    return elapsed


def main():
    binary = sys.argv[1]
    size = int(sys.argv[2] if len(sys.argv) > 2 else 100) * 1_000_000
    tmp = Path(tempfile.mkdtemp())
    root = tmp / "projects" / "bench"
    root.mkdir(parents=True)
    src = DATA / "agentlogs-crud.jsonl"
    shutil.copy(src, root / "small-session.jsonl")
    grow(src, root / "big-session.jsonl", size)
    env = dict(os.environ, AGENTLOG_CACHE_DIR=str(tmp / "cache"))
    proc = subprocess.Popen([binary, "serve", "--port", "0", "--json", str(root)],
                            stdout=subprocess.PIPE, env=env, text=True)
    try:
        address = json.loads(proc.stdout.readline())
        port, token = address["port"], address["token"]
        result = {"bytes": {"small": (root / "small-session.jsonl").stat().st_size,
                            "big": (root / "big-session.jsonl").stat().st_size}}
        for what, path in [("page", "/sessions/{}"), ("report", "/api/sessions/{}"),
                           ("first_window", "/api/sessions/{}/lines?offset=0&limit=100"),
                           ("last_window", "/api/sessions/{}/lines?before=end&limit=100")]:
            medians = {}
            for name in ["small", "big"]:
                p = path.format(f"{name}-session")
                ttfb(port, token, p)
                medians[name] = statistics.median(ttfb(port, token, p) for _ in range(20)) * 1000
            result[what] = {"small_ms": round(medians["small"], 3), "big_ms": round(medians["big"], 3),
                            "ratio": round(medians["big"] / medians["small"], 2)}
        print(json.dumps(result))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
