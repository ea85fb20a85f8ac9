"""agentlog: since-molt token totals and a self-validating index for agent event logs.

An agent appends one JSON event per line to ``AGENT_DIR/logs/events.jsonl``; that file stays the
source of truth. agentlog keeps a derived index beside it, so "how many tokens has this agent
used since its last molt?" is answered in O(1) however large the log grows, and a stale index
is never believed: every call checks the index against the log and catches it up, rebuilds it
or steps down to a scan, saying why.

- :func:`status` answers that question (the document ``agentlog status --json`` prints);
  :func:`generations` lists every generation.
- :class:`Writer` appends events and keeps the index current.
- :class:`Store` queries a directory of dsh-style session logs and searches their text.
- :func:`transcript` reads a Claude Code, Codex or pi transcript in place: its compaction
  boundaries and token tallies (a :class:`TranscriptReport`).
- :func:`usage` adds up token usage and its cost over many transcripts (a :class:`UsageReport`
  of :class:`UsageRow`); :func:`statusline` answers Claude Code's status line (a
  :class:`StatusLine`).
- :mod:`agentlog.lingtai` is a drop-in for the lingtai kernel's
  ``rebuild_agent_session_from_events``.

Every error is an :class:`AgentlogError`; file work runs with the GIL released and every
object may be shared by threads. See docs/PYTHON.md in the repository.
"""

from ._agentlog import (
    AgentlogError,
    CorruptSession,
    EmptyTranscript,
    EventNotFound,
    GenerationError,
    IndexBusy,
    IndexDamaged,
    IndexFailure,
    InvalidArgument,
    InvalidCursor,
    InvalidEvent,
    InvalidQuery,
    Locked,
    LogError,
    ManifestError,
    MoltMismatch,
    NoLog,
    NoStore,
    NoTranscript,
    NotAFile,
    PricingError,
    QueryError,
    SearchIndexFailed,
    SessionNotFound,
    StaleCursor,
    Status,
    Store,
    TranscriptError,
    UnknownFormat,
    Writer,
    __version__,
    generations,
    status,
    write_synthetic_log,
)
from ._reports import (
    Boundary,
    BurnRate,
    Generation,
    Projection,
    Skipped,
    StatusLine,
    Subagent,
    TranscriptReport,
    Usage,
    UsageReport,
    UsageRow,
    statusline,
    transcript,
    usage,
)

__all__ = [
    "AgentlogError",
    "Boundary",
    "BurnRate",
    "CorruptSession",
    "EmptyTranscript",
    "EventNotFound",
    "Generation",
    "GenerationError",
    "IndexBusy",
    "IndexDamaged",
    "IndexFailure",
    "InvalidArgument",
    "InvalidCursor",
    "InvalidEvent",
    "InvalidQuery",
    "Locked",
    "LogError",
    "ManifestError",
    "MoltMismatch",
    "NoLog",
    "NoStore",
    "NoTranscript",
    "NotAFile",
    "PricingError",
    "Projection",
    "QueryError",
    "SearchIndexFailed",
    "SessionNotFound",
    "Skipped",
    "StaleCursor",
    "Status",
    "StatusLine",
    "Store",
    "Subagent",
    "TranscriptError",
    "TranscriptReport",
    "UnknownFormat",
    "Usage",
    "UsageReport",
    "UsageRow",
    "Writer",
    "__version__",
    "generations",
    "status",
    "statusline",
    "transcript",
    "usage",
    "write_synthetic_log",
]
