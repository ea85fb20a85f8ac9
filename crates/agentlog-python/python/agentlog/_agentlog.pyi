"""Type stubs of agentlog's native module (agentlog._agentlog); see agentlog/__init__.py."""

import os
from pathlib import Path
from types import TracebackType
from typing import Any, Dict, Iterable, List, Literal, Optional, Tuple, Type, Union

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
TierName = Literal["index", "reverse_scan", "full_scan"]
SurfaceName = Literal["current", "shadowed", "log-only"]

__version__: str

class AgentlogError(Exception):
    """Base class of every agentlog error; `code` is the CLI's stable error code."""

    code: str

class GenerationError(AgentlogError):
    """The current generation cannot be answered."""

class NoLog(GenerationError):
    """There is no log at `path`."""

    path: str

class MoltMismatch(GenerationError):
    """The log's latest boundary does not carry the expected molt_count."""

    expected: int
    found: Optional[int]
    boundary_offset: Optional[int]
    tier: TierName

class ManifestError(GenerationError):
    """The agent's .agent.json cannot be read or holds no valid molt_count."""

    path: Optional[str]

class LogError(AgentlogError):
    """Opening, reading or appending to the log failed."""

class NotAFile(LogError):
    """The log path exists but is not a regular file."""

    path: str

class Locked(LogError):
    """Another writer holds the log's lock."""

    path: str

class InvalidEvent(LogError):
    """An event is not one JSON object within the line limit; nothing was written."""

    index: int

class IndexFailure(AgentlogError):
    """The index failed in a way no lower tier can step around."""

class IndexBusy(IndexFailure):
    """Another process kept the index busy for too long."""

class IndexDamaged(IndexFailure):
    """A row of the index failed its checksum."""

class QueryError(AgentlogError):
    """A session-store query failed; `code` names the variant."""

class NoStore(QueryError):
    """The store root is not a directory."""

    path: str

class SessionNotFound(QueryError):
    """No session has this id."""

    session_id: str

class EventNotFound(QueryError):
    """The session has no event with this seq."""

    session_id: str
    seq: int

class InvalidQuery(QueryError):
    """A window, filter, session id, configuration value, search query or limit is malformed.

    A search's `invalid_limit` also carries `limit` and `max`.
    """

class InvalidCursor(InvalidQuery):
    """A search cursor was not made for this very request by this store's index."""

class StaleCursor(InvalidCursor):
    """The sessions a search cursor covers changed since it was made."""

class SearchIndexFailed(QueryError):
    """The search index failed; the logs are untouched."""

class CorruptSession(QueryError):
    """A stored session log is damaged or breaks the event rules.

    Raised by a search of that session's events with `session_id` set.
    """

class TranscriptError(AgentlogError):
    """A transcript could not be read; `code` names the variant (`not_a_file`, `io_error`,
    `bad_input` for `subagents=True` on a transcript that is not Claude Code's)."""

    path: str

class NoTranscript(TranscriptError):
    """There is no file at `path`."""

class EmptyTranscript(TranscriptError):
    """The transcript holds no complete line yet."""

class UnknownFormat(TranscriptError):
    """The first lines look like no known agent's; pass `format`."""

class InvalidArgument(AgentlogError):
    """An argument does not parse (a day, a time zone, a cost mode, a grouping, a status-line
    input); `argument` names it. `code` is `bad_input`."""

    argument: str

class PricingError(AgentlogError):
    """The price file cannot be read or is not a LiteLLM price table. `code` is
    `bad_pricing`."""

    path: str

class Status:
    """The answer of status(): immutable; the fields of `agentlog status --json`."""

    @property
    def agent_dir(self) -> str: ...
    @property
    def tier(self) -> TierName: ...
    @property
    def molt_count(self) -> Optional[int]: ...
    @property
    def verified(self) -> bool: ...
    @property
    def expected_molt_count(self) -> Optional[int]: ...
    @property
    def expected_from(self) -> Optional[Literal["flag", "manifest"]]: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def thinking_tokens(self) -> int: ...
    @property
    def api_calls(self) -> int: ...
    @property
    def boundary_offset(self) -> Optional[int]: ...
    @property
    def boundary_initiator(self) -> str: ...
    @property
    def boundary_ts(self) -> Optional[float]: ...
    @property
    def boundary_molt_count(self) -> Optional[int]: ...
    @property
    def index_outcome(self) -> Optional[str]: ...
    @property
    def index(self) -> Optional[Dict[str, Any]]: ...
    @property
    def stepped_aside(self) -> List[Dict[str, str]]: ...
    @property
    def bytes_read(self) -> int: ...
    @property
    def diagnostics(self) -> Dict[str, Any]: ...
    def to_dict(self) -> Dict[str, Any]:
        """The `agentlog status --json` document (a new dict each call)."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

def status(
    agent_dir: PathArg,
    molt_count: Optional[int] = None,
    tier: Optional[TierName] = None,
    *,
    log: Optional[PathArg] = None,
    reverse_scan_bytes: int = 8388608,
    trust_legacy_boundaries: bool = False,
    max_memory_tail: int = 262144,
) -> Status:
    """The current generation's totals of the agent in agent_dir (`agentlog status --json`).

    Raises MoltMismatch, NoLog, ManifestError (all GenerationError), or another AgentlogError.
    """

def _status_timed(
    agent_dir: PathArg,
    molt_count: Optional[int] = None,
    tier: Optional[str] = None,
    *,
    log: Optional[PathArg] = None,
    reverse_scan_bytes: int = 8388608,
    trust_legacy_boundaries: bool = False,
    max_memory_tail: int = 262144,
) -> "tuple[Status, float]":
    """status() and the seconds spent in the Rust call inside it (for the overhead benchmark)."""

def _status_loop(agent_dir: PathArg, molt_count: Optional[int] = None, calls: int = 1) -> List[float]:
    """The Rust call behind status(), run `calls` times without returning to Python: the
    seconds of each call (for the overhead benchmark)."""

def generations(agent_dir: PathArg) -> List[Dict[str, Any]]:
    """Every generation, oldest first (`agentlog generations --json`)."""

def write_synthetic_log(
    agent_dir: PathArg,
    *,
    responses: Optional[int] = None,
    target_bytes: Optional[int] = None,
    seed: int = 42,
) -> Dict[str, int]:
    """Writes a deterministic lingtai-shaped log and .agent.json; returns the answer key."""

Event = Union[Dict[str, Any], str, bytes]

class Writer:
    """The single writer of agent_dir/logs/events.jsonl and its index."""

    def __init__(
        self,
        agent_dir: PathArg,
        sync: Literal["fsync", "interval", "none"] = "fsync",
        *,
        interval_ms: int = 50,
    ) -> None: ...
    def append(self, event: Event) -> int:
        """Appends one event; returns its byte offset once acknowledged."""
    def append_many(self, events: Iterable[Event]) -> List[int]:
        """Appends all events in one write (all or nothing); returns their offsets."""
    def sync(self) -> None:
        """Forces the log to disk now."""
    def close(self) -> None:
        """Commits the index and closes the log (idempotent)."""
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> Path:
        """The log's path."""
    def __enter__(self) -> "Writer": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Store:
    """A directory of dsh-style session logs, opened for reading."""

    def __init__(self, root: PathArg) -> None: ...
    @property
    def root(self) -> Path:
        """The store directory."""
    def sessions(self) -> List[Dict[str, Any]]:
        """`agentlog sessions --json`."""
    def events(
        self,
        session: str,
        *,
        types: Union[str, Iterable[str], None] = None,
        surface: Optional[Literal["current", "shadowed", "log-only"]] = None,
        text: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """`agentlog events --json`."""
    def read(
        self, session: str, seq: int, *, before: Optional[int] = None, after: Optional[int] = None
    ) -> Dict[str, Any]:
        """`agentlog read --json`."""
    def trace_session(self, session: str) -> Dict[str, Any]:
        """`agentlog trace-session --json`: the lineage tree.

        `{target, ancestors, descendants, complete, root}`, or with `complete` False
        `unresolvedParentId` in place of `root`; each session is a `{header, live, persisted}`
        record, each descendant a `{session, descendants}` node. Built without recursion, so
        any depth works; Python's own `==`, `repr` and `json` recurse and give up on a tree a
        few hundred levels deep, so walk one with a loop.
        """
    def trace_event(self, session: str, seq: int) -> Dict[str, Any]:
        """`agentlog trace-event --json`."""
    def search(
        self,
        query: str,
        *,
        session: Optional[str] = None,
        types: Union[str, Iterable[str], None] = None,
        surfaces: Union[SurfaceName, Iterable[SurfaceName], None] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        match: Literal["phrase", "all"] = "phrase",
    ) -> Dict[str, Any]:
        """`agentlog search --json`: one page of a full-text search.

        Without `session`: `{hits: [{header, live, persisted, bestMatch}], nextCursor?,
        unreadable}`; with it: `{session, hits, nextCursor?}`; a hit is `{sessionId, seq,
        type, time, surface, snippet}`. `nextCursor` is absent on the last page. Bad requests
        raise `InvalidQuery` (`InvalidCursor`, `StaleCursor`) or `SessionNotFound`.
        """

def transcript(
    path: PathArg,
    *,
    format: Literal[
        "auto", "claude-code", "codex", "pi", "gemini", "qwen", "copilot", "kimi"
    ] = "auto",
    subagents: bool = False,
    index_dir: Optional[PathArg] = None,
    archive: bool = True,
) -> Dict[str, Any]:
    """`agentlog transcript --json`: a transcript's boundaries and token tallies.

    A transcript whose file is gone is read from the archive (`from_archive` is the version
    read, else `None`); `archive=False` reads the file alone.

    Keys: `path`, `format`, `boundaries`, `generations`, `since_compaction`, `lifetime`,
    `index_outcome`, `index`, `index_path`, `covered_bytes`, `lines`, `models`, `diagnostics`;
    with `subagents=True` (Claude Code only) also `lifetime_with_subagents` and `subagents`.
    The index lives in the per-user cache (or `index_dir`), never beside the transcript.
    `agentlog.transcript` wraps it in a `TranscriptReport`.
    """

def _usage(
    paths: Union[None, PathArg, List[PathArg], Tuple[PathArg, ...]] = None,
    *,
    by: Literal["day", "week", "month", "session", "project", "model", "block", "agent"] = "day",
    since: Optional[str] = None,
    until: Optional[str] = None,
    timezone: Optional[str] = None,
    cost: Literal["auto", "calculate", "recorded"] = "auto",
    pricing: Optional[PathArg] = None,
    index_dir: Optional[PathArg] = None,
    snapshot: bool = True,
    agent: Optional[List[str]] = None,
    archive: bool = True,
) -> Dict[str, Any]:
    """`agentlog usage --json`; `agentlog.usage` wraps it in a `UsageReport`."""

def _statusline(
    input_json: Union[str, bytes],
    *,
    index_dir: Optional[PathArg] = None,
    pricing: Optional[PathArg] = None,
    timezone: Optional[str] = None,
) -> Tuple[Dict[str, Any], str, StatusFormatter]:
    """`agentlog statusline --json`, the line it prints, and its `--format`;
    `agentlog.statusline` wraps them in a `StatusLine`."""

class StatusFormatter:
    """A status line kept on the Rust side for `--format` templates."""

    def format(self, template: str) -> str:
        """`template` with each `{name}` replaced by that figure."""
