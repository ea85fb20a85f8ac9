"""The lingtai kernel's wiring tests of its since-molt rebuild that apply to the entry point,
ported to agentlog.lingtai.

Provenance: Lingtai-AI/lingtai-kernel at commit 1b3245e3abe433caaa1cd3c1899f500c40ac4044,
file tests/test_agent_session_wiring.py (Apache License 2.0); ported, not copied.

Applies (ported below): test_refresh_preserves_since_molt_not_lifetime,
test_live_rounds_after_refresh_accrue_on_top_of_since_molt,
test_runtime_and_agent_session_are_not_confused, test_brand_new_agent_rebuild_is_boot_none_tier.
The kernel drives its SessionManager and meta_block after the rebuild; here ``Seeded`` does what
that wiring does with the rebuilt object (``restore_token_state`` seeds the five counters, live
rounds add to them, the since-refresh view starts at zero), so each case is judged on what the
entry point returned.

Does not apply (they exercise kernel internals, not the entry point):
test_runtime_session_object_is_fresh_and_idless, test_agent_session_starts_uninstalled_and_
installs_by_molt_count, test_agent_session_token_usage_reads_since_molt_counters,
test_meta_block_falls_back_to_get_token_usage_without_agent_session_accessor,
test_molt_reanchors_runtime_session_object.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentlog.lingtai import (
    MOLT_BOUNDARY_EVENT,
    TOKEN_EVENT,
    AgentSession,
    rebuild_agent_session_from_events,
)


def _write_events(dest: Path, events: list) -> Path:
    logs = dest / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / "events.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for ev in events:
            f.write(json.dumps(ev, ensure_ascii=False) + "\n")
    return path


def _token_ev(ts: float, inp: int, out: int, cached: int) -> dict:
    return {"type": TOKEN_EVENT, "ts": ts, "input_tokens": inp, "output_tokens": out,
            "thinking_tokens": 10, "cached_tokens": cached}


def _molt_ev(ts: float, molt_count: int, initiator: str = "agent") -> dict:
    return {"type": MOLT_BOUNDARY_EVENT, "ts": ts, "molt_count": molt_count,
            "initiator": initiator}


class Seeded:
    """What the kernel's start-up does with the rebuilt session: seed, then count live rounds."""

    def __init__(self, rebuilt: AgentSession):
        self.totals = AgentSession(
            molt_count=rebuilt.molt_count, api_calls=rebuilt.api_calls,
            input_tokens=rebuilt.input_tokens, output_tokens=rebuilt.output_tokens,
            cached_tokens=rebuilt.cached_tokens, thinking_tokens=rebuilt.thinking_tokens)
        self.since_refresh = AgentSession(molt_count=rebuilt.molt_count)

    def live_round(self, inp: int, cached: int) -> None:
        for view in (self.totals, self.since_refresh):
            view.input_tokens += inp
            view.cached_tokens += cached
            view.api_calls += 1


def test_refresh_preserves_since_molt_not_lifetime(tmp_path):
    _write_events(tmp_path, [
        _token_ev(1.0, 9_000_000, 100, 100), _molt_ev(2.0, 1),
        _token_ev(3.0, 1000, 200, 700), _token_ev(4.0, 1000, 200, 700),
    ])
    rebuilt = rebuild_agent_session_from_events(tmp_path, molt_count=1)
    assert rebuilt.rebuild_tier in ("sqlite", "reverse_scan", "full_scan")
    assert (rebuilt.api_calls, rebuilt.input_tokens, rebuilt.cached_tokens) == (2, 2000, 1400)
    half = Seeded(rebuilt).totals.token_usage()
    assert (half["api_calls"], half["input_tokens"], half["cached_tokens"]) == (2, 2000, 1400)
    assert half["cache_miss_tokens"] == 600
    assert half["input_tokens"] < 9_000_000


def test_live_rounds_after_refresh_accrue_on_top_of_since_molt(tmp_path):
    _write_events(tmp_path, [_molt_ev(1.0, 1), _token_ev(2.0, 1000, 200, 700)])
    rebuilt = rebuild_agent_session_from_events(tmp_path, molt_count=1)
    assert rebuilt.api_calls == 1
    seeded = Seeded(rebuilt)
    seeded.live_round(500, 300)
    usage = seeded.totals.token_usage()
    assert (usage["api_calls"], usage["input_tokens"], usage["cached_tokens"]) == (2, 1500, 1000)


def test_runtime_and_agent_session_are_not_confused(tmp_path):
    _write_events(tmp_path, [_molt_ev(1.0, 1), _token_ev(2.0, 1000, 200, 700),
                             _token_ev(3.0, 1000, 200, 700)])
    seeded = Seeded(rebuild_agent_session_from_events(tmp_path, molt_count=1))
    assert (seeded.totals.api_calls, seeded.totals.input_tokens) == (2, 2000)
    assert (seeded.since_refresh.api_calls, seeded.since_refresh.input_tokens) == (0, 0)
    seeded.live_round(500, 300)
    assert (seeded.totals.api_calls, seeded.totals.input_tokens) == (3, 2500)
    assert (seeded.since_refresh.api_calls, seeded.since_refresh.input_tokens) == (1, 500)


def test_brand_new_agent_rebuild_is_boot_none_tier(tmp_path):
    rebuilt = rebuild_agent_session_from_events(tmp_path, molt_count=0)
    assert rebuilt.rebuild_tier == "none"
    assert rebuilt.boundary_source == "boot"
    assert rebuilt.api_calls == 0
    assert rebuilt.input_tokens == 0
