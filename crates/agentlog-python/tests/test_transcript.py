"""agentlog.transcript: its `to_dict()` is the CLI's `transcript --json` document; its errors; files
left alone."""

from __future__ import annotations

import hashlib
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import agentlog
from conftest import REPO, cli_json
from test_store import key_orders

DATA = REPO / "tests" / "data" / "transcripts"


def transcript_doc(*args, **kwargs) -> dict:
    """`agentlog.transcript(...)` as the CLI's document (its `to_dict()`)."""
    return agentlog.transcript(*args, **kwargs).to_dict()


FILES = sorted(p.relative_to(DATA).as_posix() for p in DATA.rglob("*.jsonl"))


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    """The vendored real transcripts, copied (they are never edited in place)."""
    if not DATA.is_dir():
        pytest.skip(f"{DATA} is absent: the vendored transcripts are not in this checkout")
    out = tmp_path / "transcripts"
    shutil.copytree(DATA, out)
    return out


def snapshot(directory: Path) -> dict:
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_the_vendored_transcripts_are_found():
    assert len(FILES) >= 10 or not DATA.is_dir()


@pytest.mark.parametrize("name", FILES)
def test_every_transcript_equals_the_cli_json(copies, tmp_path, name):
    path, index = copies / name, tmp_path / "index"
    first = transcript_doc(path, index_dir=index)
    assert first["path"] == str(path.resolve()) or first["path"] == str(path)
    # Both read the same caught-up index, so even its outcome is the same.
    ours = transcript_doc(path, index_dir=index)
    code, theirs = cli_json("transcript", str(path), "--index-dir", str(index))
    assert code == 0
    assert ours == theirs
    assert key_orders(ours) == key_orders(theirs)
    assert ours["lines"] == first["lines"] and ours["lifetime"] == first["lifetime"]


@pytest.mark.parametrize("name", [n for n in FILES if n.startswith("codex/")])
def test_a_codex_lifetime_is_its_last_cumulative_total(copies, tmp_path, name):
    # The naive oracle: without a counter reset, the lifetime is the last cumulative total.
    path = copies / name
    totals = []
    for raw in path.read_bytes().splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        payload = line.get("payload") if isinstance(line, dict) else None
        if isinstance(payload, dict) and payload.get("type") == "token_count":
            info = payload.get("info")
            if isinstance(info, dict):
                totals.append(info["total_token_usage"]["total_tokens"])
    assert totals == sorted(totals), "a counter reset: the oracle does not apply"
    doc = transcript_doc(path, index_dir=tmp_path / "index")
    assert doc["format"] == "codex"
    assert doc["lifetime"]["total_tokens"] == (totals[-1] if totals else 0)


def test_subagents_equal_the_cli_and_add_up(copies, tmp_path):
    path = copies / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    index = tmp_path / "index"
    transcript_doc(path, subagents=True, index_dir=index)
    ours = transcript_doc(path, subagents=True, index_dir=index)
    code, theirs = cli_json("transcript", str(path), "--subagents", "--index-dir", str(index))
    assert code == 0 and ours == theirs
    assert len(ours["subagents"]) == 2
    assert all("lifetime" in s for s in ours["subagents"])
    assert ours["lifetime_with_subagents"]["total_tokens"] > ours["lifetime"]["total_tokens"]
    assert "subagents" not in transcript_doc(path, index_dir=index)


def test_nothing_is_written_beside_a_transcript(copies, tmp_path):
    before = snapshot(copies)
    for name in FILES:
        transcript_doc(copies / name, index_dir=tmp_path / "index")
    transcript_doc(copies / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
                        subagents=True, index_dir=tmp_path / "index")
    assert snapshot(copies) == before
    assert any((tmp_path / "index").rglob("*"))


def test_a_grown_transcript_is_caught_up(copies, tmp_path):
    path = copies / "codex" / "agentlogs-crud.jsonl"
    index = tmp_path / "index"
    first = transcript_doc(path, index_dir=index)
    lines = path.read_bytes().splitlines(keepends=True)
    grown = tmp_path / "grown.jsonl"
    grown.write_bytes(b"".join(lines[: len(lines) // 2]))
    half = transcript_doc(grown, index_dir=index)
    with open(grown, "ab") as f:
        f.write(b"".join(lines[len(lines) // 2:]))
    whole = transcript_doc(grown, index_dir=index)
    assert (half["index_outcome"], whole["index_outcome"]) == ("created", "caught_up")
    # Only the appended bytes are read on the catch-up.
    assert whole["index"]["bytes"] == grown.stat().st_size - half["covered_bytes"]
    for key in ("lifetime", "since_compaction", "generations", "boundaries", "lines"):
        assert whole[key] == first[key], key
    code, theirs = cli_json("transcript", str(grown), "--index-dir", str(index))
    assert code == 0 and theirs == transcript_doc(grown, index_dir=index)


def test_format_overrides_detection(copies, tmp_path):
    path = copies / "pi" / "agentlogs-branched.jsonl"
    assert transcript_doc(path, index_dir=tmp_path / "i")["format"] == "pi"
    forced = transcript_doc(path, format="codex", index_dir=tmp_path / "i")
    assert forced["format"] == "codex"
    code, theirs = cli_json("transcript", str(path), "--format", "codex",
                            "--index-dir", str(tmp_path / "i"))
    assert code == 0 and theirs == transcript_doc(path, format="codex",
                                                       index_dir=tmp_path / "i")


def test_threads_reading_one_transcript_agree(copies, tmp_path):
    path = copies / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    with ThreadPoolExecutor(6) as pool:
        docs = list(pool.map(
            lambda _: transcript_doc(path, index_dir=tmp_path / "i")["lifetime"], range(18)))
    assert all(d == docs[0] for d in docs)


def test_errors_carry_the_cli_codes(copies, tmp_path):
    index = ["--index-dir", str(tmp_path / "i")]
    cases = [
        (tmp_path / "absent.jsonl", agentlog.NoTranscript, "no_transcript", {}),
        (tmp_path, agentlog.TranscriptError, "not_a_file", {}),
        (tmp_path / "empty.jsonl", agentlog.EmptyTranscript, "empty_transcript", {}),
        (tmp_path / "torn.jsonl", agentlog.EmptyTranscript, "empty_transcript", {}),
        (tmp_path / "other.jsonl", agentlog.UnknownFormat, "unknown_format", {}),
        (copies / "codex" / "agentlogs-crud.jsonl", agentlog.TranscriptError, "bad_input",
         {"subagents": True}),
    ]
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "torn.jsonl").write_bytes(b'{"type": "user"')
    (tmp_path / "other.jsonl").write_text('{"hello": "world"}\n' * 5)
    for path, cls, code, kwargs in cases:
        with pytest.raises(cls) as e:
            transcript_doc(path, index_dir=tmp_path / "i", **kwargs)
        assert e.value.code == code and isinstance(e.value, agentlog.AgentlogError), code
        assert e.value.path == str(path), code
        flags = ["--subagents"] if kwargs else []
        exit_code, theirs = cli_json("transcript", str(path), *flags, *index)
        assert theirs["error"] == code and exit_code != 0, code
    # pass a format and an unknown file is read as that format
    assert transcript_doc(tmp_path / "other.jsonl", format="pi",
                               index_dir=tmp_path / "i")["lines"] == 5


@pytest.mark.parametrize("kwargs,error", [
    ({"format": "claude"}, ValueError),
    ({"format": None}, TypeError),
    ({"subagents": "yes"}, TypeError),
    ({"index_dir": 3}, TypeError),
])
def test_bad_arguments(copies, kwargs, error):
    with pytest.raises(error):
        transcript_doc(copies / "pi" / "agentlogs-branched.jsonl", **kwargs)


def test_paths_of_every_kind(copies, tmp_path):
    path = copies / "pi" / "agentlogs-branched.jsonl"
    index = tmp_path / "i"
    transcript_doc(path, index_dir=index)  # built; the calls below find it current
    as_path = transcript_doc(path, index_dir=index)
    assert as_path["index_outcome"] == "fresh"
    assert transcript_doc(str(path), index_dir=str(index)) == as_path
    assert transcript_doc(bytes(path), index_dir=bytes(index)) == as_path
    with pytest.raises(TypeError):
        transcript_doc(3)


def test_the_documented_example_runs(copies, capsys, monkeypatch, tmp_path):
    # docs/PYTHON.md's transcript example, run as written on a session with subagents (the
    # cache directory moved into the test's own directory).
    import re

    monkeypatch.setenv("AGENTLOG_CACHE_DIR", str(tmp_path / "cache"))
    doc = (REPO / "docs" / "PYTHON.md").read_text(encoding="utf-8")
    section = doc.split("### Transcripts", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "docs/PYTHON.md lost its transcript example"
    session_file = copies / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    exec(compile(code.group(1), "PYTHON.md", "exec"),
         {"agentlog": agentlog, "session_file": session_file})
    since, lifetime = (int(x) for x in capsys.readouterr().out.split())
    assert 0 < since < lifetime
    assert any((tmp_path / "cache").rglob("*"))


def test_a_gone_transcript_is_read_from_the_archive(copies, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLOG_DATA_DIR", str(tmp_path / "data"))
    path, index = copies / "claude-code" / "agentlogs-crud.jsonl", tmp_path / "index"
    before = agentlog.transcript(path, index_dir=index)
    assert before.from_archive is None
    code, _ = cli_json("archive", str(path))
    assert code == 0
    path.unlink()
    after = agentlog.transcript(path, index_dir=index)
    assert after.from_archive == 1
    for key in ("path", "lifetime", "since_compaction", "lines", "models", "covered_bytes"):
        assert after.to_dict()[key] == before.to_dict()[key], key
    with pytest.raises(agentlog.NoTranscript):
        agentlog.transcript(path, index_dir=index, archive=False)
