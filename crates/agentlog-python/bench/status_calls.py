"""N calls of agentlog.status(agent_dir, molt_count) through `_status_timed`, and nothing else:
for callgrind, which counts instructions exactly, so the binding's own work can be compared
between logs of different sizes without the machine's noise.

    valgrind --tool=callgrind --callgrind-out-file=cg.out python status_calls.py AGENT_DIR 1000
    callgrind_annotate --inclusive=yes cg.out | grep -E "trampoline::cfunction_with_keywords|status::Ask::answer \\["

The binding's instructions per call are (cfunction_with_keywords - Ask::answer) / N: PyO3's
argument handling, the path conversion, releasing and taking back the GIL and the result
object; Ask::answer is the Rust call (docs/PERFORMANCE.md, "Python binding").
"""

from __future__ import annotations

import sys

import agentlog
from agentlog._agentlog import _status_timed


def main() -> None:
    agent_dir, calls = sys.argv[1], int(sys.argv[2])
    molt_count = agentlog.status(agent_dir).molt_count  # builds the index if it must
    for _ in range(calls):
        _status_timed(agent_dir, molt_count)


if __name__ == "__main__":
    main()
