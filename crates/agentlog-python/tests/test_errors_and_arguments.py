"""Every exception class, its attributes and codes; bad arguments; paths of every kind."""

from __future__ import annotations

import os
import pathlib

import pytest

import agentlog
from conftest import molt, tok, write_log

HIERARCHY = {
    "GenerationError": "AgentlogError", "NoLog": "GenerationError",
    "MoltMismatch": "GenerationError", "ManifestError": "GenerationError",
    "LogError": "AgentlogError", "NotAFile": "LogError", "Locked": "LogError",
    "InvalidEvent": "LogError", "IndexFailure": "AgentlogError", "IndexBusy": "IndexFailure",
    "IndexDamaged": "IndexFailure", "QueryError": "AgentlogError", "NoStore": "QueryError",
    "SessionNotFound": "QueryError", "EventNotFound": "QueryError",
    "InvalidQuery": "QueryError", "CorruptSession": "QueryError",
    "InvalidCursor": "InvalidQuery", "StaleCursor": "InvalidCursor",
    "SearchIndexFailed": "QueryError",
    "TranscriptError": "AgentlogError", "NoTranscript": "TranscriptError",
    "EmptyTranscript": "TranscriptError", "UnknownFormat": "TranscriptError",
}


def test_the_hierarchy_mirrors_the_rust_error_enums():
    assert issubclass(agentlog.AgentlogError, Exception)
    for name, parent in HIERARCHY.items():
        cls = getattr(agentlog, name)
        assert cls.__bases__ == (getattr(agentlog, parent),), name
        assert cls.__module__ == "agentlog" and cls.__doc__, name
    assert agentlog.IndexFailure is not IndexError  # the built-in is not shadowed


def test_no_log(agent):
    with pytest.raises(agentlog.NoLog) as e:
        agentlog.status(agent)
    assert e.value.code == "no_log" and e.value.path.endswith("events.jsonl")
    with pytest.raises(agentlog.NoLog):
        agentlog.status(agent / "does" / "not" / "exist")


def test_molt_mismatch_carries_expected_found_offset_tier(agent):
    path = write_log(agent, [tok(1), molt(1), tok(2)])
    with pytest.raises(agentlog.MoltMismatch) as e:
        agentlog.status(agent, 2)
    m = e.value
    assert (m.expected, m.found, m.tier, m.code) == (2, 1, "index", "molt_mismatch")
    assert m.boundary_offset == path.read_bytes().index(b'{"type": "psyche_molt"')
    assert "expected 2" in str(m)
    with pytest.raises(agentlog.MoltMismatch) as e:
        agentlog.status(agent, 2, tier="full_scan")
    assert e.value.tier == "full_scan"


def test_molt_mismatch_without_any_boundary(agent):
    write_log(agent, [tok(1)])
    with pytest.raises(agentlog.MoltMismatch) as e:
        agentlog.status(agent, 1)
    assert e.value.found is None and e.value.boundary_offset is None


@pytest.mark.parametrize("manifest", ["not json", "[1]", '{"molt_count": -1}', '{"molt_count": "2"}'])
def test_manifest_error(agent, manifest):
    write_log(agent, [tok(1)])
    (agent / ".agent.json").write_text(manifest)
    with pytest.raises(agentlog.ManifestError) as e:
        agentlog.status(agent)
    assert e.value.code == "bad_manifest" and e.value.path.endswith(".agent.json")
    assert agentlog.status(agent, 0).api_calls == 1  # an explicit molt_count needs no manifest


def test_an_index_path_that_cannot_be_used_is_index_failure(agent):
    write_log(agent, [tok(1)])
    (agent / "logs" / "events.index.redb").mkdir()
    with pytest.raises(agentlog.IndexFailure) as e:
        agentlog.Writer(agent)
    assert e.value.code == "index_error"
    # A reader steps around it instead, and says so.
    s = agentlog.status(agent, 0)
    assert s.tier == "reverse_scan" and s.stepped_aside[0]["tier"] == "index"


@pytest.mark.parametrize("bad", [1, 2.5, None, ["a"], object()])
def test_path_arguments_of_the_wrong_type(bad):
    with pytest.raises(TypeError, match="agent_dir must be a str, bytes or os.PathLike"):
        agentlog.status(bad)
    with pytest.raises(TypeError):
        agentlog.generations(bad)
    with pytest.raises(TypeError):
        agentlog.Store(bad)


def test_empty_and_nul_paths_are_value_errors():
    for bad in ("", b"", b"a\x00b"):
        with pytest.raises(ValueError):
            agentlog.status(bad)


@pytest.mark.parametrize("bad", [True, -1, 2**64, 1.0, "1"])
def test_molt_count_must_be_an_int_in_range(agent, bad):
    write_log(agent, [tok(1)])
    with pytest.raises((TypeError, ValueError)):
        agentlog.status(agent, bad)


def test_unknown_tier_is_a_value_error(agent):
    write_log(agent, [tok(1)])
    with pytest.raises(ValueError, match="tier must be"):
        agentlog.status(agent, 0, "sqlite")


def test_every_path_form_works(agent):
    write_log(agent, [tok(3)])
    for form in (str(agent), agent, os.fsencode(agent), pathlib.PurePosixPath(agent)):
        assert agentlog.status(form, 0).input_tokens == 3


class FsPath:
    def __init__(self, p):
        self.p = p

    def __fspath__(self):
        return self.p


def test_any_os_pathlike_works(agent):
    write_log(agent, [tok(3)])
    assert agentlog.status(FsPath(str(agent)), 0).input_tokens == 3
    assert agentlog.status(FsPath(os.fsencode(agent)), 0).input_tokens == 3


@pytest.mark.skipif(os.name != "posix", reason="non-UTF-8 file names are a POSIX matter")
def test_non_utf8_paths_work_as_bytes_and_as_surrogate_escaped_str(tmp_path):
    raw = os.fsencode(tmp_path) + b"/agent-\xff\xfe"
    try:
        os.mkdir(raw)
    except OSError as e:  # a file system that refuses such names
        pytest.skip(f"this file system refuses non-UTF-8 names: {e}")
    with agentlog.Writer(raw) as w:
        w.append(tok(11))
    assert agentlog.status(raw, 0).input_tokens == 11
    escaped = os.fsdecode(raw)  # the surrogateescape form Python gives for such names
    assert agentlog.status(escaped, 0).input_tokens == 11
    assert agentlog.generations(raw)[0]["input_tokens"] == 11
    with pytest.raises(agentlog.NoLog) as e:
        agentlog.status(raw + b"-missing")
    assert os.fsencode(e.value.path).startswith(raw)
