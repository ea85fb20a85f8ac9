"""agentlog.status() and agentlog.generations(): fields, tiers, the labelling rule, CLI parity."""

from __future__ import annotations

import dataclasses

import pytest

import agentlog
from conftest import cli_json, molt, oracle, tok, write_log

STATUS_FIELDS = [
    "agent_dir", "tier", "molt_count", "verified", "expected_molt_count", "expected_from",
    "input_tokens", "output_tokens", "cached_tokens", "thinking_tokens", "api_calls",
    "boundary_offset", "boundary_initiator", "boundary_ts", "boundary_molt_count",
    "index_outcome", "index", "stepped_aside", "bytes_read", "diagnostics",
]


def two_generations(agent, manifest=1):
    return write_log(
        agent,
        [tok(500, 100, 300, 10), molt(1, "system", ts=1786000120.5), tok(1000, 200, 700, 10),
         tok(1234, 200, 800, 10)],
        manifest=manifest,
    )


def test_status_answers_the_current_generation_as_the_oracle(agent):
    path = two_generations(agent)
    s = agentlog.status(agent)
    want = oracle(path)
    assert (s.api_calls, s.input_tokens, s.output_tokens, s.cached_tokens, s.thinking_tokens) == (
        want["api_calls"], want["input_tokens"], want["output_tokens"], want["cached_tokens"],
        want["thinking_tokens"])
    assert s.molt_count == 1 and s.verified and s.tier == "index"
    assert s.expected_molt_count == 1 and s.expected_from == "manifest"
    assert s.boundary_initiator == "system" and s.boundary_molt_count == 1
    assert s.boundary_ts == 1786000120.5
    assert s.boundary_offset == path.read_bytes().index(b'{"type": "psyche_molt"')
    assert s.index_outcome in ("created", "fresh")


def test_to_dict_has_exactly_the_cli_fields_in_order(agent):
    two_generations(agent)
    s = agentlog.status(agent)
    d = s.to_dict()
    assert list(d) == STATUS_FIELDS
    for name in STATUS_FIELDS:
        assert getattr(s, name) == d[name], name


def test_to_dict_equals_the_cli_json(agent):
    two_generations(agent)
    agentlog.status(agent)  # both answer from the same, now fresh, index
    code, cli = cli_json("status", str(agent))
    assert code == 0
    assert agentlog.status(agent).to_dict() == cli


def test_generations_equal_the_cli_json(agent):
    two_generations(agent)
    rows = agentlog.generations(agent)
    assert [r["molt_count"] for r in rows] == [0, 1]
    assert rows[0]["boundary_initiator"] == "boot" and rows[0]["input_tokens"] == 500
    assert rows[1]["api_calls"] == 2 and rows[1]["input_tokens"] == 2234
    code, cli = cli_json("generations", str(agent))
    assert code == 0 and rows == cli


def test_status_is_immutable_comparable_and_hashable(agent):
    two_generations(agent)
    a, b = agentlog.status(agent), agentlog.status(agent)
    with pytest.raises(AttributeError):
        a.api_calls = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        dataclasses.asdict(a)  # not a dataclass: to_dict() is the way out
    assert a.to_dict() is not a.to_dict()
    assert "api_calls=2" in repr(a)
    assert (a == b) == (a.to_dict() == b.to_dict())
    assert isinstance(hash(a), int)
    assert a != "not a status"


@pytest.mark.parametrize("tier", ["index", "reverse_scan", "full_scan"])
def test_every_tier_gives_the_same_totals(agent, tier):
    two_generations(agent)
    s = agentlog.status(agent, tier=tier)
    assert s.tier == tier
    assert (s.api_calls, s.input_tokens) == (2, 2234)
    assert (s.index_outcome is None) == (tier != "index")


def test_reverse_scan_steps_aside_to_the_full_scan_and_says_why(agent):
    write_log(agent, [molt(1)] + [tok(10)] * 50, manifest=1)
    s = agentlog.status(agent, tier="reverse_scan", reverse_scan_bytes=200)
    assert s.tier == "full_scan" and s.api_calls == 50
    assert [step["tier"] for step in s.stepped_aside] == ["reverse_scan"]
    assert "200 bytes" in s.stepped_aside[0]["reason"]


def test_molt_count_argument_wins_over_the_manifest(agent):
    two_generations(agent, manifest=7)
    s = agentlog.status(agent, 1)
    assert s.expected_from == "flag" and s.verified
    with pytest.raises(agentlog.MoltMismatch):
        agentlog.status(agent)


def test_without_manifest_or_argument_the_latest_generation_is_unverified(agent):
    two_generations(agent, manifest=None)
    s = agentlog.status(agent)
    assert s.molt_count == 1 and not s.verified and s.expected_from is None


def test_manifest_without_molt_count_means_generation_zero(agent):
    write_log(agent, [tok(5)])
    (agent / ".agent.json").write_text('{"name": "alice"}')
    s = agentlog.status(agent)
    assert s.expected_molt_count == 0 and s.verified and s.api_calls == 1


def test_legacy_boundary_is_trusted_only_when_asked(agent):
    write_log(agent, [tok(1), molt(None), tok(7)])
    with pytest.raises(agentlog.MoltMismatch) as e:
        agentlog.status(agent, 3)
    assert e.value.found is None
    s = agentlog.status(agent, 3, trust_legacy_boundaries=True)
    assert s.molt_count == 3 and not s.verified and s.input_tokens == 7


def test_coercion_rule_and_its_diagnostics(agent):
    write_log(agent, [
        {"type": "llm_response", "input_tokens": "12.7", "output_tokens": 3.9,
         "cached_tokens": None, "thinking_tokens": "-4"},
        {"type": "llm_response", "input_tokens": True, "output_tokens": 2**60},
    ])
    s = agentlog.status(agent, 0)
    assert (s.input_tokens, s.output_tokens, s.cached_tokens, s.thinking_tokens) == (12, 3, 0, 0)
    assert s.diagnostics["token_values_truncated"] == 2
    # Present and unusable: null, "-4", True, 2**60; the two fields left out are not counted.
    assert s.diagnostics["token_values_zeroed"] == 4


def test_a_torn_line_is_skipped_not_merged(agent):
    # The first write tore (no newline); the writer terminates the fragment before the next.
    write_log(agent, [b'{"type": "llm_response", "input_tokens": 4', b"\n", tok(100)])
    s = agentlog.status(agent, 0)
    assert s.api_calls == 1 and s.input_tokens == 100
    assert s.diagnostics["invalid_lines"] == 1


def test_the_log_keyword_names_another_log_file(tmp_path):
    log = write_log(tmp_path / "elsewhere", [molt(1), tok(9)])
    s = agentlog.status(tmp_path / "agent-dir-without-log", 1, log=log)
    assert s.input_tokens == 9


def test_generations_without_a_log_raise_no_log(agent):
    with pytest.raises(agentlog.NoLog):
        agentlog.generations(agent)


def test_the_index_catches_up_after_another_program_appends(agent):
    path = two_generations(agent)
    assert agentlog.status(agent).api_calls == 2
    with open(path, "ab") as f:
        f.write(b'{"type": "llm_response", "input_tokens": 1}\n')
    s = agentlog.status(agent)
    assert s.api_calls == 3 and s.input_tokens == 2235


def test_a_rewritten_log_is_never_answered_from_the_stale_index(agent):
    path = two_generations(agent)
    agentlog.status(agent)
    data = path.read_bytes().replace(b'"input_tokens": 1234', b'"input_tokens": 4321')
    path.write_bytes(data)  # same length, rewritten in place
    assert agentlog.status(agent).input_tokens == 1000 + 4321


def test_the_benchmark_helpers_answer_as_status_and_time_each_call(agent):
    # _status_timed and _status_loop feed the overhead figure (bench/bench_status.py): the
    # call they time must be status()'s, and every call must be timed.
    from agentlog._agentlog import _status_loop, _status_timed

    two_generations(agent)
    assert agentlog.status(agent, 1).index_outcome == "created"
    s, inner = _status_timed(agent, 1)
    assert s == agentlog.status(agent, 1) and s.index_outcome == "fresh"
    assert 0 < inner < 60
    # The same parameters as status(), so the benchmark times the same argument parsing.
    scanned, _ = _status_timed(agent, 1, "reverse_scan", reverse_scan_bytes=1 << 20)
    assert scanned.tier == "reverse_scan" and scanned.api_calls == s.api_calls
    seconds = _status_loop(agent, 1, 5)
    assert len(seconds) == 5 and all(0 < t < 60 for t in seconds)
    assert _status_loop(agent, 1, 0) == []
    with pytest.raises(agentlog.MoltMismatch):
        _status_loop(agent, 7, 3)
    with pytest.raises(agentlog.NoLog):
        _status_loop(agent / "nowhere", None, 3)
