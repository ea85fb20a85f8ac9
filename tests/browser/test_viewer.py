"""`agentlog serve` in a real headless Chromium (Playwright): the four pages load with no
console error and no CSP violation, the hostile transcript renders inert (no dialog, no script
run, no request to another origin), search opens a session at the hit's line, and the sessions
page pages on the server.

Run: AGENTLOG_CLI=target/debug/agentlog CHROMIUM=/usr/bin/chromium python -m pytest tests/browser
"""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def viewer():
    tmp = Path(tempfile.mkdtemp())
    root = tmp / "t"
    shutil.copytree(DATA / "transcripts", root)
    shutil.copytree(DATA / "serve" / "hostile", root / "hostile")
    cli = os.environ.get("AGENTLOG_CLI", str(ROOT / "target" / "debug" / "agentlog"))
    env = dict(os.environ, AGENTLOG_CACHE_DIR=str(tmp / "cache"))
    proc = subprocess.Popen([cli, "serve", "--port", "0", "--json", str(root)],
                            stdout=subprocess.PIPE, env=env, text=True)
    address = json.loads(proc.stdout.readline())
    # The oracle for the session count: the CLI's own sessions over the same files (OpenCode's
    # database included).
    usage = subprocess.run([cli, "usage", "--by", "session", "--json", str(root)],
                           capture_output=True, env=env, text=True, check=True)
    rows = json.loads(usage.stdout)["rows"]
    address["sessions"] = len(rows)
    # The oracles of the usage page: the CLI's day and block reports over the same files.
    address["usage"] = {by: json.loads(subprocess.run(
        [cli, "usage", "--by", by, "--json", str(root)],
        capture_output=True, env=env, text=True, check=True).stdout) for by in ["day", "block"]}
    yield address
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--headless"])
        yield b
        b.close()


class Watch:
    """What a page did that it must not: console errors, CSP violations, dialogs, requests
    to another origin."""

    def __init__(self, page, port):
        self.errors, self.dialogs, self.outside = [], [], []
        origin = f"http://127.0.0.1:{port}"
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: r.url.startswith(origin) or r.url.startswith("data:")
                or self.outside.append(r.url))

    def clean(self):
        assert self.errors == [], self.errors
        assert self.dialogs == [], self.dialogs
        assert self.outside == [], self.outside


def open_page(browser, viewer, path="/"):
    page = browser.new_page()
    watch = Watch(page, viewer["port"])
    # The printed address sets the cookie and redirects to the sessions page.
    page.goto(viewer["url"])
    if path != "/":
        page.goto(f"http://127.0.0.1:{viewer['port']}{path}")
    return page, watch


def test_sessions_page_lists_the_transcripts_and_pages(browser, viewer):
    page, watch = open_page(browser, viewer)
    page.wait_for_selector("#sessions tbody tr")
    text = page.inner_text("#sessions")
    assert "how are you doing" in text  # agentlogs-compact's first prompt
    assert "hostile prompt" in text
    assert page.inner_text("#count").startswith(f"{viewer['sessions']} sessions")
    # Server-side paging: 5 a page, then the next page.
    page.goto(f"http://127.0.0.1:{viewer['port']}/?limit=5")
    page.wait_for_selector("#next-page")
    first = page.locator("#sessions tbody tr").count()
    page.click("#next-page")
    page.wait_for_selector("#first-page")
    assert first == 5 and page.locator("#sessions tbody tr").count() == 5
    watch.clean()


def test_session_page_shows_messages_and_a_compaction_divider(browser, viewer):
    page, watch = open_page(browser, viewer, "/sessions/agentlogs-compact")
    page.wait_for_selector("#lines article")
    assert "how are you doing" in page.inner_text("#lines")
    assert page.locator(".divider").count() == 1
    assert "compaction" in page.inner_text(".divider")
    page.wait_for_selector("#chart canvas")
    watch.clean()


def test_opencode_session_opens_with_its_messages(browser, viewer):
    # Listed like every agent's session; its page shows the database's messages by place.
    page, watch = open_page(browser, viewer, "/?agent=opencode")
    page.wait_for_selector("#sessions tbody tr")
    assert page.locator("#sessions tbody tr").count() == 1
    page.click("#sessions .session-link")
    page.wait_for_selector("#lines article")
    assert page.locator("#lines article").count() >= 5
    assert "assistant" in page.inner_text("#lines").lower()
    assert page.locator("#follow").is_disabled()
    watch.clean()


def test_hostile_transcript_renders_inert(browser, viewer):
    page, watch = open_page(browser, viewer, "/sessions/hostile-session")
    page.wait_for_selector("#lines article")
    # Open every collapsed part so tool input, output and thinking are in the DOM.
    page.eval_on_selector_all("details", "ds => ds.forEach(d => d.open = true)")
    page.wait_for_timeout(300)
    text = page.inner_text("#lines")
    for shown in ["<script>window.__pwned=1", "<img src=x onerror=", "javascript:alert(3)",
                  "<svg onload=alert(7)>", "<script src=http://example.invalid/e.js>"]:
        assert shown in text, shown
    assert page.evaluate("window.__pwned === undefined")
    inside = page.locator("#lines")
    for tag in ["script", "img", "iframe", "svg", "style", "link"]:
        assert inside.locator(tag).count() == 0, tag
    assert page.locator("#lines a[href^='javascript']").count() == 0
    assert page.locator("#title").inner_text().startswith("<script>")
    watch.clean()


def test_search_finds_a_phrase_and_opens_the_session_at_its_line(browser, viewer):
    page, watch = open_page(browser, viewer, "/search?q=how%20are%20you%20doing")
    page.wait_for_selector("#hits .hit-link")
    assert page.locator("#hits mark").count() >= 1
    link = page.locator("#hits .hit-link").first
    href = link.get_attribute("href")
    assert "offset=" in href
    offset = href.split("offset=")[1]
    link.click()
    page.wait_for_selector(f"#L{offset}.target")
    assert "how are you doing" in page.inner_text(f"#L{offset}")
    watch.clean()


def test_usage_page_stacks_by_model_and_lists_the_blocks(browser, viewer):
    page, watch = open_page(browser, viewer, "/usage")
    page.wait_for_selector("#tokens-by-day canvas")
    page.wait_for_selector("#blocks-chart canvas")
    page.wait_for_selector("#tokens-by-project canvas")
    # One series per model with dated usage in the fixture (the CLI's day rows name them).
    days = viewer["usage"]["day"]["rows"]
    models = sorted({m for r in days if r["day"] != "unknown" for m in r["models"]})
    assert len(models) >= 3
    for chart in ["#tokens-by-day", "#cost-by-day"]:
        labels = page.locator(f"{chart} .u-legend .u-series .u-label").all_inner_texts()
        assert sorted(labels[1:]) == models, (chart, labels)  # [0] is the x axis
        assert page.evaluate(f"""() => {{
            const c = document.querySelector('{chart} canvas');
            const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            for (let i = 3; i < px.length; i += 4) if (px[i]) return true;
            return false;
        }}""")
    # The blocks table lists the CLI's blocks, each once, with its state.
    blocks = viewer["usage"]["block"]["rows"]
    rows = page.locator("#blocks tbody tr")
    assert rows.count() == len(blocks) > 0
    shown = sorted(zip(rows.evaluate_all("rs => rs.map(r => r.dataset.start)"),
                       [t.split("\t")[2] for t in rows.all_inner_texts()]))
    want = sorted((b["start"], "gap" if b["is_gap"] else "active" if b["is_active"] else "ended")
                  for b in blocks)
    assert shown == want
    assert page.locator("#by-model tbody tr").count() >= 3
    watch.clean()


def test_usage_page_shows_the_active_blocks_burn_rate_and_projection(browser):
    """A session written in the last hour: its block is active, with a pace and a projection
    (the oracle: `usage --by block --json` over the same file)."""
    import datetime
    tmp = Path(tempfile.mkdtemp())
    root = tmp / "p"
    root.mkdir()
    now = datetime.datetime.now(datetime.timezone.utc)
    lines = []
    for i in range(4):
        t = (now - datetime.timedelta(minutes=40 - i * 10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        lines.append({"type": "user", "sessionId": "act", "uuid": f"u{i}", "timestamp": t,
                      "cwd": "/w", "message": {"role": "user", "content": f"step {i}"}})
        lines.append({"type": "assistant", "sessionId": "act", "uuid": f"a{i}",
                      "parentUuid": f"u{i}", "timestamp": t, "requestId": f"r{i}",
                      "message": {"id": f"m{i}", "role": "assistant", "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": "ok"}],
                                  "usage": {"input_tokens": 1000, "output_tokens": 500}}})
    (root / "act.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    cli = os.environ.get("AGENTLOG_CLI", str(ROOT / "target" / "debug" / "agentlog"))
    env = dict(os.environ, AGENTLOG_CACHE_DIR=str(tmp / "cache"))
    proc = subprocess.Popen([cli, "serve", "--port", "0", "--json", "--no-archive", str(root)],
                            stdout=subprocess.PIPE, env=env, text=True)
    try:
        address = json.loads(proc.stdout.readline())
        blocks = json.loads(subprocess.run(
            [cli, "usage", "--by", "block", "--json", "--no-archive", str(root)],
            capture_output=True, env=env, text=True, check=True).stdout)["rows"]
        assert len(blocks) == 1 and blocks[0]["is_active"] and blocks[0]["projection"]
        page, watch = open_page(browser, address, "/usage")
        page.wait_for_selector("#blocks-chart canvas")
        text = page.inner_text("#active-block")
        assert f"{blocks[0]['total_tokens']:,} tokens" in text, text
        assert "tokens/min" in text and "projected" in text and "min left" in text, text
        assert page.locator("#blocks tbody tr.active").count() == 1
        watch.clean()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


def test_401_without_the_token_and_403_for_a_foreign_host(browser, viewer):
    page = browser.new_page()
    response = page.goto(f"http://127.0.0.1:{viewer['port']}/")
    assert response.status == 401
    # A browser will not send a foreign Host itself; a request context will (DNS rebinding's
    # effect: another name on this address).
    ctx = browser.new_context()
    response = ctx.request.get(viewer["url"], headers={"Host": f"evil.example:{viewer['port']}"},
                               max_redirects=0)
    assert response.status == 403
    ctx.close()
