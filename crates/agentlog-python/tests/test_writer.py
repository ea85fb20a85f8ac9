"""agentlog.Writer: appends, acknowledgement policies, all-or-nothing batches, the lock."""

from __future__ import annotations

import json

import pytest

import agentlog
from conftest import oracle, tok


def log_of(agent):
    return agent / "logs" / "events.jsonl"


@pytest.mark.parametrize("sync", ["fsync", "interval", "none"])
def test_append_returns_each_events_offset(agent, sync):
    with agentlog.Writer(agent, sync, interval_ms=5) as w:
        offsets = [w.append(tok(1)), w.append(json.dumps(tok(2))), w.append(json.dumps(tok(3)).encode())]
    data = log_of(agent).read_bytes()
    lines = data.splitlines(keepends=True)
    assert offsets == [0, len(lines[0]), len(lines[0]) + len(lines[1])]
    assert [json.loads(line)["input_tokens"] for line in lines] == [1, 2, 3]
    assert agentlog.status(agent, 0).input_tokens == 6


def test_dicts_are_written_as_the_kernel_writes_them(agent):
    with agentlog.Writer(agent) as w:
        w.append({"type": "note", "text": "雪", "n": 1.5})
    assert log_of(agent).read_bytes() == '{"type": "note", "text": "雪", "n": 1.5}\n'.encode()


@pytest.mark.parametrize(
    "event",
    ["not json", "[1, 2]", "", b"\xff\xfe", '{"a": 1} {"b": 2}', {"x": float("nan")},
     {"x": object()}, "\ud800"],
    ids=["text", "array", "empty", "not-utf8", "two-objects", "nan", "unserializable", "surrogate"],
)
def test_an_invalid_event_raises_and_writes_nothing(agent, event):
    with agentlog.Writer(agent) as w:
        w.append(tok(1))
        before = log_of(agent).read_bytes()
        with pytest.raises(agentlog.InvalidEvent) as e:
            w.append(event)
        assert e.value.code == "invalid_event" and e.value.index == 0
        assert isinstance(e.value, agentlog.LogError)
        assert log_of(agent).read_bytes() == before
        w.append(tok(2))  # the writer goes on
    assert agentlog.status(agent, 0).api_calls == 2


def test_wrong_event_types_raise_type_error(agent):
    with agentlog.Writer(agent) as w:
        for bad in (5, None, [tok(1)], ("a",)):
            with pytest.raises(TypeError):
                w.append(bad)
    assert log_of(agent).read_bytes() == b""


def test_append_many_is_one_batch_all_or_nothing(agent):
    with agentlog.Writer(agent) as w:
        offsets = w.append_many(tok(i) for i in range(1, 5))
        assert len(offsets) == 4 and offsets[0] == 0 and offsets == sorted(offsets)
        before = log_of(agent).read_bytes()
        with pytest.raises(agentlog.InvalidEvent) as e:
            w.append_many([tok(1), tok(2), "oops", tok(3)])
        assert e.value.index == 2
        assert log_of(agent).read_bytes() == before
        assert w.append_many([]) == []
    assert agentlog.status(agent, 0).input_tokens == 10


def test_the_writer_keeps_the_index_current(agent):
    with agentlog.Writer(agent) as w:
        w.append_many([tok(5), {"type": "psyche_molt", "molt_count": 1}, tok(7)])
        s = agentlog.status(agent, 1)  # another reader, while the writer is open
        assert s.input_tokens == 7 and s.verified
    assert oracle(log_of(agent))["input_tokens"] == 7


def test_a_second_writer_gets_locked(agent):
    with agentlog.Writer(agent):
        with pytest.raises(agentlog.Locked) as e:
            agentlog.Writer(agent)
        assert e.value.code == "locked"
    with agentlog.Writer(agent) as again:  # released on close
        again.append(tok(1))


def test_close_is_idempotent_and_a_closed_writer_refuses(agent):
    w = agentlog.Writer(agent, "none")
    assert not w.closed
    w.append(tok(1))
    w.sync()
    w.close()
    w.close()
    assert w.closed
    with pytest.raises(ValueError):
        w.append(tok(1))
    with pytest.raises(ValueError):
        w.sync()
    assert str(w.path).endswith("events.jsonl") and "Writer(" in repr(w)


def test_the_context_manager_closes_on_error(agent):
    with pytest.raises(RuntimeError):
        with agentlog.Writer(agent) as w:
            w.append(tok(1))
            raise RuntimeError("boom")
    assert w.closed
    assert agentlog.status(agent, 0).api_calls == 1


def test_bad_writer_arguments(agent):
    with pytest.raises(ValueError):
        agentlog.Writer(agent, "sometimes")
    with pytest.raises(TypeError):
        agentlog.Writer(agent, interval_ms="5")
    with pytest.raises(TypeError):
        agentlog.Writer(42)


def test_a_log_that_is_a_directory_raises_not_a_file(agent):
    (agent / "logs" / "events.jsonl").mkdir(parents=True)
    with pytest.raises(agentlog.NotAFile) as e:
        agentlog.Writer(agent)
    assert e.value.code == "not_a_file"
    with pytest.raises(agentlog.NotAFile):
        agentlog.status(agent)
