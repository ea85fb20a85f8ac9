"""`agentlog mcp` through the official MCP Python SDK as a stdio client, on a copy of the
vendored real transcripts: initialize, list tools, call each tool, a bad argument, a cursor
followed to the end, and a search equal to `agentlog search --transcripts --json`.

Usage: python tests/mcp_client.py PATH/TO/agentlog   (exits non-zero on a failure)
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))


def cli(env, *args):
    out = subprocess.run([BIN, *args], env=env, capture_output=True, check=True)
    return json.loads(out.stdout)


async def run(root, env):
    params = StdioServerParameters(command=BIN, args=["mcp", root], env=env)
    checks = 0
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "agentlog", init
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert sorted(tools) == ["list_sessions", "read_session", "search", "status", "usage"]
            assert tools["search"].input_schema["required"] == ["query"]

            async def call(name, args):
                result = await session.call_tool(name, args)
                return result.is_error, result.structured_content

            # A search followed to its end equals the CLI's pages.
            hits, cursor = [], None
            while True:
                args = {"query": "the file", "match": "all", "limit": 5}
                command = ["search", "--transcripts", "--json", "--match", "all", "--limit", "5"]
                if cursor:
                    args["cursor"] = cursor
                    command += ["--cursor", cursor]
                error, page = await call("search", args)
                assert not error, page
                assert page["hits"] == cli(env, *command, "the file", root)["hits"]
                hits += page["hits"]
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            assert len(hits) > 5, len(hits)
            checks += 1

            # list_sessions followed to its end: usage --by session's rows, one for one.
            sessions, cursor = [], None
            while True:
                args = {"limit": 7}
                if cursor:
                    args["cursor"] = cursor
                error, page = await call("list_sessions", args)
                assert not error, page
                sessions += page["sessions"]
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            assert len(sessions) == page["total"] > 7, page
            error, usage = await call("usage", {"by": "session", "limit": 500})
            assert not error
            cli_usage = cli(env, "usage", "--by", "session", "--json", root)
            assert usage["totals"] == cli_usage["totals"]
            key = lambda r: (r["project"], r["session"])
            assert sorted(map(key, sessions)) == sorted(map(key, cli_usage["rows"]))
            by_key = {key(r): r for r in cli_usage["rows"]}
            for s in sessions:
                assert s["total_tokens"] == by_key[key(s)]["total_tokens"], s
            total = sum(s["total_tokens"] for s in sessions)
            assert total == usage["totals"]["total_tokens"], (total, usage["totals"])
            assert any(s["agent"] == "opencode" for s in sessions)
            checks += 1

            hit = hits[0]
            error, window = await call(
                "read_session", {"session": hit["file"], "offset": hit["offset"], "before": 2, "after": 2}
            )
            assert not error, window
            assert window["anchor_offset"] == hit["offset"], window
            assert hit["line"] in [line["line"] for line in window["lines"]]
            checks += 1

            error, status = await call("status", {"path": hit["file"]})
            assert not error and "generations" in status, status
            checks += 1

            error, answer = await call("search", {"query": "x", "limit": "many"})
            assert error and answer["error"] == "invalid_arguments", answer
            error, answer = await call("status", {"path": "/etc/passwd"})
            assert error and answer["error"] == "outside_sources", answer
            checks += 1
    return checks


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "transcripts")
        shutil.copytree(os.path.join(HERE, "data", "transcripts"), root)
        env = dict(os.environ, AGENTLOG_CACHE_DIR=os.path.join(tmp, "cache"))
        checks = asyncio.run(run(root, env))
    print(f"mcp: {checks} passed, 0 failed")


if __name__ == "__main__":
    main()
