"""Shared fixtures: agent directories written line by line, and the naive oracle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable, Optional

import pytest

REPO = Path(__file__).resolve().parents[3]


def write_log(agent_dir: Path, lines: Iterable, manifest: Optional[int] = None) -> Path:
    """Writes ``agent_dir/logs/events.jsonl``: dicts as the kernel writes them, str/bytes raw."""
    logs = agent_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / "events.jsonl"
    with open(path, "wb") as f:
        for line in lines:
            if isinstance(line, dict):
                f.write((json.dumps(line, ensure_ascii=False) + "\n").encode())
            elif isinstance(line, str):
                f.write(line.encode())
            else:
                f.write(line)
    if manifest is not None:
        (agent_dir / ".agent.json").write_text(json.dumps({"molt_count": manifest}))
    return path


def tok(inp: int, out: int = 0, cached: int = 0, thinking: int = 0, ts: float = 1.0) -> dict:
    return {
        "type": "llm_response",
        "ts": ts,
        "input_tokens": inp,
        "output_tokens": out,
        "cached_tokens": cached,
        "thinking_tokens": thinking,
    }


def molt(molt_count, initiator: Optional[str] = None, ts: float = 2.0) -> dict:
    ev = {"type": "psyche_molt", "ts": ts, "molt_count": molt_count}
    if initiator is not None:
        ev["initiator"] = initiator
    return ev


def oracle(path: Path) -> dict:
    """The naive answer: sums of integer token values after the last boundary, file order."""
    totals = dict(api_calls=0, input_tokens=0, output_tokens=0, cached_tokens=0, thinking_tokens=0)
    molt_count = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            kind = ev.get("type") or ev.get("event")
            if kind == "psyche_molt":
                totals = {k: 0 for k in totals}
                molt_count = ev.get("molt_count")
            elif kind == "llm_response":
                totals["api_calls"] += 1
                for k in ("input_tokens", "output_tokens", "cached_tokens", "thinking_tokens"):
                    v = ev.get(k)
                    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 2**53:
                        totals[k] += v
    totals["molt_count"] = molt_count
    return totals


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    d = tmp_path / "agent"
    d.mkdir()
    return d


def cli() -> Optional[Path]:
    """The agentlog CLI of this checkout, if built (AGENTLOG_CLI overrides)."""
    given = os.environ.get("AGENTLOG_CLI")
    if given:
        return Path(given)
    for profile in ("release", "debug"):
        exe = REPO / "target" / profile / "agentlog"
        if exe.is_file():
            return exe
    found = shutil.which("agentlog")
    return Path(found) if found else None


def cli_json(*args: str) -> tuple:
    exe = cli()
    if exe is None:
        pytest.skip("the agentlog CLI is not built (cargo build --bin agentlog, or set AGENTLOG_CLI)")
    done = subprocess.run([str(exe), *args, "--json"], capture_output=True, check=False)
    return done.returncode, json.loads(done.stdout)
