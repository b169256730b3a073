"""The documentation site: it builds quietly from the `docs` extra, and renders every list and
every long line of code (in headless Chromium, at a 1,400 px window: commands and Python wrap,
output tables scroll)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from test_report_browser import chromium

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself needs tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    # Material's own notice of its end of life is not the build's: it has its switch.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result, out


def test_the_build_prints_nothing(site):
    result, _ = site
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout == ""  # no "Building prefix dict" from jieba


class _Paragraphs(HTMLParser):
    """The text of every <p> of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.found, self.text = 0, [], []

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.depth += 1
            self.text = []

    def handle_endtag(self, tag):
        if tag == "p" and self.depth:
            self.depth -= 1
            self.found.append("".join(self.text))

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


def test_no_list_item_is_swallowed_by_a_paragraph(site):
    _, out = site
    pages = sorted(out.rglob("index.html"))
    assert len(pages) >= 10
    for page in pages:
        parser = _Paragraphs()
        parser.feed(page.read_text(encoding="utf-8"))
        for text in parser.found:
            assert not re.search(r"\n\d+\. \S", text), (page.relative_to(out), text[:200])
    cluster = (out / "cluster" / "index.html").read_text(encoding="utf-8")
    listed = cluster[cluster.index('id="what-runs-where"') :]
    listed = listed[listed.index("<ol>") : listed.index("</ol>")]
    assert listed.count("<li>") == 7


def test_long_code_lines_wrap_and_output_tables_scroll(site):
    _, out = site
    page = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="stylesheets/code.css"' in page
    css = (out / "stylesheets" / "code.css").read_text(encoding="utf-8")
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    wrap = next(body for sel, body in rules.items() if ".language-bash pre > code" in sel)
    assert "white-space: pre-wrap" in wrap and ".language-python pre > code" in next(
        sel for sel in rules if ".language-bash" in sel
    )
    scroll = next(body for sel, body in rules.items() if ".language-text pre > code" in sel)
    assert "overflow-x: auto" in scroll


# Appended to a copy of a page: each code block's language, its width and the width of its text,
# and how it breaks lines, once the page and its stylesheets are loaded.
MEASURE = """<script>
addEventListener("load", function () {
  var blocks = [];
  document.querySelectorAll("div.highlight > pre > code").forEach(function (code) {
    blocks.push({
      language: code.parentElement.parentElement.className,
      text: code.textContent.slice(0, 80),
      width: code.clientWidth,
      content: code.scrollWidth,
      breaks: getComputedStyle(code).whiteSpace,
      scrolls: getComputedStyle(code).overflowX
    });
  });
  var out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({window: innerWidth, blocks: blocks});
  document.body.appendChild(out);
});
</script>"""


def test_in_a_browser_commands_and_python_wrap_and_output_tables_scroll(site, tmp_path):
    # At a 1,400 px window the guide's first dedup command lost its --report report.html: its
    # block had no language class for the stylesheet to select.
    _, out = site
    pages = sorted(out.rglob("index.html"))
    commands = tables = 0
    for page in pages:
        measured = page.with_name("measured.html")
        measured.write_text(
            page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"),
            encoding="utf-8",
        )
        dom = chromium(
            tmp_path,
            "--window-size=1400,900",
            "--virtual-time-budget=5000",
            "--dump-dom",
            measured.as_uri(),
        )
        found = json.loads(unescape(dom.split('<pre id="measured">', 1)[1].split("</pre>", 1)[0]))
        assert found["window"] == 1400
        for block in found["blocks"]:
            where = (page.relative_to(out), block["text"])
            if "language-bash" in block["language"] or "language-python" in block["language"]:
                commands += 1
                assert block["breaks"] == "pre-wrap", where
                assert block["content"] <= block["width"], where  # nothing runs under the edge
            else:
                assert "language-text" in block["language"], where
                tables += 1
                assert block["breaks"] == "pre" and block["scrolls"] == "auto", where
    assert commands > 30 and tables >= 2


def test_the_docs_extra_holds_what_the_build_needs():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    docs = meta["optional-dependencies"]["docs"]
    names = {re.split(r"[\[<>=]", req)[0] for req in docs}
    config = (ROOT / "mkdocs.yml").read_text()
    assert "name: material" in config and "mkdocs-material" in names
    assert "- mkdocstrings:" in config and {"mkdocstrings", "mkdocstrings-python"} <= names
    assert "mkdocs" in names
    # pinned as the test extra pins them
    assert set(docs) <= set(meta["optional-dependencies"]["test"])
    assert all("<" in req for req in docs)
