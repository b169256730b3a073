"""The HTML report as a browser draws it. Debian's Chromium, headless, opens the report of a run
on the shipped sample: the page it builds is titled with the input's name, holds the figures of
the run's ``--json``, fits a 1,280-pixel window with every text line of up to 80 characters on
one line, and its screenshot is that page drawn (the title and the bars where the browser laid
them out). The README's test command installs Chromium, so this runs in CI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html import unescape

import numpy as np
import pytest
from PIL import Image

from test_report import Page

WIDTH, HEIGHT = 1280, 1600
BAR = (0x9B, 0xB8, 0xE0)  # the fill of the report's bars

# Appended to a copy of the report: what the browser laid out, as JSON in a <pre id="measured">.
# A line of a sample text fits when its width in the cell's font is within the cell.
MEASURE = """<script>
(function () {
  var ctx = document.createElement("canvas").getContext("2d");
  var lines = 0, over = [];
  document.querySelectorAll("table.pairs td.text").forEach(function (cell) {
    var style = getComputedStyle(cell);
    ctx.font = style.font;
    var room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    cell.innerText.split("\\n").forEach(function (line) {
      if (line.length > 80) return;
      lines += 1;
      if (ctx.measureText(line).width > room) over.push(line);
    });
  });
  function box(el) {
    var r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  }
  var out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({
    title: document.title,
    removals: document.getElementById("removals").textContent,
    window: innerWidth,
    width: document.documentElement.clientWidth,
    scroll: document.documentElement.scrollWidth,
    lines: lines,
    over: over,
    h1: box(document.querySelector("h1")),
    bar: box(document.querySelector("svg rect"))
  });
  document.body.appendChild(out);
})();
</script>"""


def chromium(tmp_path, *args: str) -> str:
    """Headless Chromium's stdout at a WIDTH x HEIGHT window (no sandbox: CI runs as root)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "no chromium: the README's test command installs it (apt-get install chromium)"
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={WIDTH},{HEIGHT}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """(the run's --json, the page the browser built, what it measured, the screenshot)."""
    tmp = tmp_path_factory.mktemp("browser")
    report = tmp / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", "--sample", "--dry-run", "--json"]
        + ["--report", str(report)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    measured = tmp / "measured.html"
    measured.write_text(
        report.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"),
        encoding="utf-8",
    )
    dom = chromium(tmp, "--dump-dom", measured.as_uri())
    page = Page()
    page.feed(dom)
    found = dom.split('<pre id="measured">', 1)[1].split("</pre>", 1)[0]
    shot = tmp / "report.png"
    chromium(tmp, f"--screenshot={shot}", report.as_uri())
    return json.loads(done.stdout), page, json.loads(unescape(found)), Image.open(shot)


def test_the_page_the_browser_builds_holds_the_runs_figures_titled_with_the_input(drawn):
    summary, page, measured, _ = drawn
    assert measured["title"] == "neardup report: debian-sample.jsonl.gz"
    assert measured["removals"] == f"Removals: {summary['removed']}" == "Removals: 609"
    for key in ("documents", "removed", "kept", "clusters", "candidate_pairs", "skipped"):
        assert page.summary[key] == str(summary[key]), key
    assert page.summary["candidates"] == "prefix" and page.summary["threshold"] == "0.8"
    ranges = page.tables["jaccard"][1:]
    assert ranges[-1] == ["all", "609"]
    assert sum(int(count) for _, count in ranges[:-1]) == 609
    sizes = [(int(a), int(b)) for a, b in page.tables["sizes"][1:]]
    assert sum(a * b for a, b in sizes) == summary["documents"]
    assert sum((a - 1) * b for a, b in sizes) == summary["removed"]
    assert len(page.pairs["removal"][0]) == 3 * 3 and len(page.pairs["below"][0]) == 3 * 3


def test_the_page_fits_the_window_and_keeps_each_line_of_its_texts_whole(drawn):
    _, _, measured, _ = drawn
    assert measured["window"] == WIDTH
    assert measured["scroll"] <= measured["width"]  # nothing wider than the window
    # Debian's descriptions are wrapped at 80 columns: each such line is one line of its cell
    # (in a page 1,100 pixels wide they wrapped 22 of 498, a word or two on a line of their own).
    assert measured["lines"] > 300 and measured["over"] == []


def test_the_screenshot_is_the_page_drawn(drawn):
    _, _, measured, shot = drawn
    assert shot.size == (WIDTH, HEIGHT)
    pixels = np.asarray(shot.convert("RGB"), dtype=np.int16)
    grey = pixels.mean(axis=2)
    assert grey.std() > 20  # not blank
    assert (grey > 250).mean() > 0.6  # a white page, mostly
    left, top, right, bottom = (round(v) for v in measured["h1"])
    assert grey[top:bottom, left:right].min() < 60  # the title is drawn where it was laid out
    assert grey[:top].min() > 250  # and nothing above it
    left, top, right, bottom = (round(v) for v in measured["bar"])
    middle = pixels[(top + bottom) // 2, (left + right) // 2]
    assert tuple(int(c) for c in middle) == BAR  # the first bar of the Jaccard chart
