"""Typed answers: the documents the CLI prints with ``--json``, as frozen dataclasses.

The library computes every figure; these classes only give the document's fields names and
types. Each attribute is named as its JSON key (``UsageRow.input_tokens``, ``StatusLine.
context_percent``), nested objects are typed in turn, and ``to_dict()`` returns the document
exactly as the CLI prints it (a fresh copy, keys in the CLI's order).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Union

from . import _agentlog

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

__all__ = [
    "Boundary",
    "BurnRate",
    "Generation",
    "Projection",
    "Skipped",
    "StatusLine",
    "Subagent",
    "TranscriptReport",
    "Usage",
    "UsageReport",
    "UsageRow",
    "statusline",
    "transcript",
    "usage",
]


class _Document:
    """The document an answer was built from, returned by ``to_dict()``."""

    _doc: Dict[str, Any]
    # Fields whose values are converted: name -> converter of the JSON value.
    _convert: ClassVar[Dict[str, Callable[[Any], Any]]] = {}

    def to_dict(self) -> Dict[str, Any]:
        """The document as the CLI prints it with ``--json`` (a fresh copy)."""
        return copy.deepcopy(self._doc)

    @classmethod
    def _from(cls, doc: Mapping[str, Any]) -> Any:
        values = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name.startswith("_") or not f.init:
                continue
            value = doc.get(f.name)
            convert = cls._convert.get(f.name)
            values[f.name] = convert(value) if convert is not None and value is not None else value
        return cls(_doc=dict(doc), **values)  # type: ignore[call-arg]


def _optional(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else build(v)


def _each(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda items: [build(i) for i in items]


def _doc_field() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Usage(_Document):
    """Token figures, normalised alike for every format: ``input`` excludes cached input,
    ``output`` includes ``reasoning``, and ``input + output + cache_creation + cache_read ==
    total``. In JSON: ``input_tokens``, ``output_tokens``, ``cache_creation_tokens``,
    ``cache_read_tokens``, ``reasoning_output_tokens``, ``total_tokens`` (and
    ``cache_creation_1h_tokens``, ``messages``, ``cost_total``, ``native`` where present)."""

    input: int
    output: int
    cache_creation: int
    cache_read: int
    reasoning: int
    total: int
    #: The part of ``cache_creation`` written to the 1-hour cache.
    cache_creation_1h: int = 0
    #: Messages counted.
    messages: int = 0
    #: The cost the transcripts record (pi), in dollars.
    cost_total: float = 0.0
    #: The format's own figures under its own names (a transcript's figures only).
    native: Optional[Dict[str, Any]] = None
    _doc: Dict[str, Any] = _doc_field()

    @classmethod
    def _from(cls, doc: Mapping[str, Any]) -> "Usage":
        return cls(
            input=doc["input_tokens"],
            output=doc["output_tokens"],
            cache_creation=doc["cache_creation_tokens"],
            cache_read=doc["cache_read_tokens"],
            reasoning=doc["reasoning_output_tokens"],
            total=doc["total_tokens"],
            cache_creation_1h=doc.get("cache_creation_1h_tokens", 0),
            messages=doc.get("messages", 0),
            cost_total=doc.get("cost_total", 0.0),
            native=copy.deepcopy(doc.get("native")),
            _doc=dict(doc),
        )


@dataclass(frozen=True)
class BurnRate(_Document):
    """How fast the active billing block is spending."""

    tokens_per_minute: float
    #: None when nothing in the block has a price.
    cost_usd_per_hour: Optional[float]
    _doc: Dict[str, Any] = _doc_field()


@dataclass(frozen=True)
class Projection(_Document):
    """The active block's usage projected to its end at its burn rate."""

    total_tokens: int
    cost_usd: Optional[float]
    remaining_minutes: int
    _doc: Dict[str, Any] = _doc_field()


@dataclass(frozen=True)
class UsageRow(_Document):
    """One row of a usage report, its attributes named as ``agentlog usage --json`` names the
    row's keys. The group is under the grouping's name (``day``, ``week``, ``month``,
    ``session`` with ``project``, ``project``, ``model``, ``block``, ``agent``); the others
    are None, but ``agent`` names the row's agents (comma-separated) whatever the grouping.
    ``start``, ``end``, ``is_active``, ``is_gap``, ``burn_rate`` and ``projection`` are a block
    row's. ``usage`` gives the token figures as a :class:`Usage`."""

    day: Optional[str]
    week: Optional[str]
    month: Optional[str]
    session: Optional[str]
    project: Optional[str]
    model: Optional[str]
    block: Optional[str]
    agent: Optional[str]
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    reasoning_output_tokens: int
    cache_creation_1h_tokens: int
    total_tokens: int
    cost_total: float
    messages: int
    #: Dollars of the priced part; None when nothing in the row has a price.
    cost_usd: Optional[float]
    models: List[str]
    #: Models in the row without a price (their tokens are counted, their cost is not).
    unpriced_models: List[str]
    last_activity: Optional[str]
    start: Optional[str]
    end: Optional[str]
    is_active: Optional[bool]
    is_gap: Optional[bool]
    burn_rate: Optional[BurnRate]
    projection: Optional[Projection]
    _doc: Dict[str, Any] = _doc_field()

    _convert: ClassVar[Dict[str, Callable[[Any], Any]]] = {
        "burn_rate": BurnRate._from,
        "projection": Projection._from,
    }
    _KEYS: ClassVar = ("day", "week", "month", "block", "session", "model", "project", "agent")

    @property
    def key(self) -> str:
        """The group: the value under the grouping's name."""
        return next(getattr(self, k) for k in self._KEYS if getattr(self, k) is not None)

    @property
    def usage(self) -> Usage:
        """The row's token figures."""
        return Usage._from(self._doc)


@dataclass(frozen=True)
class Skipped(_Document):
    """A transcript or directory that could not be read, and why (left out of the totals)."""

    path: str
    error: str
    _doc: Dict[str, Any] = _doc_field()


@dataclass(frozen=True)
class UsageReport(_Document):
    """A usage report: ``agentlog usage --json`` as typed attributes."""

    #: The grouping: ``day``, ``week``, ``month``, ``session``, ``project``, ``model``, ``block``,
    #: ``agent``.
    by: str
    #: Sessions read from the archive alone (their files are gone).
    archive_only_sessions: Optional[int]
    #: Dollars of the totals' priced part; None when nothing has a price.
    cost_usd: Optional[float]
    models: List[str]
    unpriced_models: List[str]
    #: ``auto``, ``calculate`` or ``recorded``.
    cost_mode: str
    #: Where the prices came from (``kind``, and ``version``/``date`` or ``path``).
    pricing: Optional[Dict[str, Any]]
    cross_file_duplicates: int
    #: Transcripts read, by format.
    files: Dict[str, int]
    index_outcomes: Dict[str, int]
    rows: List[UsageRow]
    since: Optional[str]
    skipped: List[Skipped]
    #: What the run-level snapshot did (``outcome``, ``reason``).
    snapshot: Dict[str, Any]
    timezone: str
    totals: Usage
    until: Optional[str]
    _doc: Dict[str, Any] = _doc_field()

    _convert: ClassVar[Dict[str, Callable[[Any], Any]]] = {
        "rows": _each(UsageRow._from),
        "skipped": _each(Skipped._from),
        "totals": Usage._from,
    }


@dataclass(frozen=True)
class StatusLine(_Document):
    """Claude Code's status line: ``line`` as ``agentlog statusline`` prints it, and the
    figures it is made of, named as ``agentlog statusline --json`` names them."""

    context_percent: Optional[float]
    context_tokens: Optional[int]
    context_window: int
    five_hour_used_percent: Optional[float]
    five_hour_resets_at: Optional[str]
    seven_day_used_percent: Optional[float]
    seven_day_resets_at: Optional[str]
    model: str
    session_id: Optional[str]
    session_total_tokens: int
    since_compaction: Usage
    session_cost_usd: Optional[float]
    today_cost_usd: Optional[float]
    block_total_tokens: Optional[int]
    block_cost_usd: Optional[float]
    block_end: Optional[str]
    unpriced_models: List[str]
    timezone: str
    today_total_tokens: int
    today_transcripts: int
    transcript_path: str
    #: The line itself (not in the JSON figures).
    line: str = ""
    _doc: Dict[str, Any] = _doc_field()
    _formatter: Any = field(default=None, repr=False, compare=False)

    _convert: ClassVar[Dict[str, Callable[[Any], Any]]] = {"since_compaction": Usage._from}

    def format(self, template: str) -> str:
        """``template`` with each ``{name}`` replaced by the figure of that name, as
        ``agentlog statusline --format TEMPLATE`` prints it."""
        return str(self._formatter.format(template))


@dataclass(frozen=True)
class Boundary(_Document):
    """A compaction boundary: where it is in the transcript and what started it."""

    offset: int
    line: int
    kind: str
    trigger: Optional[str]
    pre_tokens: Optional[int]
    _doc: Dict[str, Any] = _doc_field()


@dataclass(frozen=True)
class Generation(_Document):
    """The usage between two compactions, from the byte ``offset`` it starts at."""

    offset: int
    usage: Usage
    _doc: Dict[str, Any] = _doc_field()

    _convert: ClassVar[Dict[str, Callable[[Any], Any]]] = {"usage": Usage._from}


@dataclass(frozen=True)
class Subagent(_Document):
    """A subagent transcript of a Claude Code session: its lifetime usage, or why it could
    not be read."""

    path: str
    lifetime: Optional[Usage]
    index_outcome: Optional[str]
    error: Optional[str]
    _doc: Dict[str, Any] = _doc_field()

    _convert: ClassVar[Dict[str, Callable[[Any], Any]]] = {"lifetime": Usage._from}


@dataclass(frozen=True)
class TranscriptReport(_Document):
    """A transcript's compaction boundaries and token tallies: ``agentlog transcript --json``
    as typed attributes (``lifetime_with_subagents`` and ``subagents`` only with
    ``subagents=True``)."""

    #: The agent (the format's name).
    agent: Optional[str]
    boundaries: List[Boundary]
    covered_bytes: int
    #: Counted oddities of the transcript (``parsed_lines``, ``invalid_lines``, ...).
    diagnostics: Dict[str, int]
    format: str
    #: The archived version read, when the file is gone; None otherwise.
    from_archive: Optional[int]
    generations: List[Generation]
    index: Dict[str, Any]
    index_outcome: str
    index_path: Optional[str]
    lifetime: Usage
    lifetime_with_subagents: Optional[Usage]
    lines: int
    models: List[str]
    path: str
    since_compaction: Usage
    subagents: Optional[List[Subagent]]
    _doc: Dict[str, Any] = _doc_field()

    _convert: ClassVar[Dict[str, Callable[[Any], Any]]] = {
        "boundaries": _each(Boundary._from),
        "generations": _each(Generation._from),
        "lifetime": Usage._from,
        "lifetime_with_subagents": Usage._from,
        "since_compaction": Usage._from,
        "subagents": _each(Subagent._from),
    }


def usage(
    paths: Union[None, PathArg, Sequence[PathArg]] = None,
    *,
    by: str = "day",
    since: Optional[str] = None,
    until: Optional[str] = None,
    timezone: Optional[str] = None,
    cost: str = "auto",
    pricing: Optional[PathArg] = None,
    index_dir: Optional[PathArg] = None,
    snapshot: bool = True,
    agent: Union[None, str, Sequence[str]] = None,
    archive: bool = True,
) -> UsageReport:
    """Token usage and its cost over every transcript under ``paths`` (default: where the
    supported agents keep theirs), each message counted once across files, as ``agentlog
    usage --json`` reports it. ``by``: ``day``, ``week``, ``month``, ``session``, ``project``,
    ``model``, ``block`` or ``agent``; ``agent``: only these agents (``--agent``); ``archive=False``: the files alone, as
    ``--no-archive`` (by default sessions whose files are gone are read from the archive); ``since``/``until``: days (``YYYY-MM-DD`` or ``YYYYMMDD``) in
    ``timezone`` (IANA; default the system's); ``cost``: ``auto``, ``calculate`` or
    ``recorded``; ``pricing``: a LiteLLM price file instead of the embedded table. Raises
    ``InvalidArgument`` for a value that does not parse and ``PricingError`` for a bad price
    file; a transcript that cannot be read is listed in ``skipped``."""
    doc = _agentlog._usage(
        paths,
        by=by,
        since=since,
        until=until,
        timezone=timezone,
        cost=cost,
        pricing=pricing,
        index_dir=index_dir,
        snapshot=snapshot,
        agent=[agent] if isinstance(agent, str) else (list(agent) if agent is not None else None),
        archive=archive,
    )
    return UsageReport._from(doc)  # type: ignore[no-any-return]


def statusline(
    input_json: Union[str, bytes, Mapping[str, Any]],
    *,
    index_dir: Optional[PathArg] = None,
    pricing: Optional[PathArg] = None,
    timezone: Optional[str] = None,
) -> StatusLine:
    """The status line of the JSON Claude Code passes to a ``statusLine`` command (text, bytes
    or an already parsed mapping), as ``agentlog statusline`` prints it; ``timezone`` (IANA,
    default the system's) is the zone whose day "today" is. Raises
    ``InvalidArgument`` for input that is not such a JSON object, ``PricingError`` for a bad
    price file and ``TranscriptError`` when the transcript cannot be read."""
    if isinstance(input_json, Mapping):
        input_json = json.dumps(dict(input_json))
    doc, line, formatter = _agentlog._statusline(
        input_json, index_dir=index_dir, pricing=pricing, timezone=timezone
    )
    built: StatusLine = StatusLine._from(doc)
    return dataclasses.replace(built, line=line, _formatter=formatter, _doc=doc)


def transcript(
    path: PathArg,
    *,
    format: str = "auto",
    subagents: bool = False,
    index_dir: Optional[PathArg] = None,
    archive: bool = True,
) -> TranscriptReport:
    """A transcript's compaction boundaries and token tallies, read in place through its
    index; ``to_dict()`` is the document ``agentlog transcript --json`` prints. ``format``:
    ``auto`` or an agent's name as ``--format`` takes it; ``subagents=True`` (Claude Code only)
    adds its subagents; a file that is gone is read from the archive unless ``archive=False``.
    Raises ``NoTranscript``, ``EmptyTranscript``, ``UnknownFormat`` or ``TranscriptError``."""
    doc = _agentlog.transcript(
        path, format=format, subagents=subagents, index_dir=index_dir, archive=archive
    )
    return TranscriptReport._from(doc)  # type: ignore[no-any-return]

