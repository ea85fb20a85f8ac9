"""The README's Python example, run as written, so it cannot rot."""

from __future__ import annotations

import re

from conftest import REPO


def test_the_readme_python_example_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "README.md lost its Python example"
    lines = code.group(1).strip().splitlines()
    assert len(lines) <= 12
    exec(compile(code.group(1), "README.md", "exec"), {})
