"""The viewer's screenshots in docs/screenshots/: `agentlog serve` over the test transcripts in
headless Chromium, each page shot whole at 1100 px wide once its charts have drawn.

Run: AGENTLOG_CLI=target/debug/agentlog CHROMIUM=/usr/bin/chromium python tests/browser/screenshots.py [PAGE...]
PAGE is one of sessions, session, search, usage (default: every page this script knows).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "screenshots"
# Each page: its address, what shows once it has drawn, and whether it is shot whole (the
# others: the first screen, as a visitor sees it).
PAGES = {
    "sessions": ("/", "#sessions tbody tr", False),
    "session": ("/sessions/agentlogs-compact", "#chart canvas", False),
    "search": ("/search?q=how%20are%20you%20doing", "#hits .hit-link", False),
    "usage": ("/usage", "#blocks-chart canvas", True),
}


def main():
    names = sys.argv[1:] or list(PAGES)
    tmp = Path(tempfile.mkdtemp())
    root = tmp / "t"
    shutil.copytree(ROOT / "tests" / "data" / "transcripts", root)
    cli = os.environ.get("AGENTLOG_CLI", str(ROOT / "target" / "debug" / "agentlog"))
    env = dict(os.environ, AGENTLOG_CACHE_DIR=str(tmp / "cache"), TZ="UTC")
    proc = subprocess.Popen([cli, "serve", "--port", "0", "--json", "--no-archive", str(root)],
                            stdout=subprocess.PIPE, env=env, text=True)
    try:
        address = json.loads(proc.stdout.readline())
        with sync_playwright() as p:
            exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--headless"])
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(address["url"])
            OUT.mkdir(parents=True, exist_ok=True)
            for name in names:
                path, ready, whole = PAGES[name]
                page.goto(f"http://127.0.0.1:{address['port']}{path}")
                page.wait_for_selector(ready)
                page.wait_for_timeout(300)
                page.screenshot(path=str(OUT / f"{name}.png"), full_page=whole)
                print(OUT / f"{name}.png")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
