"""agentlog.lingtai: the kernel's contract (name, signature, type, tier vocabulary), and each
documented difference from the kernel's answer (docs/PYTHON.md, "Differences from the kernel")."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import sqlite3
import sys
import types

import pytest

import agentlog
import agentlog.lingtai as lingtai
from agentlog.lingtai import AgentSession, rebuild_agent_session_from_events as rebuild
from conftest import molt, tok, write_log

# The kernel's contract, as its agent_session.py declares it.
KERNEL_PARAMETERS = [
    ("agent_dir", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
    ("molt_count", "KEYWORD_ONLY", inspect.Parameter.empty),
    ("sqlite_query_fn", "KEYWORD_ONLY", None),
    ("events_path", "KEYWORD_ONLY", None),
    ("sqlite_path", "KEYWORD_ONLY", None),
    ("allow_full_scan", "KEYWORD_ONLY", True),
    ("logger_fn", "KEYWORD_ONLY", None),
]
KERNEL_FIELDS = [
    ("molt_count", dataclasses.MISSING), ("started_at", None), ("boundary_source", "boot"),
    ("boundary_offset", None), ("api_calls", 0), ("input_tokens", 0), ("output_tokens", 0),
    ("cached_tokens", 0), ("thinking_tokens", 0), ("rebuild_tier", "none"),
    ("rebuild_events_scanned", 0),
]


def test_the_entry_point_has_the_kernels_signature():
    params = inspect.signature(rebuild).parameters.values()
    assert [(p.name, p.kind.name, p.default) for p in params] == KERNEL_PARAMETERS


def test_the_session_type_has_the_kernels_fields_and_views():
    assert [(f.name, f.default) for f in dataclasses.fields(AgentSession)] == KERNEL_FIELDS
    s = AgentSession(molt_count=1, api_calls=3, input_tokens=900, cached_tokens=1000)
    assert s.cache_miss_tokens == 0 and s.cache_rate == 1.0
    assert s.avg_input_tokens_per_api_call == 300
    assert set(s.token_usage()) == {"session_cache_rate", "api_calls", "input_tokens",
                                    "cached_tokens", "cache_miss_tokens",
                                    "avg_input_tokens_per_api_call"}
    assert (lingtai.MOLT_BOUNDARY_EVENT, lingtai.TOKEN_EVENT) == ("psyche_molt", "llm_response")
    assert lingtai.DEFAULT_MAX_SCAN_BYTES == 8 * 1024 * 1024


def test_the_kernels_own_types_are_used_when_it_is_importable(agent, monkeypatch):
    @dataclasses.dataclass
    class KernelSession(AgentSession):  # stands for lingtai.kernel.agent_session.AgentSession
        pass

    fake = types.ModuleType("lingtai.kernel.agent_session")
    fake.AgentSession = KernelSession
    for name in ("RuntimeSession", "MOLT_BOUNDARY_EVENT", "TOKEN_EVENT", "new_runtime_session",
                 "DEFAULT_MAX_SCAN_BYTES"):
        setattr(fake, name, getattr(lingtai, name))
    for name in ("lingtai", "lingtai.kernel"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "lingtai.kernel.agent_session", fake)
    try:
        reloaded = importlib.reload(lingtai)
        assert reloaded.KERNEL_TYPES and reloaded.AgentSession is KernelSession
        write_log(agent, [tok(5)])
        assert type(reloaded.rebuild_agent_session_from_events(agent, molt_count=0)) is KernelSession
    finally:
        monkeypatch.undo()
        importlib.reload(lingtai)
    assert not lingtai.KERNEL_TYPES


def test_answers_carry_the_kernels_tier_names(agent):
    write_log(agent, [tok(1), molt(1, ts=1786000120.5), tok(2)])
    assert rebuild(agent, molt_count=1).rebuild_tier == "sqlite"  # our index tier
    assert {rebuild(agent, molt_count=1).rebuild_tier for _ in range(3)} <= {
        "sqlite", "reverse_scan", "full_scan"}


def test_started_at_and_boundary_offset_in_every_tier(agent):
    """Difference: the kernel's scan tiers give started_at as str(raw ts) and no offset."""
    path = write_log(agent, [tok(1), molt(1, ts=1786000120.5), tok(2)])
    s = rebuild(agent, molt_count=1)
    assert s.started_at == "2026-08-06T07:08:40.500000Z"
    assert s.boundary_offset == path.read_bytes().index(b'{"type": "psyche_molt"')
    assert s.rebuild_events_scanned == s.api_calls == 1
    assert rebuild(agent, molt_count=1).started_at == s.started_at


def test_crash_window_gives_none_not_the_previous_generation(agent):
    """Difference (kernel issue #1546): manifest says 2, the log's latest boundary says 1. The
    kernel's scans return generation 1's totals labelled 2."""
    write_log(agent, [tok(50), molt(1), tok(100)], manifest=2)
    seen = []
    s = rebuild(agent, molt_count=2, logger_fn=lambda event, **kw: seen.append((event, kw)))
    assert (s.rebuild_tier, s.api_calls, s.input_tokens, s.molt_count) == ("none", 0, 0, 2)
    assert seen == [("agent_session_rebuild_mismatch",
                     {"molt_count": 2, "found": 1, "boundary_offset": seen[0][1]["boundary_offset"],
                      "reason": seen[0][1]["reason"]})]
    assert isinstance(seen[0][1]["boundary_offset"], int)
    with pytest.raises(agentlog.MoltMismatch):
        agentlog.status(agent)  # the Rust API and status() keep the typed error


def test_molt_count_zero_on_a_molted_log_is_none(agent):
    """Difference: the kernel labels the latest generation 0."""
    write_log(agent, [tok(5), molt(1), tok(7)])
    assert rebuild(agent, molt_count=0).rebuild_tier == "none"


def test_a_stale_sidecar_is_never_consulted(agent):
    """Difference: a sidecar that lags the log (disabled mid-process) made the kernel's tier 1
    undercount silently; the drop-in reads the log through its validated index."""
    write_log(agent, [molt(1), tok(100), tok(200), tok(300)])
    with sqlite3.connect(agent / "logs" / "log.sqlite") as db:
        db.execute("CREATE TABLE events (ts REAL, type TEXT, fields_json TEXT, source_offset INTEGER)")
        db.execute("INSERT INTO events VALUES (2, 'psyche_molt', ?, 0)", (json.dumps({"molt_count": 1}),))
        db.execute("INSERT INTO events VALUES (3, 'llm_response', ?, 40)", (json.dumps({"input_tokens": 100}),))

    def never(sql):
        raise AssertionError("the sidecar query function must not be called")

    s = rebuild(agent, molt_count=1, sqlite_query_fn=never, sqlite_path=agent / "logs" / "log.sqlite")
    assert (s.api_calls, s.input_tokens) == (3, 600)


def test_torn_line_is_not_merged_with_the_next_event(agent):
    """Difference: the kernel's writer appends onto a torn fragment, and its scans then lose
    both events; agentlog.Writer ends the fragment first, so the new event counts."""
    write_log(agent, [tok(100), b'{"type": "llm_response", "input_tok'])
    with agentlog.Writer(agent) as w:
        w.append(tok(400))
    s = rebuild(agent, molt_count=0)
    assert (s.api_calls, s.input_tokens) == (2, 500)
    assert agentlog.status(agent, 0).diagnostics["invalid_lines"] == 1


@pytest.mark.parametrize("value, ours", [
    ("12.7", 12), (3.9, 3), (None, 0), (" 12", 0), ("1_000", 0), ("+12", 0), (True, 0),
    (-5, 0), ("12abc", 0), (2**60, 0),
])
def test_token_values_follow_the_coercion_rule(agent, value, ours):
    """Difference: the kernel's scans use int() ("1_000" -> 1000, " 12" -> 12, True -> 1,
    negatives subtract, "12.7" -> 0) and its tier 1 SQLite CAST ("12abc" -> 12)."""
    write_log(agent, [{"type": "llm_response", "input_tokens": value}, tok(1000)])
    assert rebuild(agent, molt_count=0).input_tokens == 1000 + ours


def test_infinite_token_values_are_invalid_lines_instead_of_raising(agent):
    """Difference: the kernel's scans accept Infinity and 1e400 (Python's json) and then let
    OverflowError escape; neither is JSON, so both lines are invalid lines here."""
    write_log(agent, ['{"type": "llm_response", "input_tokens": Infinity}\n',
                      '{"type": "llm_response", "input_tokens": 1e400}\n', tok(7)])
    s = rebuild(agent, molt_count=0)
    assert (s.api_calls, s.input_tokens) == (1, 7)
    assert agentlog.status(agent, 0).diagnostics["invalid_lines"] == 2


def test_a_line_separator_inside_a_boundary_does_not_hide_it(agent):
    """Difference: the kernel's reverse scan splits lines on U+2028 too, misses such a
    boundary and sums two generations."""
    write_log(agent, [tok(9000), {"type": "psyche_molt", "molt_count": 1, "note": "a\u2028b"}, tok(5)])
    s = rebuild(agent, molt_count=1)
    assert (s.api_calls, s.input_tokens) == (1, 5)


def test_an_invalid_utf8_line_is_skipped_not_fatal(agent):
    """Difference: the kernel's full scan decodes strictly and raises on one bad byte."""
    write_log(agent, [tok(1), b'{"type": "llm_response", "input_tokens": 5, "x": "\xff"}\n', tok(2)])
    s = agentlog.status(agent, 0, tier="full_scan")
    assert s.input_tokens == 3 and s.diagnostics["invalid_lines"] == 1
    assert rebuild(agent, molt_count=0).input_tokens == 3


def test_file_order_not_clock_order(agent):
    """Difference: the kernel's tier 1 sums responses with ts >= the boundary's ts."""
    write_log(agent, [tok(7, ts=11.0), molt(1, ts=10.0), tok(100, ts=5.0), tok(200, ts=11.0)])
    assert rebuild(agent, molt_count=1).input_tokens == 300


def test_allow_full_scan_false_gives_none_when_only_the_full_scan_could_answer(agent):
    write_log(agent, [tok(1)] * 10)
    (agent / "logs" / "events.index.redb").mkdir()  # no index can be made here
    calls = []
    assert rebuild(agent, molt_count=0).rebuild_tier == "reverse_scan"
    big = agent / "big"
    write_log(big, [molt(1)] + [tok(1)] * 200)
    (big / "logs" / "events.index.redb").mkdir()
    s = agentlog.status(big, 1, tier="index", reverse_scan_bytes=100)
    assert s.tier == "full_scan"
    # The drop-in uses the default 8 MiB reverse scan, which finds this boundary; force the
    # full scan through a log the reverse scan cannot place: no boundary, over 8 MiB.
    huge = agent / "huge"
    write_log(huge, [tok(1)] * 120_000)
    (huge / "logs" / "events.index.redb").mkdir()
    full = rebuild(huge, molt_count=0, logger_fn=lambda e, **kw: calls.append((e, kw)))
    assert full.rebuild_tier == "full_scan" and full.api_calls == 120_000
    assert calls and calls[0][0] == "agent_session_rebuild_fullscan"
    assert calls[0][1]["molt_count"] == 0 and "reverse_scan" in calls[0][1]["reason"]
    none = rebuild(huge, molt_count=0, allow_full_scan=False)
    assert (none.rebuild_tier, none.api_calls) == ("none", 0)


def test_events_path_names_the_log(tmp_path):
    log = write_log(tmp_path / "other", [molt(3), tok(8)])
    s = rebuild(tmp_path / "agent", molt_count=3, events_path=log)
    assert (s.rebuild_tier, s.input_tokens) == ("sqlite", 8)


def test_bad_molt_count_raises(agent):
    write_log(agent, [tok(1)])
    with pytest.raises(TypeError):
        rebuild(agent, molt_count="1")
    with pytest.raises(ValueError):
        rebuild(agent, molt_count=-1)
    with pytest.raises(TypeError):
        rebuild(agent, 1)  # molt_count is keyword-only, as in the kernel
