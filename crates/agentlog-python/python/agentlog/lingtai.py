"""The lingtai kernel's since-molt rebuild, answered by agentlog.

The kernel rebuilds its "agent session" (the token totals since the last molt) on every start
with ``lingtai.kernel.agent_session.rebuild_agent_session_from_events``. This module exposes the
same entry point, with the same name, signature and return type, so the kernel switches with
one import::

    from agentlog.lingtai import rebuild_agent_session_from_events

The answer comes from agentlog's index over ``logs/events.jsonl`` (validated against the log
on every call), or its bounded reverse scan, or its full scan. The result is the kernel's own
``AgentSession`` class when ``lingtai.kernel.agent_session`` can be imported, else a dataclass
defined here with the identical fields, properties and ``token_usage()``.

``rebuild_tier`` uses the kernel's vocabulary: ``"sqlite"`` stands for agentlog's index tier
(the kernel's indexed tier), ``"reverse_scan"`` and ``"full_scan"`` for the scans, and
``"none"`` for "nothing usable: use your fallback" (no log, or a log that does not prove the
requested generation). docs/PYTHON.md lists every way the answer differs from the kernel's, each
one a fix.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

from . import _agentlog

try:  # The kernel's own types, when it is installed, so isinstance() checks keep working.
    from lingtai.kernel.agent_session import (  # type: ignore[import-not-found]
        DEFAULT_MAX_SCAN_BYTES,
        MOLT_BOUNDARY_EVENT,
        TOKEN_EVENT,
        AgentSession,
        RuntimeSession,
        new_runtime_session,
    )

    KERNEL_TYPES = True
except Exception:  # not installed, or a kernel whose module imports this one
    from ._lingtai_types import (
        DEFAULT_MAX_SCAN_BYTES,
        MOLT_BOUNDARY_EVENT,
        TOKEN_EVENT,
        AgentSession,
        RuntimeSession,
        new_runtime_session,
    )

    KERNEL_TYPES = False

__all__ = [
    "RuntimeSession",
    "AgentSession",
    "MOLT_BOUNDARY_EVENT",
    "TOKEN_EVENT",
    "DEFAULT_MAX_SCAN_BYTES",
    "KERNEL_TYPES",
    "rebuild_agent_session_from_events",
    "new_runtime_session",
]

SqliteQueryFn = Callable[[str], List[Dict[str, Any]]]
"""The kernel's type of an injected sidecar query function (accepted, not consulted)."""

# agentlog's tier names -> the kernel's rebuild_tier vocabulary.
_KERNEL_TIER = {"index": "sqlite", "reverse_scan": "reverse_scan", "full_scan": "full_scan"}


def _iso(ts: Optional[float]) -> Optional[str]:
    """The boundary time as the kernel's indexed tier writes it: ISO 8601, UTC, 'Z'."""
    if not ts:
        return None
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def rebuild_agent_session_from_events(
    agent_dir: Union[Path, str],
    *,
    molt_count: int,
    sqlite_query_fn: Optional[SqliteQueryFn] = None,
    events_path: Union[Path, str, None] = None,
    sqlite_path: Union[Path, str, None] = None,
    allow_full_scan: bool = True,
    logger_fn: Optional[Callable[..., None]] = None,
) -> AgentSession:
    """Rebuild the current agent session for ``molt_count`` from the trajectory.

    The kernel's entry point, answered by agentlog: the totals of generation ``molt_count``
    (``llm_response`` events since the ``psyche_molt`` boundary that carries that
    ``molt_count``), from the index in O(1) after an O(1) validation, else a bounded reverse
    scan, else a full scan, with one extractor and one coercion rule in every tier.

    - No log (a brand-new agent): the kernel's empty boot session, ``rebuild_tier="none"``.
    - A log whose latest boundary does not carry ``molt_count`` (a crash between the manifest
      bump and the boundary append, a stale manifest, another agent's log): also an empty
      ``"none"`` session, never another generation's totals; ``logger_fn`` (if given) receives
      ``"agent_session_rebuild_mismatch"`` with ``molt_count``, ``found``, ``boundary_offset``.
    - ``sqlite_query_fn`` and ``sqlite_path`` are accepted for compatibility and not consulted:
      the log is the source of truth and agentlog's own index replaces the sidecar.
    - ``events_path`` names the log when it is not ``agent_dir/logs/events.jsonl``.
    - ``allow_full_scan=False``: an answer that needed the full-scan tier is replaced by the
      empty ``"none"`` session, as the kernel does after a reverse-scan miss.
    - ``logger_fn`` receives ``"agent_session_rebuild_fullscan"`` (``molt_count``, ``reason``)
      when the full-scan tier answered.

    Raises ``TypeError``/``ValueError`` for a ``molt_count`` that is not an int >= 0, and an
    ``agentlog.AgentlogError`` for a log or index that exists but cannot be read (the kernel's
    start-up catches exceptions and falls back to its ledger).
    """
    empty = AgentSession(molt_count=molt_count, boundary_source="boot")
    try:
        answer = _agentlog.status(agent_dir, molt_count, log=events_path)
    except _agentlog.NoLog:
        return empty
    except _agentlog.MoltMismatch as mismatch:
        if logger_fn is not None:
            logger_fn(
                "agent_session_rebuild_mismatch",
                molt_count=molt_count,
                found=mismatch.found,
                boundary_offset=mismatch.boundary_offset,
                reason=str(mismatch),
            )
        return empty
    tier = _KERNEL_TIER.get(answer.tier, answer.tier)
    if answer.tier == "full_scan":
        if not allow_full_scan:
            return empty
        if logger_fn is not None:
            logger_fn(
                "agent_session_rebuild_fullscan",
                molt_count=molt_count,
                reason="; ".join(f"{s['tier']}: {s['reason']}" for s in answer.stepped_aside),
            )
    return AgentSession(
        molt_count=molt_count,
        started_at=_iso(answer.boundary_ts) if answer.boundary_offset is not None else None,
        boundary_source=answer.boundary_initiator,
        boundary_offset=answer.boundary_offset,
        api_calls=answer.api_calls,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        cached_tokens=answer.cached_tokens,
        thinking_tokens=answer.thinking_tokens,
        rebuild_tier=tier,
        rebuild_events_scanned=answer.api_calls,
    )
