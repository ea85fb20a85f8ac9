"""The lingtai kernel's session types, for when the kernel itself is not installed.

Same names, fields (in the same order, with the same defaults), derived properties and
``token_usage()`` keys as ``lingtai.kernel.agent_session``, written from its documented
contract, so code written against the kernel's objects reads these the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, Optional

MOLT_BOUNDARY_EVENT = "psyche_molt"
"""The event type of a molt boundary; it carries the post-molt ``molt_count``."""

TOKEN_EVENT = "llm_response"
"""The event type carrying one provider round's token usage."""

DEFAULT_MAX_SCAN_BYTES = 8 * 1024 * 1024
"""The kernel's reverse-scan bound (agentlog's reverse scan reads the same 8 MiB)."""


def _utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class RuntimeSession:
    """The current runtime segment (process start, refresh or restart): no id, no totals."""

    started_at: str = field(default_factory=_utc_now_iso)


def new_runtime_session() -> RuntimeSession:
    """A fresh runtime session, as the kernel mints at each runtime boundary."""
    return RuntimeSession()


@dataclass
class AgentSession:
    """One molt generation of an agent: identified by ``molt_count`` alone, with its totals.

    ``rebuild_tier`` says who answered: ``"sqlite"`` (agentlog's index), ``"reverse_scan"``,
    ``"full_scan"``, or ``"none"`` (nothing usable; the kernel then uses its ledger fallback).
    """

    molt_count: int
    started_at: Optional[str] = None
    boundary_source: str = "boot"
    boundary_offset: Optional[int] = None
    api_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    thinking_tokens: int = 0
    rebuild_tier: str = "none"
    rebuild_events_scanned: int = 0

    @property
    def cache_miss_tokens(self) -> int:
        """Input tokens that were not cached (never negative)."""
        return max(self.input_tokens - self.cached_tokens, 0)

    @property
    def cache_rate(self) -> float:
        """Cached over input tokens, capped at 1 and rounded to 5 places (0.0 without input)."""
        if self.input_tokens <= 0:
            return 0.0
        return round(min(self.cached_tokens / self.input_tokens, 1.0), 5)

    @property
    def avg_input_tokens_per_api_call(self) -> int:
        """Input tokens per API call, rounded (0 without calls)."""
        if self.api_calls <= 0:
            return 0
        return int(round(self.input_tokens / self.api_calls))

    def token_usage(self) -> Dict[str, Any]:
        """The since-molt aggregate in the kernel's ``token_usage.session`` shape."""
        return {
            "session_cache_rate": self.cache_rate,
            "api_calls": self.api_calls,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_miss_tokens": self.cache_miss_tokens,
            "avg_input_tokens_per_api_call": self.avg_input_tokens_per_api_call,
        }
