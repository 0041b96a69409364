"""The document page of a repository file shows the agent sessions behind its lines
(chinvex.web.provenance): tested over real HTTP against a real `chinvex ui` process serving a
context whose repository was written by replaying two real Codex rollouts
(tests/fixtures/samples/codex-rollout/generated-0.169.0/apply-patch: the first adds
net/retry.py, the second adds jitter to it), one commit per session, and then a line a person
wrote; and in a real headless Chromium when Debian's chromium is installed.

The pure parts (notes instead of sessions, short ids, escaping) are tested on their own below.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import FIXTURES, git, init_repo, run_cli_in_process
from ui_harness import HOSTILE, UiRun, serving_ui

SESSIONS = FIXTURES / "codex-rollout" / "generated-0.169.0" / "apply-patch" / "sessions"
ROLLOUTS = sorted((SESSIONS / "2026" / "11" / "28").glob("rollout-*.jsonl"))
HELPER = "01a2240a-5ee5-7170-a256-a40cba21d208"
"""The session that added net/retry.py (turn 3: the apply_patch call; turn 1: the request)."""
JITTER = "01a2240a-7629-7143-95ba-74722ae2ab78"
"""The session that added jitter to it (turn 3: its apply_patch call)."""
PERSON_LINES = "\n\n# tuned by hand after the outage\nMAX_ATTEMPTS = 6\n"
RETRY = """\
\"\"\"Retry a flaky network call with exponential backoff.\"\"\"

import time
import random


def with_backoff(call, attempts=4, base_delay=0.25):
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError:
            if attempt == attempts - 1:
                raise
            delay = base_delay * 2 ** attempt
            time.sleep(delay + random.uniform(0, delay / 2))


# tuned by hand after the outage
MAX_ATTEMPTS = 6
"""
"""net/retry.py at the end: what the two sessions wrote, then the person's lines."""
HELPER_LINES = {1, 3, 7, 8, 9, 10, 11, 12, 13}
JITTER_LINES = {4, 14, 15}


# -- replaying the rollouts -------------------------------------------------------------------


def apply_patch(root: Path, patch: str) -> None:
    """Codex's `*** Begin Patch` format, as the apply_patch tool applies it: added files, and
    updated files whose hunks (context, `-` and `+` lines) replace the first place their old
    lines stand, each after the previous hunk."""
    target: Path | None = None
    adding: Path | None = None
    hunks: list[list[str]] = []

    def flush() -> None:
        if target is None or not hunks:
            return
        lines = target.read_text(encoding="utf-8").split("\n")
        at = 0
        for hunk in hunks:
            old = [h[1:] for h in hunk if h[:1] in (" ", "-")]
            new = [h[1:] for h in hunk if h[:1] in (" ", "+")]
            found = next(i for i in range(at, len(lines) - len(old) + 1) if lines[i:i + len(old)] == old)
            lines[found:found + len(old)] = new
            at = found + len(new)
        target.write_text("\n".join(lines), encoding="utf-8")

    for line in patch.split("\n"):
        if line.startswith("*** Add File: "):
            flush()
            target, hunks = None, []
            added = root / line.removeprefix("*** Add File: ")
            added.parent.mkdir(parents=True, exist_ok=True)
            added.write_text("", encoding="utf-8")
            adding = added
            continue
        if line.startswith("*** Update File: "):
            flush()
            target, hunks, adding = root / line.removeprefix("*** Update File: "), [], None
            continue
        if line.startswith("*** End Patch"):
            flush()
            target, hunks = None, []
            continue
        if line.startswith("*** Begin Patch"):
            adding = None
            continue
        if adding is not None and line.startswith("+"):
            with adding.open("a", encoding="utf-8") as out:
                out.write(line[1:] + "\n")
        elif target is not None and line.startswith("@@"):
            hunks.append([])
        elif target is not None and hunks and line[:1] in (" ", "-", "+"):
            hunks[-1].append(line)


def replay(rollout: Path, repo: Path) -> tuple[str, datetime]:
    """Apply every apply_patch call of a real rollout to `repo`; its thread id and start time."""
    thread, started = "", None
    for raw in rollout.read_text(encoding="utf-8").splitlines():
        item = json.loads(raw)
        payload = item.get("payload") or {}
        if item.get("type") == "session_meta":
            thread = payload["id"]
            started = datetime.fromisoformat(payload["timestamp"].replace("Z", "+00:00"))
        elif (item.get("type") == "response_item" and payload.get("type") == "custom_tool_call"
              and payload.get("name") == "apply_patch"):
            apply_patch(repo, payload["input"])
    assert thread and started is not None, rollout
    return thread, started


@dataclass
class World:
    ui: UiRun
    repo: Path
    context: str
    threads: list[str]


def build_world(base: Path) -> tuple[Path, Path, list[str]]:
    """A git repository written by the two sessions (each committed a minute after it started)
    and then by a person, a second file that is deleted after the ingest, and a context "blamed"
    over the repository and the sessions, ingested. Returns (home, repo, thread ids)."""
    home, repo = base / "home", base / "repo"
    init_repo(repo)
    threads, last = [], None
    for rollout in ROLLOUTS:
        thread, started = replay(rollout, repo)
        last = started + timedelta(minutes=1)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"codex session {thread[:13]}", when=last)
        threads.append(thread)
    retry = repo / "net" / "retry.py"
    retry.write_text(retry.read_text(encoding="utf-8") + PERSON_LINES, encoding="utf-8")
    (repo / "net" / "gone.py").write_text("GONE = True  # deleted from disk after the ingest\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Max attempts, by hand", when=last + timedelta(hours=2), author="Person")
    env = {"CHINVEX_HOME": str(home)}
    # a copy under another name: the fixture's own folder would be a CODEX_HOME, which Codex's
    # app-server (when installed) writes its state databases into
    rollouts = shutil.copytree(SESSIONS, base / "rollouts")
    created = run_cli_in_process("context", "create", "blamed", "--sessions", f"codex={rollouts}",
                                 "--repo", str(repo), env=env)
    assert created.code == 0, created
    ingested = run_cli_in_process("ingest", "--context", "blamed", "--json", env=env)
    assert ingested.code == 0, ingested
    assert ingested.json["sources"]["indexed"] >= 4, ingested
    (repo / "net" / "gone.py").unlink()
    return home, repo, threads


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("web_blame")
    home, repo, threads = build_world(base)
    with serving_ui("blamed", home, base / "ui-stderr.log") as run:
        yield World(ui=run, repo=repo, context="blamed", threads=threads)
    assert "Traceback" not in run.log.read_text(), run.log.read_text()[-3000:]  # no page failed


def document_link(client, context: str, rel: str) -> str:
    """The document page of a repository file, as the documents list links it."""
    listing = client.get("/documents", params={"context": context, "type": "repo", "path": rel}).text
    links = re.findall(r'<a href="(/document/[^"]+)">' + re.escape(rel) + "</a>", listing)
    assert len(links) == 1, listing
    return unescape(links[0])


def rows(html: str) -> dict[int, str]:
    """Each shown line's table row (its HTML), by line number."""
    return {int(n): row for n, row in re.findall(r'<tr id="L(\d+)"[^>]*>(.*?)</tr>', html, re.S)}


def marker(row: str) -> str | None:
    """The session id the row's marker names, None for no marker."""
    found = re.search(r'<td class="by[^"]*" data-session="([^"]+)"', row)
    return found.group(1) if found else None


# -- over HTTP --------------------------------------------------------------------------------


def test_the_replayed_file_is_what_the_sessions_and_the_person_wrote(world: World):
    assert world.threads == [HELPER, JITTER]
    assert (world.repo / "net" / "retry.py").read_text(encoding="utf-8") == RETRY


def test_document_page_marks_each_session_beside_the_lines_it_wrote(world: World):
    with world.ui.client() as client:
        page = client.get(document_link(client, world.context, "net/retry.py"))
        assert page.status_code == 200
        html = page.text
    shown = rows(html)
    assert len(shown) == len(RETRY.splitlines())
    markers = {n: marker(row) for n, row in shown.items()}
    assert {n for n, m in markers.items() if m == HELPER} == HELPER_LINES
    assert {n for n, m in markers.items() if m == JITTER} == JITTER_LINES
    # The person's lines, and the blank ones, carry no marker at all.
    for n in (18, 19, 2, 5, 16):
        assert markers[n] is None and '<td class="by"></td>' in shown[n], shown[n]
    assert "MAX_ATTEMPTS = 6" in shown[19]
    # The first line of every run links to its session's page at the turn of its edit (turn 3:
    # the apply_patch call); the other lines of the run carry the session's colour only.
    helper_turn = f'href="/conversation/{HELPER}?context=blamed&amp;turn=3#turn-3"'
    jitter_turn = f'href="/conversation/{JITTER}?context=blamed&amp;turn=3#turn-3"'
    for n in (1, 3, 7):
        assert f'<a class="by-session" {helper_turn}' in shown[n] and "codex 01a2240a-5ee5<" in shown[n], shown[n]
    for n in (4, 14):
        assert f'<a class="by-session" {jitter_turn}' in shown[n] and "codex 01a2240a-7629<" in shown[n], shown[n]
    for n in (8, 13, 15):
        assert "<a " not in re.search(r'<td class="by[^>]*>.*?</td>', shown[n]).group(0) and " cont" in shown[n]
    assert 'title="lines 7–13: codex session ' + HELPER in shown[7]
    # The panel: one entry per session, with its lines, its edit and the user's request.
    panel = re.search(r'<section class="panel behind" id="sessions-behind".*?</section>', html, re.S).group(0)
    entries = re.findall(r'<li class="session s\d" id="session-\w+" data-session="([^"]+)">(.*?)</li>', panel, re.S)
    assert [e[0] for e in entries] == [HELPER, JITTER]
    helper, jitter = entries[0][1], entries[1][1]
    assert re.findall(r'class="range" href="#L\d+">([^<]+)<', helper) == ["1", "3", "7–13"]
    assert re.findall(r'class="range" href="#L\d+">([^<]+)<', jitter) == ["4", "14–15"]
    assert f'<a class="session-link" {helper_turn}' in helper and "(9 lines)" in helper
    assert "write at turn 3" in helper and "patch at turn 3" in jitter
    assert "Add a helper that retries flaky network calls with exponential backoff" in helper
    assert re.search(rf'href="/conversation/{JITTER}\?context=blamed&amp;turn=1#turn-1">asked at turn 1</a>: '
                     "Retries from many clients line up; add jitter to the backoff", jitter)
    assert "2026-11-28 21:23 UTC" in helper
    assert "(2 lines with text)" in panel  # the person's two lines


def test_a_marker_link_opens_the_session_at_its_edit(world: World):
    with world.ui.client() as client:
        html = client.get(document_link(client, world.context, "net/retry.py")).text
        for thread, line in ((HELPER, 7), (JITTER, 14)):
            link = unescape(re.search(r'<a class="by-session" href="([^"]+)"', rows(html)[line]).group(1))
            opened = client.get(link)
            assert opened.status_code == 200, link
            assert f"thread <code>{thread}</code>" in opened.text
            turn = re.search(r'<li class="turn role-tool target" id="turn-3">(.*?)</li>', opened.text, re.S)
            assert turn, opened.text
            assert "<code>apply_patch</code>" in turn.group(1) and "net/retry.py" in turn.group(1)


def test_a_file_deleted_from_disk_still_shows_its_page_with_a_note(world: World):
    with world.ui.client() as client:
        page = client.get(document_link(client, world.context, "net/gone.py"))
    assert page.status_code == 200
    note = re.findall(r'<p class="behind-note dim" id="sessions-behind">([^<]*)</p>', page.text)
    assert note == ["Sessions behind this file are not shown: the file is no longer on disk."]
    assert "GONE = True" in page.text  # the indexed text is still there
    assert 'class="by' not in page.text and 'class="panel behind"' not in page.text


def test_pages_of_documents_that_are_not_files_have_no_sessions_section(world: World):
    with world.ui.client() as client:
        listing = client.get("/documents", params={"context": world.context}).text
        conversation = client.get(f"/conversation/{HELPER}", params={"context": world.context}).text
    assert listing.count("/conversation/") >= 2
    assert 'id="sessions-behind"' not in conversation


# -- in a browser -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(world: World, tmp_path_factory) -> Iterator:
    import test_web_browser as B

    if B._MISSING:
        pytest.skip(f"{', '.join(B._MISSING)} not installed: run scripts/install-chromium.sh")
    if B._SELENIUM is not None:
        pytest.skip(B._SELENIUM)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = B.CHROMIUM
    for flag in B.FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=B.CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(B.WAIT_S)
    try:
        driver.get(world.ui.url)
        B._wait(driver, lambda d: "token=" not in d.current_url and "Contexts" in d.title)
        yield driver
    finally:
        driver.quit()


def test_in_a_browser_a_marker_leads_to_the_turn_of_the_edit(world: World, browser, tmp_path_factory):
    import test_web_browser as B
    from selenium.webdriver.common.by import By

    with world.ui.client() as client:
        link = document_link(client, world.context, "net/retry.py")
    browser.get(world.ui.base + link)
    panel = B._visible(browser, "#sessions-behind")
    assert "Sessions behind this file" in panel.text and "01a2240a-5ee5" in panel.text
    marker7 = browser.find_element(By.CSS_SELECTOR, "#L7 td.by a.by-session")
    assert marker7.is_displayed() and marker7.text == "codex 01a2240a-5ee5"
    assert browser.find_element(By.CSS_SELECTOR, "#L19 td.by").text == ""
    artifacts = tmp_path_factory.mktemp("ui-screenshots")
    B._finish(browser, artifacts, "document-sessions")
    marker7.click()
    B._wait(browser, lambda d: d.current_url.endswith("#turn-3") and HELPER in d.current_url)
    turn = B._visible(browser, "#turn-3")
    assert "target" in turn.get_attribute("class") and "apply_patch" in turn.text
    B._finish(browser, artifacts, "document-sessions-turn")


# -- the pure parts ---------------------------------------------------------------------------


def _config(name: str = "t") -> SimpleNamespace:
    return SimpleNamespace(name=name, includes=SimpleNamespace(repos=[], note_roots=[]))


def _doc(path: Path | str) -> dict:
    return {"doc_id": "d1", "source_uri": str(path)}


def test_files_that_cannot_be_blamed_get_a_one_line_note(tmp_path: Path):
    from chinvex.web.provenance import MAX_LINES, sessions_behind

    big = tmp_path / "big.txt"
    big.write_text("x\n" * (MAX_LINES + 1))
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x89PNG\0\0\0")
    notes = {name: sessions_behind(None, _config(), _doc(path), [], start=1, window=3000).note  # type: ignore[arg-type]
             for name, path in (("big", big), ("binary", binary), ("gone", tmp_path / "gone.py"),
                                ("folder", tmp_path))}
    assert notes == {
        "big": "Sessions behind this file are not shown: the file has 5,001 lines; they are shown for files up to "
               "5,000 lines (`chinvex blame PATH:FIRST-LAST` reads any part).",
        "binary": "Sessions behind this file are not shown: a binary file.",
        "gone": "Sessions behind this file are not shown: the file is no longer on disk.",
        "folder": "Sessions behind this file are not shown: the path is a folder now.",
    }
    for uri in ("memory://D-1234", "relative/path.py", ""):
        assert sessions_behind(None, _config(), _doc(uri), [], start=1, window=3000) is None  # type: ignore[arg-type]


def test_a_failing_blame_becomes_the_note(tmp_path: Path):
    """An index that cannot answer (here: no tables at all) must not take the page down."""
    import sqlite3

    from chinvex.web.provenance import sessions_behind

    code = tmp_path / "a.py"
    code.write_text("x = 1\n")
    conn = sqlite3.connect(":memory:")
    try:
        behind = sessions_behind(conn, _config(), _doc(code), [], start=1, window=3000)
    finally:
        conn.close()
    assert behind is not None and behind.sessions == [] and behind.markers == {}
    assert behind.note.startswith("Sessions behind this file are not shown: the index could not be read (")


def test_short_ids_tell_the_shown_sessions_apart():
    from chinvex.web.provenance import short_ids

    assert short_ids([HELPER, JITTER]) == {HELPER: "01a2240a-5ee5", JITTER: "01a2240a-7629"}
    assert short_ids([HELPER, "0195aaaa-bbbb"]) == {HELPER: "01a2240a", "0195aaaa-bbbb": "0195aaaa"}
    assert short_ids(["abc"]) == {"abc": "abc"}


def test_session_texts_are_escaped_in_the_page(tmp_path: Path):
    """Titles, requests and ids come from session files: shown as text, in attributes too."""
    from chinvex.web.pages.documents import Line
    from chinvex.web.provenance import Behind, Marker, Range, SessionView
    from chinvex.web.render import environment

    session = SessionView(key=0, doc_id="d", agent="codex", session_id=f'x"{HOSTILE}', short_id=HOSTILE,
                          title=HOSTILE, time="2026-11-28T21:23:09Z", turn=3, href="/conversation/x?turn=3#turn-3",
                          request=HOSTILE, request_turn=1, request_href="/conversation/x?turn=1#turn-1",
                          ranges=[Range(1, 2, "#L1")], line_count=2)
    run = Range(1, 2, "#L1")
    behind = Behind(path="/x", sessions=[session],
                    markers={1: Marker(session, True, run), 2: Marker(session, False, run)})
    html = environment().get_template("document.html").render(
        page="documents", context="t", contexts=["t"], csrf="c", doc={"doc_id": "d", "source_uri": "/x", "title": "x",
        "source_type": "repo", "updated_at": None, "indexed_at": None}, meta={}, lines=[Line(1, "a"), Line(2, "b")],
        total_lines=2, start=1, window=3000, chunk_count=1, focus="", query="", highlight=lambda t: t, behind=behind)
    assert "<script>" not in html.replace('<script src="/static/app.js" defer>', "")
    assert html.count("&lt;script&gt;alert(&#34;planted&#34;)&lt;/script&gt;") >= 5
    assert 'data-session="x&#34;&lt;script&gt;' in html


def test_a_file_changed_since_the_ingest_is_marked_only_where_it_still_reads_the_same():
    """blame reads the file on disk, the page shows the indexed text: a line whose text differs
    gets no marker, and the panel says why. A range outside the served lines opens them."""
    from chinvex.web.pages.documents import Line
    from chinvex.web.provenance import Behind, _fill

    def entry(n: int, text: str, sessions: list[str]) -> dict:
        return {"line": n, "text": text, "commit": None, "uncommitted": True, "sessions": sessions}

    report = {"lines": [entry(1, "a = 1", ["s1"]), entry(2, "b = 2  # changed on disk", ["s1"]),
                        entry(3, "c = 3", ["s1"]), entry(4, "d = 4", [])],
              "sessions": [{"doc_id": "s1", "agent": "claude_code", "session_id": "4c2ddfdc-b619", "title": "T",
                            "time": None, "lines": [1, 2, 3], "edits": [{"turn": 7, "time": None, "op": "edit"}],
                            "request": None}],
              "unexplained": [4]}
    behind = Behind(path="/x")
    _fill(behind, report, [Line(1, "a = 1"), Line(2, "b = 2"), Line(3, "c = 3"), Line(4, "d = 4")],
          context="t", doc_id="d1", start=1, window=2)
    assert behind.stale and behind.unexplained == 1
    assert sorted(behind.markers) == [1, 3]
    assert all(m.first for m in behind.markers.values())
    (session,) = behind.sessions
    assert session.lines_label == "1, 3" and session.line_count == 2
    assert [r.href for r in session.ranges] == ["#L1", "/document/d1?context=t&from=1#L3"]
    assert session.href == "/conversation/4c2ddfdc-b619?context=t&turn=7#turn-7"
