"""Latency of `agentlog mcp`: start-up to the first answer, and a warm search over
transcripts of N lines (default 100,000), spoken to as raw JSON-RPC over stdio.

Usage: python benches/mcp_latency.py PATH/TO/agentlog [LINES]
Prints the median and the 90th percentile of each figure (ms); docs/PERFORMANCE.md has the
current row. The machine is shared: run it when it is quiet, and compare medians.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1])
LINES = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "transcripts", "claude-code")


class Server:
    def __init__(self, args, env):
        self.proc = subprocess.Popen(
            [BIN, "mcp", *args], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next = 1

    def request(self, method, params):
        ident = self.next
        self.next += 1
        line = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == ident:
                return reply

    def initialize(self):
        reply = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        })
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        return reply

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def corpus(root):
    """Copies of the vendored Claude Code transcripts until they hold LINES lines."""
    sources = sorted(
        os.path.join(DATA, f) for f in os.listdir(DATA) if f.endswith(".jsonl")
    )
    lines = 0
    copy = 0
    os.makedirs(os.path.join(root, "project"))
    while lines < LINES:
        for src in sources:
            dst = os.path.join(root, "project", f"copy{copy}-{os.path.basename(src)}")
            shutil.copyfile(src, dst)
            with open(src, "rb") as f:
                lines += f.read().count(b"\n")
        copy += 1
    return lines


def summary(name, samples):
    samples = sorted(samples)
    p90 = samples[int(len(samples) * 0.9) - 1]
    print(f"{name}: median {statistics.median(samples):.2f} ms, p90 {p90:.2f} ms, n={len(samples)}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "transcripts")
        lines = corpus(root)
        env = dict(os.environ, AGENTLOG_CACHE_DIR=os.path.join(tmp, "cache"))
        print(f"{lines} lines in {len(os.listdir(os.path.join(root, 'project')))} files")

        start = []
        for _ in range(20):
            t = time.perf_counter()
            server = Server([root], env)
            server.initialize()
            reply = server.request("tools/list", {})
            start.append((time.perf_counter() - t) * 1000)
            assert len(reply["result"]["tools"]) == 5
            server.close()
        summary("start-up to the first answer (spawn, initialize, tools/list)", start)

        server = Server([root], env)
        server.initialize()
        t = time.perf_counter()
        first = server.request("tools/call", {"name": "search", "arguments": {"query": "hook"}})
        print(f"first search (builds the index): {(time.perf_counter() - t) * 1000:.0f} ms")
        assert not first["result"].get("isError"), first
        warm = []
        for query in ["hook", "the file", "cargo test", "error"] * 10:
            t = time.perf_counter()
            reply = server.request("tools/call", {"name": "search", "arguments": {"query": query}})
            warm.append((time.perf_counter() - t) * 1000)
            assert not reply["result"].get("isError"), reply
        summary(f"warm search at {lines} lines", warm)
        server.close()


if __name__ == "__main__":
    main()
