"""agentlog.Store: the session queries, shaped as the CLI's --json output."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

import agentlog
from conftest import cli_json


def user(seq, text):
    return {"type": "user/message", "seq": seq, "time": seq * 10, "surfaceOp": "append",
            "data": {"id": f"u{seq}", "role": "user", "source": {"kind": "user"},
                     "content": [{"type": "text", "text": text}]}}


def assistant(seq, text, **extra):
    ev = {"type": "assistant/message", "seq": seq, "time": seq * 10, "surfaceOp": "append",
          "data": {"turn": 1, "step": 1, "message": {
              "id": f"a{seq}", "role": "assistant",
              "source": {"kind": "model", "provider": "p", "model": "m"},
              "content": [{"type": "text", "text": text}]}}}
    ev.update(extra)
    return ev


def write_session(root: Path, sid: str, created: int, parent, events) -> None:
    header = {"type": "session", "version": 0, "id": sid, "createdAt": created}
    if parent:
        header["parentSession"] = parent
    d = root / sid
    d.mkdir(parents=True)
    with open(d / "events.jsonl", "w", encoding="utf-8") as f:
        for line in [header, *events]:
            f.write(json.dumps(line) + "\n")


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    """root > child > grandchild, an orphan, and in root a summary replacing an exchange."""
    root = tmp_path / "store"
    turn = {"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}
    for sid, created, parent in [("child", 2, "root"), ("grandchild", 3, "child"),
                                 ("orphan", 4, "missing")]:
        write_session(root, sid, created, parent, [turn])
    write_session(root, "root", 1, None, [
        turn, user(1, "the migration failed on step three"), assistant(2, "let me look"),
        user(3, "still broken"),
        assistant(4, "summary: migration retried",
                  surfaceOp={"op": "replace", "start": 1, "end": 2}, sourceEventSeqs=[1, 2]),
        {"type": "turn/end", "seq": 5, "time": 50,
         "data": {"turn": 1, "reason": {"kind": "completed"}}},
    ])
    return root


def test_sessions_newest_first(store_root):
    rows = agentlog.Store(store_root).sessions()
    assert [r["id"] for r in rows] == ["orphan", "grandchild", "child", "root"]
    assert rows[-1] == {"id": "root", "createdAt": 1, "parentSession": None, "cwd": None,
                        "live": False, "persisted": True}


def test_events_with_surface_classes_and_filters(store_root):
    store = agentlog.Store(store_root)
    rows = store.events("root")
    assert [(r["seq"], r["surface"]) for r in rows] == [
        (0, "log-only"), (1, "shadowed"), (2, "shadowed"), (3, "current"), (4, "current"),
        (5, "log-only")]
    assert list(rows[0]) == ["seq", "type", "time", "surface"]
    assert [r["seq"] for r in store.events("root", types="user/message")] == [1, 3]
    assert [r["seq"] for r in store.events("root", types=["user/message", "turn/end"])] == [1, 3, 5]
    assert [r["seq"] for r in store.events("root", surface="shadowed")] == [1, 2]
    assert [r["seq"] for r in store.events("root", text="MIGRATION")] == [1, 4]


def test_read_returns_the_window(store_root):
    w = agentlog.Store(store_root).read("root", 2, before=1, after=1)
    assert (w["startSeq"], w["endSeq"]) == (1, 3)
    assert w["target"]["seq"] == 2 and [e["seq"] for e in w["events"]] == [1, 2, 3]
    assert w["session"]["id"] == "root"


def ids(records):
    return [r["header"]["id"] for r in records]


def test_traces(store_root):
    store = agentlog.Store(store_root)
    t = store.trace_session("grandchild")
    assert list(t) == ["target", "ancestors", "descendants", "complete", "root"]
    assert t["target"] == {"header": {"type": "session", "version": 0, "id": "grandchild",
                                      "createdAt": 3, "parentSession": "child"},
                           "live": False, "persisted": True}
    assert ids(t["ancestors"]) == ["child", "root"]
    assert t["complete"] and t["root"]["header"]["id"] == "root" and t["descendants"] == []
    down = store.trace_session("root")["descendants"]
    assert len(down) == 1 and list(down[0]) == ["session", "descendants"]
    assert down[0]["session"]["header"]["id"] == "child"
    assert [n["session"]["header"]["id"] for n in down[0]["descendants"]] == ["grandchild"]
    assert down[0]["descendants"][0]["descendants"] == []
    orphan = store.trace_session("orphan")
    assert list(orphan) == ["target", "ancestors", "descendants", "complete",
                            "unresolvedParentId"]
    assert not orphan["complete"] and orphan["unresolvedParentId"] == "missing"
    e = store.trace_event("root", 1)
    assert e["replacedBy"] == 4 and e["derivedEventSeqs"] == [4]
    assert store.trace_event("root", 4)["replacedEventSeqs"] == [1, 2]


@pytest.mark.parametrize("args", [
    ("sessions",), ("events", "root"), ("events", "root", "--type", "user/message"),
    ("read", "root", "2", "--before", "1", "--after", "1"), ("trace-session", "grandchild"),
    ("trace-session", "root"), ("trace-session", "orphan"), ("trace-event", "root", "1"),
])
def test_every_query_equals_the_cli_json(store_root, args):
    store = agentlog.Store(store_root)
    command, rest = args[0], list(args[1:])
    code, cli = cli_json(command, str(store_root), *rest)
    assert code == 0
    if command == "sessions":
        ours = store.sessions()
    elif command == "events":
        ours = store.events(rest[0], types=rest[2:] or None)
    elif command == "read":
        ours = store.read(rest[0], int(rest[1]), before=1, after=1)
    elif command == "trace-session":
        ours = store.trace_session(rest[0])
    else:
        ours = store.trace_event(rest[0], int(rest[1]))
    assert ours == cli
    assert key_orders(ours) == key_orders(cli)


def key_orders(value):
    """Every dict's keys in order, depth first: equal dicts may still differ in key order."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(list(v))
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


def test_a_lineage_with_branches_equals_the_cli_json(tmp_path):
    # Siblings in creation order at several levels, and headers with fields of their own.
    root = tmp_path / "store"
    write_session(root, "a", 1, None, [])
    for sid, created, parent in [("b", 2, "a"), ("c", 3, "a"), ("d", 4, "b"), ("e", 5, "b"),
                                 ("f", 6, "c"), ("g", 7, "e")]:
        write_session(root, sid, created, parent, [])
    path = root / "e" / "events.jsonl"
    header = json.loads(path.read_text())
    header.update(cwd="/w\u00e9", zzFuture={"nested": [1.5, None, "\u2603"]})
    path.write_text(json.dumps(header) + "\n")
    store = agentlog.Store(root)
    for sid in "abcdefg":
        code, cli = cli_json("trace-session", str(root), sid)
        assert code == 0
        ours = store.trace_session(sid)
        assert ours == cli and key_orders(ours) == key_orders(cli)
    top = store.trace_session("a")["descendants"]
    assert [n["session"]["header"]["id"] for n in top] == ["b", "c"]
    assert [n["session"]["header"]["id"] for n in top[0]["descendants"]] == ["d", "e"]
    assert top[0]["descendants"][1]["session"]["header"]["zzFuture"] == {
        "nested": [1.5, None, "\u2603"]}


def test_a_100_000_deep_chain_builds_without_recursion(tmp_path):
    # Python's json module and == recurse in C and give up a few hundred levels down, so the
    # tree is walked with a loop. /dev/shm when there is one: making 100,000 directories on
    # a disk would be most of the test's time.
    n = 100_000
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path
    try:
        root = base / "store"
        root.mkdir()
        for i in range(n):
            d = root / f"s{i}"
            d.mkdir()
            parent = f',"parentSession":"s{i - 1}"' if i else ""
            (d / "events.jsonl").write_text(
                f'{{"type":"session","version":0,"id":"s{i}","createdAt":{i}{parent}}}\n')
        store = agentlog.Store(root)
        t = store.trace_session("s0")
        assert t["complete"] and t["ancestors"] == [] and t["root"]["header"]["id"] == "s0"
        level, seen = t["descendants"], []
        while level:
            assert len(level) == 1 and list(level[0]) == ["session", "descendants"]
            seen.append(level[0]["session"]["header"]["id"])
            level = level[0]["descendants"]
        assert seen == [f"s{i}" for i in range(1, n)]
    finally:
        if base is not tmp_path:
            shutil.rmtree(base)


def test_query_errors_are_typed(store_root, tmp_path):
    store = agentlog.Store(store_root)
    with pytest.raises(agentlog.SessionNotFound) as e:
        store.events("nope")
    assert e.value.code == "session_not_found" and e.value.session_id == "nope"
    with pytest.raises(agentlog.EventNotFound) as e:
        store.read("root", 99)
    assert (e.value.code, e.value.seq) == ("event_not_found", 99)
    with pytest.raises(agentlog.InvalidQuery) as e:
        store.read("root", 1, before=51)
    assert e.value.code == "invalid_window"
    with pytest.raises(agentlog.InvalidQuery) as e:
        store.events("root", text="   ")
    assert e.value.code == "invalid_filter"
    with pytest.raises(ValueError):
        store.events("root", surface="sideways")
    with pytest.raises(TypeError):
        store.read("root", "1")
    with pytest.raises(agentlog.NoStore) as e:
        agentlog.Store(tmp_path / "absent")
    assert e.value.code == "no_store" and isinstance(e.value, agentlog.QueryError)


def test_a_broken_session_log_is_corrupt_session(store_root):
    path = store_root / "root" / "events.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"seq": 2', '"seq": 7')  # seqs must be contiguous
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(agentlog.CorruptSession) as e:
        agentlog.Store(store_root).events("root")
    assert e.value.code == "corrupt_session"
