"""A faithful port of the lingtai kernel's two JSONL tiers of its since-molt rebuild, for the
benchmark only (the kernel's code is not in this repository).

It does what the kernel's reverse scan and full scan do, operation for operation, as described
in docs/PYTHON.md ("The kernel's tiers, as benchmarked"): the reverse scan reads the last 8 MiB
in one read, decodes it with errors="replace", splits it with str.splitlines, drops the first
line unless the read reached byte 0, and walks the lines newest first with json.loads until the
first psyche_molt; the full scan reads the file as text, parses every line, and resets its sums at
each psyche_molt. Token values go through int() as the kernel's do. Neither checks molt_count.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

TOKEN_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "thinking_tokens")
MAX_SCAN_BYTES = 8 * 1024 * 1024


def _as_int(value: Any) -> int:
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _empty() -> Dict[str, int]:
    return {"api_calls": 0, **{k: 0 for k in TOKEN_KEYS}}


def reverse_scan(path: str, max_scan_bytes: int = MAX_SCAN_BYTES) -> Optional[Dict[str, Any]]:
    """The kernel's tier 2: None when no boundary is in the window and the window is not the
    whole file (the kernel then runs its full scan)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        start = max(0, size - max_scan_bytes)
        f.seek(start)
        data = f.read()
    lines = data.decode("utf-8", errors="replace").splitlines()
    if start != 0 and lines:
        lines = lines[1:]
    sums = _empty()
    found = False
    for raw in reversed(lines):
        raw = raw.strip()
        if not raw:
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type") or event.get("event")
        if kind == "psyche_molt":
            found = True
            break
        if kind == "llm_response":
            sums["api_calls"] += 1
            for key in TOKEN_KEYS:
                sums[key] += _as_int(event.get(key))
    if not found and start != 0:
        return None
    return sums


def full_scan(path: str) -> Dict[str, Any]:
    """The kernel's tier 3: the last generation in file order."""
    sums = _empty()
    with open(path, "r", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            kind = event.get("type") or event.get("event")
            if kind == "psyche_molt":
                sums = _empty()
            elif kind == "llm_response":
                sums["api_calls"] += 1
                for key in TOKEN_KEYS:
                    sums[key] += _as_int(event.get(key))
    return sums
