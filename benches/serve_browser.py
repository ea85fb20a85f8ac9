#!/usr/bin/env python3
"""The viewer in headless Chromium: milliseconds from navigation to the first screen, the
median of 10 loads after one warm-up. The first screen of a session page is its first rendered
line (`#lines article`) on a 100 MB session and on a 30 KB one; of the sessions page, its first
row (`#sessions tbody tr`) over 10,000 sessions. Times are `performance.now()` once the element
is in the page (0 is the navigation's start), beside DOMContentLoaded (the page's shell and
scripts, before any API answer). Prints one JSON object.

Usage: AGENTLOG_CLI=... CHROMIUM=/usr/bin/chromium serve_browser.py AGENTLOG_BINARY [SIZE_MB] [SESSIONS]
(defaults 100 and 10000; Playwright for Python)
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_ttfb import DATA, grow  # noqa: E402

# A session of two lines (a prompt and an answer), its ids made unique per copy.
SMALL = [
    {"type": "user", "sessionId": "S", "uuid": "U1", "timestamp": "2026-01-0{d}T10:00:00.000Z",
     "cwd": "/w", "message": {"role": "user", "content": "session {n}: what changed?"}},
    {"type": "assistant", "sessionId": "S", "uuid": "U2", "parentUuid": "U1",
     "timestamp": "2026-01-0{d}T10:00:05.000Z", "requestId": "req_{n}",
     "message": {"id": "msg_{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                 "content": [{"type": "text", "text": "Nothing yet."}],
                 "usage": {"input_tokens": 10, "output_tokens": 5}}},
]


def small_sessions(root, count):
    template = "\n".join(json.dumps(line) for line in SMALL) + "\n"
    for n in range(count):
        d = root / f"p{n % 20}"
        d.mkdir(exist_ok=True)
        text = template.replace("{n}", str(n)).replace("{d}", str(1 + n % 9))
        text = text.replace('"S"', f'"s-{n}"').replace('"U1"', f'"u1-{n}"').replace('"U2"', f'"u2-{n}"')
        (d / f"s-{n}.jsonl").write_text(text)


def first_screen(page, url, selector):
    """Milliseconds from navigation to `selector` in the page, and to DOMContentLoaded (the
    shell and its scripts, before any API answer)."""
    page.goto(url, wait_until="commit")
    page.wait_for_selector(selector)
    return page.evaluate("""() => [performance.now(),
        performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd]""")


def main():
    binary = sys.argv[1]
    size = int(sys.argv[2] if len(sys.argv) > 2 else 100) * 1_000_000
    count = int(sys.argv[3] if len(sys.argv) > 3 else 10_000)
    tmp = Path(tempfile.mkdtemp())
    try:
        big, many = tmp / "big" / "bench", tmp / "many"
        big.mkdir(parents=True)
        many.mkdir()
        shutil.copy(DATA / "agentlogs-crud.jsonl", big / "small-session.jsonl")
        grow(DATA / "agentlogs-crud.jsonl", big / "big-session.jsonl", size)
        small_sessions(many, count)
        result = {"bytes": (big / "big-session.jsonl").stat().st_size, "sessions": count}
        env = dict(os.environ, AGENTLOG_CACHE_DIR=str(tmp / "cache"))
        with sync_playwright() as p:
            exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--headless"])
            for name, root, pages in [
                ("session", tmp / "big", [("small_ms", "/sessions/small-session", "#lines article"),
                                          ("big_ms", "/sessions/big-session", "#lines article")]),
                ("sessions_page", many, [("ms", "/", "#sessions tbody tr")]),
            ]:
                proc = subprocess.Popen([binary, "serve", "--port", "0", "--json", "--no-archive", str(root)],
                                        stdout=subprocess.PIPE, env=env, text=True)
                try:
                    address = json.loads(proc.stdout.readline())
                    base = f"http://127.0.0.1:{address['port']}"
                    # Wait until the catalog lists every session (it is read in the background).
                    want = 2 if name == "session" else count
                    for _ in range(600):
                        req = urllib.request.Request(f"{base}/api/sessions?limit=1",
                                                     headers={"Authorization": f"Bearer {address['token']}"})
                        if json.load(urllib.request.urlopen(req))["total"] >= want:
                            break
                        time.sleep(0.5)
                    page = browser.new_page()
                    page.goto(address["url"])
                    figures = {}
                    for key, path, selector in pages:
                        first_screen(page, base + path, selector)
                        runs = [first_screen(page, base + path, selector) for _ in range(10)]
                        figures[key] = round(statistics.median(r[0] for r in runs), 1)
                        figures[key.replace("ms", "dom_ready_ms")] = round(
                            statistics.median(r[1] for r in runs), 1)
                    result[name] = figures
                    page.close()
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
            browser.close()
        print(json.dumps(result))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
