"""The HTML report of `neardup dedup --report`: about what was removed, with the counts of
`--json`, naming the candidates mode and threshold in use, titled with the input's name."""

from __future__ import annotations

import csv
import json
import re
from html import unescape
from html.parser import HTMLParser

import numpy as np

import reference
from brute import exact_jaccard, family_corpus, star_oracle, verified_near
from command import run


class Page(HTMLParser):
    """The summary's values by key, each table's rows of cell texts by id, the pairs' tables."""

    def __init__(self) -> None:
        super().__init__()
        self.summary: dict[str, str] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self.pairs: dict[str, list[list[list[str]]]] = {}
        self._key = self._table = self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "dd":
            self._key = attrs.get("data-key")
        elif tag == "table":
            classes = (attrs.get("class") or "").split()
            if "pairs" in classes:
                self._table = ("pairs", classes[1])
                self.pairs.setdefault(classes[1], []).append([])
            else:
                self._table = ("table", attrs.get("id"))
                self.tables[attrs.get("id")] = []
        elif tag == "tr" and self._table:
            kind, name = self._table
            (self.pairs[name][-1] if kind == "pairs" else self.tables[name]).append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "dd":
            self._key = None
        elif tag in ("td", "th") and self._cell is not None:
            kind, name = self._table
            rows = self.pairs[name][-1] if kind == "pairs" else self.tables[name]
            rows[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._key:
            self.summary[self._key] = data
        if self._cell is not None:
            self._cell.append(data)


def report(capsys, tmp_path, *args) -> tuple[dict, Page, str]:
    page_path = tmp_path / "report.html"
    code, out, err = run(capsys, "dedup", *args, "--dry-run", "--json", "--report", page_path)
    assert code == 0, err
    text = page_path.read_text(encoding="utf-8")
    page = Page()
    page.feed(text)
    return json.loads(out), page, text


def test_the_reports_counts_are_the_jsons_and_its_title_the_inputs_name(tmp_path, capsys):
    summary, page, text = report(capsys, tmp_path, "--sample")
    for key in ("documents", "removed", "kept", "clusters", "candidate_pairs", "skipped"):
        assert page.summary[key] == str(summary[key]), key
    assert page.summary["candidates"] == "prefix" and page.summary["threshold"] == "0.8"
    assert "k" not in page.summary  # prefix candidates: k plays no part
    ranges = page.tables["jaccard"][1:]
    assert ranges[-1] == ["all", str(summary["removed"])]
    assert sum(int(count) for _, count in ranges[:-1]) == summary["removed"]
    assert f"Removals: {summary['removed']}" in text
    sizes = [(int(a), int(b)) for a, b in page.tables["sizes"][1:]]
    assert sum(a * b for a, b in sizes) == summary["documents"]
    assert sum(b for a, b in sizes if a >= 2) == summary["clusters"]
    assert sum((a - 1) * b for a, b in sizes) == summary["removed"]
    title = re.search(r"<title>(.*?)</title>", text)[1]
    assert title == "neardup report: debian-sample.jsonl.gz"
    assert "<h1>neardup dedup: debian-sample.jsonl.gz</h1>" in text
    assert page.summary["input"] == summary["input"]  # the whole path is in the summary
    assert "id='distances'" not in text and "beyond k" not in text


def test_the_removals_jaccard_ranges_are_brute_forces(tmp_path, capsys):
    docs = family_corpus(families=14, seed=5)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in docs))
    fps = np.array([reference.fingerprint(reference.normalize(t)) for t in docs], np.uint64)
    kept, _ = star_oracle(list(range(len(docs))), verified_near(docs, fps, 64, 0.8))
    values = [exact_jaccard(docs[r], docs[kept[r]]) for r in range(len(docs)) if kept[r] != r]
    normalized = [reference.normalize(t) for t in docs]
    copies = sum(
        1 for r in range(len(docs)) if kept[r] != r and normalized[r] == normalized[kept[r]]
    )
    summary, page, _ = report(capsys, tmp_path, corpus)
    assert summary["removed"] == len(values)
    edges = [0.8, 0.85, 0.9, 0.95, 1.0]
    want = [
        (f"{a:g} \u2264 J < {b:g}", sum(1 for v in values if a <= v < b))
        for a, b in zip(edges, edges[1:])
    ]
    want.append(("J = 1 (copies, equal shingle sets)", sum(1 for v in values if v >= 1)))
    got = [(unescape(a), int(b)) for a, b in page.tables["jaccard"][1:-1]]
    assert got == want and want[-1][1] >= copies > 0 and sum(n for _, n in want[:-1]) > 0


def test_the_report_names_the_candidates_mode_and_threshold_in_use(tmp_path, capsys):
    for args, mode, said in (
        ([], "prefix", "Prefix candidates (the default)"),
        (
            ["--threshold", "0.9"],
            "prefix",
            "Jaccard of its word shingles with the document kept in its place is 0.9 or above",
        ),
        (["--candidates", "fingerprint"], "fingerprint", "within k = 8 bits are compared"),
        (["--no-verify"], "fingerprints alone", "within k = 3 bits are near-duplicates"),
    ):
        summary, page, text = report(capsys, tmp_path, "--sample", *args)
        rule = re.search(r"<p id='rule' data-candidates='([^']*)'>(.*?)</p>", text)
        assert rule[1] == mode and said in unescape(rule[2]), args
        assert summary["candidates"] == (None if mode == "fingerprints alone" else mode)
        # the fingerprint distances are a section of their own where they decide
        assert ("id='fingerprints'" in text) == (mode != "prefix")
        if mode != "prefix":
            assert page.summary["k"] == str(summary["k"])
            assert text.index("id='removals'") < text.index("id='fingerprints'")


def test_the_pairs_kept_just_below_the_threshold_are_kept_and_below_it(tmp_path, capsys):
    clusters = tmp_path / "clusters.csv"
    summary, page, text = report(capsys, tmp_path, "--sample", "--clusters", clusters)
    with open(clusters, newline="") as f:
        kept = {row["id"]: row["kept"] == "True" for row in csv.DictReader(f)}
    below = page.pairs["below"]
    assert len(below) == 1 and len(below[0]) == 3 * 3  # three pairs of three rows
    for i in range(0, 9, 3):
        head, jaccard, texts = below[0][i : i + 3]
        a, b = (cell.split(" ", 1)[1] for cell in (head[0], head[1].replace("also ", "")))
        assert kept[a] and kept[b]
        value = float(jaccard[0].split()[1])
        assert 0.7 <= value < 0.8 and len(texts) == 2
    # every sample removal: two names over their Jaccard over their texts, no empty cell
    for table in page.pairs["removal"]:
        for i in range(0, len(table), 3):
            assert [len(r) for r in table[i : i + 3]] == [2, 1, 2]
            assert table[i][0].startswith("kept ") and table[i][1].startswith("removed ")
            assert float(table[i + 1][0].split()[1]) >= 0.8
    assert "<td></td>" not in text
