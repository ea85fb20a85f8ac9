"""Objects shared by threads, and the GIL released during file work."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import agentlog
from conftest import oracle, tok


def test_status_from_many_threads_agrees(tmp_path):
    agent = tmp_path / "agent"
    key = agentlog.write_synthetic_log(agent, responses=3000)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: agentlog.status(agent), range(64)))
    assert {a.input_tokens for a in answers} == {key["input_tokens_since_molt"]}
    assert {a.api_calls for a in answers} == {key["api_calls_since_molt"]}


def test_one_writer_shared_by_threads_loses_nothing(agent):
    per_thread, threads = 200, 8
    with agentlog.Writer(agent, "none") as w:
        def work(t):
            return [w.append(tok(t * 1000 + i)) for i in range(per_thread)]

        with ThreadPoolExecutor(threads) as pool:
            offsets = [o for chunk in pool.map(work, range(threads)) for o in chunk]
    assert len(set(offsets)) == per_thread * threads
    want = oracle(agent / "logs" / "events.jsonl")
    s = agentlog.status(agent, 0)
    assert s.api_calls == want["api_calls"] == per_thread * threads
    assert s.input_tokens == want["input_tokens"]


def test_writer_and_readers_run_together(agent):
    stop = threading.Event()
    seen = []

    def reader():
        while not stop.is_set():
            s = agentlog.status(agent, 0)
            seen.append(s.api_calls)

    with agentlog.Writer(agent, "none") as w:
        w.append(tok(1))
        readers = [threading.Thread(target=reader) for _ in range(3)]
        for r in readers:
            r.start()
        for i in range(300):
            w.append(tok(1))
        stop.set()
        for r in readers:
            r.join()
    assert seen and all(1 <= n <= 301 for n in seen)
    assert agentlog.status(agent, 0).api_calls == 301


def test_the_gil_is_released_while_the_log_is_read(tmp_path):
    # A full scan of a few MB takes milliseconds of Rust; a Python thread counting meanwhile
    # only advances if the scanning thread let go of the GIL.
    agent = tmp_path / "agent"
    agentlog.write_synthetic_log(agent, target_bytes=30_000_000)
    agentlog.status(agent)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    def scans():
        for _ in range(5):
            agentlog.status(agent, tier="full_scan")
        done.set()

    counter = threading.Thread(target=count)
    scanner = threading.Thread(target=scans)
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)  # without a release, the counter would wait a whole second
    try:
        counter.start()
        scanner.start()
        scanner.join()
        counter.join()
    finally:
        sys.setswitchinterval(old)
    assert ticks > 1000


def test_a_store_shared_by_threads(tmp_path):
    import json

    from test_store import user

    root = tmp_path / "store"
    for i in range(4):
        d = root / f"s{i}"
        d.mkdir(parents=True)
        with open(d / "events.jsonl", "w") as f:
            f.write(json.dumps({"type": "session", "version": 0, "id": f"s{i}", "createdAt": i}) + "\n")
            for seq in range(50):
                f.write(json.dumps(user(seq, f"message {seq}")) + "\n")
    store = agentlog.Store(root)
    with ThreadPoolExecutor(8) as pool:
        counts = list(pool.map(lambda i: len(store.events(f"s{i % 4}")), range(40)))
    assert counts == [50] * 40
