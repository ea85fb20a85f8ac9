"""agentlog.usage and agentlog.statusline: typed answers whose `to_dict()` is the CLI's JSON, the
library's own argument parsers, and stubs that name every public attribute."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

import agentlog
from agentlog import _agentlog, _reports
from conftest import REPO, cli
from test_store import key_orders

DATA = REPO / "tests" / "data" / "transcripts"
GROUPINGS = ["day", "week", "month", "session", "project", "model", "block"]
SESSION = Path("claude-code") / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    """The vendored real transcripts, copied (they are never edited in place)."""
    if not DATA.is_dir():
        pytest.skip(f"{DATA} is absent: the vendored transcripts are not in this checkout")
    out = tmp_path / "transcripts"
    shutil.copytree(DATA, out)
    return out


def run_cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    exe = cli()
    if exe is None:
        pytest.skip("the agentlog CLI is not built (cargo build --bin agentlog, or set AGENTLOG_CLI)")
    return subprocess.run([str(exe), *args], input=stdin, capture_output=True, check=False)


@pytest.mark.parametrize("by", GROUPINGS)
def test_usage_equals_the_cli_json_for_every_grouping(copies, tmp_path, by):
    index = tmp_path / "index"
    agentlog.usage(copies, by=by, timezone="UTC", index_dir=index)  # builds indexes and snapshot
    ours = agentlog.usage([copies], by=by, timezone="UTC", index_dir=index)
    done = run_cli("usage", str(copies), "--by", by, "--timezone", "UTC",
                   "--index-dir", str(index), "--json")
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    assert ours.to_dict() == theirs
    assert key_orders(ours.to_dict()) == key_orders(theirs)
    assert ours.by == by and len(ours.rows) == len(theirs["rows"]) > 0


@pytest.mark.parametrize("by", ["day", "session", "block"])
def test_usage_rows_are_typed_and_add_up(copies, tmp_path, by):
    report = agentlog.usage(copies, by=by, timezone="Europe/Paris", cost="calculate",
                            index_dir=tmp_path / "i", snapshot=False)
    assert isinstance(report, agentlog.UsageReport)
    assert isinstance(report.totals, agentlog.Usage)
    assert report.timezone == "Europe/Paris" and report.cost_mode == "calculate"
    doc = report.to_dict()
    # The naive oracle: the totals are the sum of the rows' JSON figures.
    for name, attribute in [("input_tokens", "input"), ("output_tokens", "output"),
                            ("cache_creation_tokens", "cache_creation"),
                            ("cache_read_tokens", "cache_read"),
                            ("reasoning_output_tokens", "reasoning"), ("total_tokens", "total")]:
        assert getattr(report.totals, attribute) == sum(r[name] for r in doc["rows"])
    priced = [r["cost_usd"] for r in doc["rows"] if r["cost_usd"] is not None]
    assert report.cost_usd == pytest.approx(sum(priced), abs=1e-6)
    for row, raw in zip(report.rows, doc["rows"]):
        assert isinstance(row, agentlog.UsageRow)
        for key, value in raw.items():
            attribute = getattr(row, key)
            if isinstance(attribute, _reports._Document):
                assert attribute.to_dict() == value
            else:
                assert attribute == value, key
        u = row.usage
        assert u.input + u.output + u.cache_creation + u.cache_read == u.total == row.total_tokens
        assert row.key == raw[by]
        if by == "block":
            assert row.start is not None and row.is_gap in (True, False)
        if by == "session":
            assert row.project is not None


def test_usage_arguments_are_parsed_by_the_library(tmp_path):
    one = agentlog.usage(tmp_path, since="20260101", until="2026-01-31", index_dir=tmp_path / "i")
    assert (one.since, one.until) == ("2026-01-01", "2026-01-31")
    assert one.rows == [] and one.cost_usd is None
    for kwargs, argument in [({"by": "year"}, "by"), ({"since": "2026-02-30"}, "since"),
                             ({"until": "tomorrow"}, "until"), ({"timezone": "Mars/Olympus"}, "timezone"),
                             ({"cost": "free"}, "cost")]:
        with pytest.raises(agentlog.InvalidArgument) as raised:
            agentlog.usage(tmp_path, index_dir=tmp_path / "i", **kwargs)
        assert raised.value.code == "bad_input" and raised.value.argument == argument
        assert isinstance(raised.value, agentlog.AgentlogError)
    bad = tmp_path / "prices.json"
    bad.write_text("[1, 2]")
    with pytest.raises(agentlog.PricingError) as raised:
        agentlog.usage(tmp_path, pricing=bad, index_dir=tmp_path / "i")
    assert raised.value.code == "bad_pricing"
    with pytest.raises(TypeError):
        agentlog.usage(3)


def test_the_cli_refuses_what_python_refuses(tmp_path):
    # One parser: the CLI's errors for the same values.
    for flag, value in (("--since", "2026-02-30"), ("--timezone", "Mars/Olympus")):
        done = run_cli("usage", str(tmp_path), "--index-dir", str(tmp_path / "i"), flag, value)
        with pytest.raises(agentlog.InvalidArgument) as raised:
            agentlog.usage(tmp_path, index_dir=tmp_path / "i", **{flag[2:]: value})
        assert done.returncode == 2
        assert done.stderr.decode().strip() == f"agentlog: {flag} {raised.value}".replace(
            f"{flag} {flag[2:]}: ", f"{flag} ")


def status_input(path: Path) -> dict:
    return {"session_id": "258c7280-ae70-4798-800f-63464d01a85d", "transcript_path": str(path),
            "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
            "context_window": {"context_window_size": 200000}}


def test_statusline_equals_the_cli(copies, tmp_path):
    index = tmp_path / "index"
    given = json.dumps(status_input(copies / SESSION)).encode()
    ours = agentlog.statusline(given, index_dir=index)
    assert isinstance(ours, agentlog.StatusLine)
    done = run_cli("statusline", "--index-dir", str(index), "--json", stdin=given)
    assert done.returncode == 0, done.stderr
    assert ours.to_dict() == json.loads(done.stdout)
    done = run_cli("statusline", "--index-dir", str(index), stdin=given)
    assert ours.line == done.stdout.decode().rstrip("\n")
    template = "{model} {context_percent}% {session_cost_usd} {nothing}"
    done = run_cli("statusline", "--index-dir", str(index), "--format", template, stdin=given)
    assert ours.format(template) == done.stdout.decode().rstrip("\n")
    # The same answer from text, bytes and a mapping; the figures typed.
    assert agentlog.statusline(given.decode(), index_dir=index) == ours
    assert agentlog.statusline(status_input(copies / SESSION), index_dir=index) == ours
    assert ours.model == "Opus" and ours.context_window == 200000
    assert isinstance(ours.since_compaction, agentlog.Usage)
    # The naive oracle: the session's total is the transcript's lifetime total.
    lifetime = agentlog.transcript(copies / SESSION, index_dir=index).lifetime
    assert ours.session_total_tokens == lifetime.total


def test_statusline_refuses_bad_input(tmp_path):
    for given in (b"", b"[1]", b"{}", b"{"):
        with pytest.raises(agentlog.InvalidArgument) as raised:
            agentlog.statusline(given, index_dir=tmp_path)
        assert raised.value.argument == "input_json"
    with pytest.raises(TypeError):
        agentlog.statusline(3)  # type: ignore[arg-type]


def test_transcript_is_typed_and_to_dict_is_the_old_document(copies, tmp_path):
    report = agentlog.transcript(copies / SESSION, subagents=True, index_dir=tmp_path / "i")
    assert isinstance(report, agentlog.TranscriptReport)
    doc = report.to_dict()
    assert [b.to_dict() for b in report.boundaries] == doc["boundaries"]
    assert all(isinstance(b, agentlog.Boundary) for b in report.boundaries)
    assert [g.usage.total for g in report.generations] == \
        [g["usage"]["total_tokens"] for g in doc["generations"]]
    assert report.subagents is not None and all(isinstance(s, agentlog.Subagent) for s in report.subagents)
    # The naive oracle: the generations add up to the lifetime.
    assert sum(g.usage.total for g in report.generations) == report.lifetime.total
    assert report.since_compaction == report.generations[-1].usage
    # to_dict() is a copy: changing it changes nothing.
    doc["lines"] = -1
    assert report.to_dict()["lines"] == report.lines != -1


def all_keys(value, out):
    """Every (dict's keys) set, depth first."""
    if isinstance(value, dict):
        out.append(set(value))
        for v in value.values():
            all_keys(v, out)
    elif isinstance(value, list):
        for v in value:
            all_keys(v, out)
    return out


def test_every_json_key_is_an_attribute(copies, tmp_path):
    # Introspection: each document's keys are attributes of the class built from it.
    index = tmp_path / "i"
    for by in GROUPINGS:
        report = agentlog.usage(copies, by=by, timezone="UTC", index_dir=index)
        for row in report.rows:
            assert set(row.to_dict()) <= field_names(agentlog.UsageRow)
        assert set(report.to_dict()) <= field_names(agentlog.UsageReport)
        assert set(report.totals.to_dict()) <= usage_keys()
    for path in sorted(copies.rglob("*.jsonl")):
        report = agentlog.transcript(path, index_dir=index)
        assert set(report.to_dict()) <= field_names(agentlog.TranscriptReport)
        for b in report.boundaries:
            assert set(b.to_dict()) <= field_names(agentlog.Boundary)
        for g in report.generations:
            assert set(g.to_dict()) <= field_names(agentlog.Generation)
            assert set(g.usage.to_dict()) <= usage_keys()
    status = agentlog.statusline(status_input(copies / SESSION), index_dir=index)
    assert set(status.to_dict()) == field_names(agentlog.StatusLine) - {"line"}


def field_names(cls) -> set:
    return {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}


def usage_keys() -> set:
    return {"input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens",
            "reasoning_output_tokens", "total_tokens", "cache_creation_1h_tokens", "messages",
            "cost_total", "native"}


def test_the_stubs_name_every_public_attribute():
    # Introspection: the native module's stub file names every public name the module has,
    # each class's stub names its public methods, and the package exports every public name.
    stub = ast.parse((Path(_agentlog.__file__).parent / "_agentlog.pyi").read_text())
    stubbed = {}
    for node in stub.body:
        if isinstance(node, ast.ClassDef):
            stubbed[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                n.target.id for n in node.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        elif isinstance(node, ast.FunctionDef):
            stubbed[node.name] = set()
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stubbed[node.target.id] = set()
    native = {n for n in dir(_agentlog) if not n.startswith("__") or n == "__version__"}
    missing = native - set(stubbed)
    assert not missing, f"_agentlog.pyi lacks {sorted(missing)}"
    for name in native:
        obj = getattr(_agentlog, name)
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            public = {m for m in vars(obj) if not m.startswith("_")}
            assert public <= stubbed[name], f"{name}: the stub lacks {sorted(public - stubbed[name])}"
    exported = set(agentlog.__all__)
    assert {n for n in native if not n.startswith("_")} <= exported | {"StatusFormatter"}
    assert set(_reports.__all__) <= exported
    for name in exported:
        assert hasattr(agentlog, name), name
