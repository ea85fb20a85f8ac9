"""Warm `search` calls of `agentlog mcp`, per query: the median wall time and the server's CPU
time per call (from /proc, so a loaded machine inflates it less than the wall time), over the
corpus of benches/mcp_latency.py (copies of the vendored Claude Code transcripts).

Usage: python benches/mcp_search_cpu.py PATH/TO/agentlog [LINES]   (Linux; default 100,000)
"""

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_latency as m  # noqa: E402  (reads the binary and LINES from argv)

QUERIES = ["hook", "the file", "cargo test", "error", "zzzqqq"]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "transcripts")
        m.corpus(root)
        env = dict(os.environ, AGENTLOG_CACHE_DIR=os.path.join(tmp, "cache"))
        s = m.Server([root], env)
        s.initialize()

        def cpu():
            fields = open(f"/proc/{s.proc.pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") * 1000

        for q in QUERIES:
            s.request("tools/call", {"name": "search", "arguments": {"query": q}})
            walls = []
            before = cpu()
            for _ in range(50):
                t = time.perf_counter()
                s.request("tools/call", {"name": "search", "arguments": {"query": q}})
                walls.append((time.perf_counter() - t) * 1000)
            per_call = (cpu() - before) / 50
            print(f"{q:12} wall median {statistics.median(walls):6.2f} min {min(walls):6.2f}"
                  f"  server cpu/call {per_call:6.2f} ms")
        s.close()


if __name__ == "__main__":
    main()
