"""agentlog.Store.search: pages shaped as `agentlog search --json`, cursors, and its errors."""

from __future__ import annotations

import json
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import agentlog
from conftest import REPO, cli_json
from test_store import assistant, key_orders, store_root, user, write_session  # noqa: F401


def search_cli(root: Path, query: str, *flags: str) -> tuple:
    return cli_json("search", str(root), query, *flags)


def flags_of(session=None, types=(), surfaces=(), limit=None, cursor=None, match=None) -> list:
    out = []
    if session is not None:
        out += ["--session", session]
    for t in types:
        out += ["--type", t]
    for s in surfaces:
        out += ["--surface", s]
    if limit is not None:
        out += ["--limit", str(limit)]
    if cursor is not None:
        out += ["--cursor", cursor]
    if match is not None:
        out += ["--match", match]
    return out


REQUESTS = [
    ("migration", {}),
    ("MIGRATION", {"surfaces": ["current"]}),
    ("migration", {"surfaces": ["shadowed", "current"]}),
    ("migration", {"types": ["user/message"]}),
    ("retried migration", {"match": "all"}),
    ("retried migration", {}),
    ("migration", {"session": "root"}),
    ("migration", {"session": "root", "limit": 1}),
    ("still", {"session": "root", "types": ["assistant/message"]}),
    ("nothing like this", {}),
    ("look", {"session": "child"}),
]


@pytest.mark.parametrize("query,kwargs", REQUESTS)
def test_every_search_equals_the_cli_json(store_root, query, kwargs):
    store = agentlog.Store(store_root)
    code, theirs = search_cli(store_root, query, *flags_of(**kwargs))
    assert code == 0
    ours = store.search(query, **kwargs)
    assert ours == theirs
    assert key_orders(ours) == key_orders(theirs)


def test_hits_are_the_events_whose_text_holds_the_phrase(store_root):
    # The naive oracle: every event (any surface) whose text contains the words, case folded.
    page = agentlog.Store(store_root).search("migration", session="root")
    assert sorted(h["seq"] for h in page["hits"]) == [1, 4]
    assert {h["surface"] for h in page["hits"]} == {"shadowed", "current"}
    assert page["session"]["id"] == "root" and "nextCursor" not in page
    best = agentlog.Store(store_root).search("migration")
    assert [h["header"]["id"] for h in best["hits"]] == ["root"]
    assert best["hits"][0]["bestMatch"]["snippet"] in {
        "the migration failed on step three", "summary: migration retried"}
    assert best["unreadable"] == []


def many_sessions(root: Path, n: int) -> None:
    for i in range(n):
        write_session(root, f"s{i:02}", i, None, [
            user(0, f"deploy number {i}"), assistant(1, f"deploy {i} done, deploy again")])


def test_pages_cover_every_hit_once_and_cursors_cross_to_the_cli(tmp_path):
    root = tmp_path / "store"
    many_sessions(root, 7)
    store = agentlog.Store(root)
    whole = store.search("deploy", limit=100)
    assert "nextCursor" not in whole and len(whole["hits"]) == 7
    seen, cursor = [], None
    while True:
        page = store.search("deploy", limit=3, cursor=cursor)
        seen += [h["header"]["id"] for h in page["hits"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
        # The same cursor gives the CLI the same next page: one index, one document.
        code, theirs = search_cli(root, "deploy", "--limit", "3", "--cursor", cursor)
        assert code == 0 and theirs == store.search("deploy", limit=3, cursor=cursor)
    assert seen == [h["header"]["id"] for h in whole["hits"]]
    assert sorted(seen) == [f"s{i:02}" for i in range(7)]


def test_the_gil_is_released_while_the_index_is_built(tmp_path):
    # The first search builds the index from every log; a Python thread counting meanwhile
    # only advances if the searching thread let go of the GIL.
    root = tmp_path / "store"
    for i in range(30):
        write_session(root, f"s{i:02}", i, None, [
            user(seq, f"message {seq} of session {i} about lanterns and rivers")
            for seq in range(400)])
    store = agentlog.Store(root)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    found = []

    def search():
        found.append(store.search("lanterns and rivers", limit=100))
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)  # without a release, the counter would wait a whole second
    try:
        counter = threading.Thread(target=count)
        searcher = threading.Thread(target=search)
        counter.start()
        searcher.start()
        searcher.join()
        counter.join()
    finally:
        sys.setswitchinterval(old)
    assert len(found[0]["hits"]) == 30
    assert ticks > 1000


def test_a_store_searched_by_threads_agrees(tmp_path):
    root = tmp_path / "store"
    many_sessions(root, 5)
    store = agentlog.Store(root)
    with ThreadPoolExecutor(6) as pool:
        pages = list(pool.map(lambda _: store.search("deploy again", limit=10), range(24)))
    assert all(p == pages[0] for p in pages) and len(pages[0]["hits"]) == 5


def test_an_unreadable_session_is_listed_as_the_cli_lists_it(store_root):
    path = store_root / "root" / "events.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"seq": 2', '"seq": 7')  # seqs must be contiguous
    path.write_text("\n".join(lines) + "\n")
    store = agentlog.Store(store_root)
    page = store.search("migration")
    assert page["hits"] == []
    assert [(u["sessionId"], u["error"]) for u in page["unreadable"]] == [
        ("root", "corrupt_session")]
    code, theirs = search_cli(store_root, "migration")
    assert code == 0 and theirs == page
    with pytest.raises(agentlog.CorruptSession) as e:
        store.search("migration", session="root")
    assert e.value.code == "corrupt_session" and e.value.session_id == "root"
    assert search_cli(store_root, "migration", "--session", "root")[1]["error"] == e.value.code


BAD_REQUESTS = [
    # (query, kwargs, the class raised, the code the CLI prints too)
    ("   ", {}, agentlog.InvalidQuery, "invalid_query"),
    ("migration", {"limit": 0}, agentlog.InvalidQuery, "invalid_limit"),
    ("migration", {"limit": 101}, agentlog.InvalidQuery, "invalid_limit"),
    ("migration", {"cursor": "not-a-cursor"}, agentlog.InvalidCursor, "invalid_cursor"),
    ("migration", {"session": "nobody"}, agentlog.SessionNotFound, "session_not_found"),
    ("migration", {"session": "../etc"}, agentlog.InvalidQuery, "invalid_session_id"),
]


@pytest.mark.parametrize("query,kwargs,cls,code", BAD_REQUESTS)
def test_bad_requests_raise_the_cli_codes(store_root, query, kwargs, cls, code):
    with pytest.raises(cls) as e:
        agentlog.Store(store_root).search(query, **kwargs)
    assert e.value.code == code and isinstance(e.value, agentlog.QueryError)
    exit_code, theirs = search_cli(store_root, query, *flags_of(**kwargs))
    assert (exit_code, theirs["error"]) == (2, code)


def test_limit_errors_carry_the_bounds(store_root):
    with pytest.raises(agentlog.InvalidQuery) as e:
        agentlog.Store(store_root).search("migration", limit=500)
    assert (e.value.limit, e.value.max) == (500, 100)


def test_a_cursor_is_bound_to_its_request(tmp_path):
    root = tmp_path / "store"
    many_sessions(root, 4)
    store = agentlog.Store(root)
    cursor = store.search("deploy", limit=2)["nextCursor"]
    assert store.search("deploy", limit=2, cursor=cursor)["hits"]
    for other in [{"limit": 3}, {"match": "all"}, {"session": "s00"}, {"surfaces": "current"}]:
        kwargs = {"limit": 2, **other}
        with pytest.raises(agentlog.InvalidCursor) as e:
            store.search("deploy", cursor=cursor, **kwargs)
        assert e.value.code == "invalid_cursor"
    with pytest.raises(agentlog.InvalidCursor):
        store.search("deploy again", limit=2, cursor=cursor)


def test_a_cursor_goes_stale_when_a_session_grows(tmp_path):
    root = tmp_path / "store"
    many_sessions(root, 4)
    store = agentlog.Store(root)
    cursor = store.search("deploy", limit=2)["nextCursor"]
    with open(root / "s01" / "events.jsonl", "a") as f:
        f.write(json.dumps(user(2, "one more deploy")) + "\n")
    with pytest.raises(agentlog.StaleCursor) as e:
        store.search("deploy", limit=2, cursor=cursor)
    assert e.value.code == "stale_cursor"
    assert isinstance(e.value, agentlog.InvalidCursor) and isinstance(e.value, agentlog.InvalidQuery)
    exit_code, theirs = search_cli(root, "deploy", "--limit", "2", "--cursor", cursor)
    assert (exit_code, theirs["error"]) == (2, "stale_cursor")


@pytest.mark.parametrize("kwargs,error", [
    ({"match": "any"}, ValueError),
    ({"surfaces": "visible"}, ValueError),
    ({"surfaces": ["current", 3]}, TypeError),
    ({"types": 7}, TypeError),
    ({"limit": "20"}, TypeError),
    ({"limit": True}, TypeError),
    ({"limit": -1}, ValueError),
    ({"cursor": 5}, TypeError),
    ({"session": b"root"}, TypeError),
])
def test_bad_arguments(store_root, kwargs, error):
    with pytest.raises(error):
        agentlog.Store(store_root).search("migration", **kwargs)


def test_query_must_be_a_str(store_root):
    with pytest.raises(TypeError):
        agentlog.Store(store_root).search(b"migration")
    with pytest.raises(TypeError):
        agentlog.Store(store_root).search("migration", "root")  # session is keyword-only


def test_a_str_or_any_iterable_of_str_filters(store_root):
    store = agentlog.Store(store_root)
    one = store.search("migration", session="root", surfaces="current")
    assert [h["seq"] for h in one["hits"]] == [4]
    many = store.search("migration", session="root", surfaces=iter(["current", "shadowed"]),
                        types=("user/message", "assistant/message"))
    assert sorted(h["seq"] for h in many["hits"]) == [1, 4]


def test_the_index_lives_in_the_store_and_sessions_ignore_it(store_root):
    store = agentlog.Store(store_root)
    store.search("migration")
    assert (store_root / ".agentlog-search").is_dir()
    assert sorted(r["id"] for r in store.sessions()) == ["child", "grandchild", "orphan", "root"]


def test_the_documented_example_runs(tmp_path, capsys):
    # docs/PYTHON.md's search example, run as written against a store of 12 sessions, so that
    # its loop pages.
    doc = (REPO / "docs" / "PYTHON.md").read_text(encoding="utf-8")
    section = doc.split("### Search", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "docs/PYTHON.md lost its search example"
    root = tmp_path / "store"
    many_sessions(root, 12)
    exec(compile(code.group(1), "PYTHON.md", "exec"), {"agentlog": agentlog, "root": root})
    printed = capsys.readouterr().out.splitlines()
    assert sorted(line.split()[0] for line in printed) == [f"s{i:02}" for i in range(12)]
    assert all(line.split()[1] == "1" for line in printed)  # the assistant's line says it twice


def test_a_broken_search_index_is_search_index_failed(store_root):
    # A file where the index directory belongs: the index cannot be opened, the logs are fine.
    (store_root / ".agentlog-search").write_text("not a directory")
    store = agentlog.Store(store_root)
    with pytest.raises(agentlog.SearchIndexFailed) as e:
        store.search("migration")
    assert e.value.code == "index_failed" and isinstance(e.value, agentlog.QueryError)
    exit_code, theirs = search_cli(store_root, "migration")
    assert (exit_code, theirs["error"]) == (1, "index_failed")
    assert [r["seq"] for r in store.events("root", text="migration")] == [1, 4]
