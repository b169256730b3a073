"""The `neardup` command end to end: every input format, equality with the Python API, bad input,
interruption, and the HTML report, against brute force and hand-made files."""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import neardup
from brute import distances, family_corpus, fingerprint_near, pairs, star_oracle, verified_stars
from command import run
from conftest import SAMPLE
from neardup.verify import THRESHOLD_K

try:  # the [parquet] and [zstd] extras (in [test]); tests that need them are skipped without
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:
    pa = pq = None
try:
    import zstandard
except ImportError:
    zstandard = None

needs_parquet = pytest.mark.skipif(pa is None, reason="pyarrow not installed (the [parquet] extra)")

DOCS = family_corpus()
IDS = [f"doc-{i:03d}" for i in range(len(DOCS))]
FPS = neardup.Simhasher().fingerprint_many(DOCS)
KEPT_ROW = verified_stars(
    DOCS
)  # the default: verified stars, k = THRESHOLD_K, Jaccard >= 0.8, keep first
KEEP = np.array([KEPT_ROW[r] == r for r in range(len(DOCS))])
LABELS = np.array(
    [min(s for s in range(len(DOCS)) if KEPT_ROW[s] == KEPT_ROW[r]) for r in range(len(DOCS))]
)
KEPT_IDS = [IDS[r] for r in np.flatnonzero(KEEP)]


def fingerprint_clusters(docs, fps, k, order=None) -> list[int]:
    """Clusters of two or more documents of fingerprint-only stars (--no-verify)."""
    kept, _ = star_oracle(order or list(range(len(docs))), fingerprint_near(docs, fps, k))
    return [c for c in set(kept) if kept.count(c) > 1]


def jsonl_bytes(records) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def records():
    return [{"id": i, "text": t} for i, t in zip(IDS, DOCS)]


def write_input(tmp_path: Path, kind: str) -> Path:
    """The family corpus in one format."""
    if kind == "jsonl":
        path = tmp_path / "corpus.jsonl"
        path.write_bytes(jsonl_bytes(records()))
    elif kind == "jsonl.gz":
        path = tmp_path / "corpus.jsonl.gz"
        path.write_bytes(gzip.compress(jsonl_bytes(records())))
    elif kind == "jsonl.zst":
        path = tmp_path / "corpus.jsonl.zst"
        path.write_bytes(zstandard.ZstdCompressor().compress(jsonl_bytes(records())))
    elif kind == "parquet":
        path = tmp_path / "corpus.parquet"
        pq.write_table(pa.table({"id": IDS, "text": DOCS, "n": list(range(len(DOCS)))}), path)
    elif kind in ("csv", "tsv"):
        path = tmp_path / f"corpus.{kind}"
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter="," if kind == "csv" else "\t")
            w.writerow(["id", "text"])
            w.writerows(zip(IDS, DOCS))
    elif kind == "txt":
        path = tmp_path / "corpus"
        for i, t in zip(IDS, DOCS):
            (path / i[:5]).mkdir(parents=True, exist_ok=True)
            (path / i[:5] / f"{i}.txt").write_text(t, encoding="utf-8")
    else:
        raise AssertionError(kind)
    return path


def read_ids(path: Path, kind: str) -> list[str]:
    if kind.startswith("jsonl"):
        if kind.endswith("zst"):
            with zstandard.open(path, "rt", encoding="utf-8") as f:
                return [json.loads(line)["id"] for line in f]
        with (gzip.open if kind.endswith("gz") else open)(path, "rb") as f:
            return [json.loads(line)["id"] for line in f]
    if kind == "parquet":
        return pq.read_table(path).column("id").to_pylist()
    if kind in ("csv", "tsv"):
        with open(path, newline="", encoding="utf-8") as f:
            return [
                row["id"] for row in csv.DictReader(f, delimiter="," if kind == "csv" else "\t")
            ]
    return sorted(p.stem for p in path.rglob("*.txt"))


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if "neardup-tmp" in p.name]


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "jsonl.zst", "parquet", "csv", "tsv", "txt"])
def test_dedup_keeps_the_first_of_each_brute_force_cluster_in_every_format(tmp_path, capsys, kind):
    if (kind == "parquet" and pa is None) or (kind.endswith("zst") and zstandard is None):
        pytest.skip(f"{kind} needs an extra that is not installed")
    src = write_input(tmp_path, kind)
    out = tmp_path / ("kept" if kind == "txt" else f"kept.{kind}")
    code, stdout, _ = run(
        capsys, "dedup", src, "-o", out, "--json", "--clusters", tmp_path / "clusters.csv"
    )
    assert code == 0
    report = json.loads(stdout)
    assert report["documents"] == len(DOCS) and report["removed"] == len(DOCS) - len(KEPT_IDS)
    assert read_ids(out, kind) == KEPT_IDS
    with open(tmp_path / "clusters.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ([f"{i[:5]}/{i}.txt" for i in IDS] if kind == "txt" else IDS)
    assert [int(r["cluster"]) for r in rows] == LABELS.tolist()
    assert leftovers(tmp_path) == []


def test_jsonl_output_copies_the_kept_lines_byte_for_byte(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    lines = [
        json.dumps(
            {"text": t, "id": i, "extra": [1, {"a": None}]}, indent=None, separators=(", ", ":")
        )
        for i, t in zip(IDS, DOCS)
    ]
    src.write_text(
        "\n".join(lines) + "\n\n", encoding="utf-8"
    )  # a blank line at the end is not a document
    assert run(capsys, "dedup", src, "-o", tmp_path / "out.jsonl", "-q")[0] == 0
    kept = [lines[r] + "\n" for r in np.flatnonzero(KEEP)]
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == "".join(kept)


def test_stdin_in_and_stdout_out(tmp_path, capsys, monkeypatch):
    code, out, err = run(
        capsys,
        "dedup",
        "-",
        "-o",
        "-",
        "--json",
        stdin=jsonl_bytes(records()),
        monkeypatch=monkeypatch,
    )
    assert code == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == KEPT_IDS
    assert json.loads(err)["kept"] == len(
        KEPT_IDS
    )  # the report goes to stderr when the data goes to stdout


def test_gzip_on_stdin_is_recognized(capsys, monkeypatch):
    code, out, _ = run(
        capsys,
        "dedup",
        "-",
        "--dry-run",
        "--json",
        stdin=gzip.compress(jsonl_bytes(records())),
        monkeypatch=monkeypatch,
    )
    assert code == 0 and json.loads(out)["kept"] == len(KEPT_IDS)


def test_command_equals_the_python_api(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    for k, keep in [(3, "first"), (5, "longest"), (0, "first")]:
        clusters_file = tmp_path / f"clusters-{k}.jsonl"
        code, _, _ = run(
            capsys,
            "dedup",
            src,
            "--dry-run",
            "--k",
            k,
            "--keep",
            keep,
            "--clusters",
            clusters_file,
            "-q",
        )
        assert code == 0
        api = neardup.dedup(records(), k=k, keep=keep, id_field="id").to_pandas()
        rows = [json.loads(line) for line in clusters_file.read_text().splitlines()]
        assert rows == [
            {
                "id": i,
                "cluster": c,
                "kept": kept,
                "kept_id": kid,
                "jaccard": round(j, 4),
                "distance": d,
            }
            for i, c, kept, kid, j, d in zip(
                api["id"],
                api["cluster"].tolist(),
                api["kept"].tolist(),
                api["kept_id"].tolist(),
                api["jaccard"].tolist(),
                api["distance"].tolist(),
            )
        ]
    assert [r["kept"] for r in rows] != [
        r["kept"]
        for r in [json.loads(x) for x in (tmp_path / "clusters-5.jsonl").read_text().splitlines()]
    ]


def test_keep_longest_and_hasher_flags(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    hasher = neardup.Simhasher(tokens="char", ngram=4)
    fps = hasher.fingerprint_many(DOCS)
    order = sorted(range(len(DOCS)), key=lambda r: (-len(DOCS[r]), r))
    kept, _ = star_oracle(order, fingerprint_near(DOCS, fps, 4))
    expected = [IDS[r] for r in range(len(DOCS)) if kept[r] == r]
    code, _, _ = run(
        capsys,
        "dedup",
        src,
        "-o",
        tmp_path / "out.jsonl",
        "--k",
        4,
        "--keep",
        "longest",
        "--tokens",
        "char",
        "--ngram",
        4,
        "--no-verify",
        "-q",
    )
    assert code == 0 and read_ids(tmp_path / "out.jsonl", "jsonl") == expected


def test_normalization_and_stopword_flags(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    words = tmp_path / "stop.txt"
    words.write_text("the\nof\n" + "\n".join(DOCS[0].split()[:5]) + "\n")
    hasher = neardup.Simhasher(
        unicode_form=None, casefold=False, stopwords=words.read_text().split(), ngram=2
    )
    want = fingerprint_clusters(DOCS, hasher.fingerprint_many(DOCS), 2)
    code, out, _ = run(
        capsys,
        "dedup",
        src,
        "--dry-run",
        "--json",
        "--k",
        2,
        "--unicode-form",
        "none",
        "--no-casefold",
        "--stopwords",
        words,
        "--ngram",
        2,
        "--no-verify",
    )
    assert code == 0 and json.loads(out)["clusters"] == len(want) > 0


def test_fields_and_idf_flags(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl_bytes({"id": i, "title": t[:20], "body": t} for i, t in zip(IDS, DOCS)))
    flags = ["--field", "title=2", "--field", "body=1", "--weighting", "idf"]
    code, out, _ = run(capsys, "dedup", src, "--dry-run", "--json", *flags, "--no-verify")
    hasher = neardup.Simhasher(fields={"title": 2, "body": 1}, weighting="idf")
    docs = [{"title": t[:20], "body": t} for t in DOCS]
    hasher.fit(docs)
    want = fingerprint_clusters(DOCS, hasher.fingerprint_many(docs), 3)
    assert code == 0 and json.loads(out)["clusters"] == len(want) > 0
    # Verified, the fields are compared as one text: the API gives the same.
    code, out, _ = run(capsys, "dedup", src, "--dry-run", "--json", *flags)
    assert code == 0 and json.loads(out)["removed"] == neardup.dedup(docs, hasher=hasher).n_removed


BAD_CASES = {
    "malformed JSON": (
        b'{"text": "a b c"}\n{"text": "d e f"}\n{"text": oops}\n',
        r"bad\.jsonl:3: malformed JSON: Expecting value \(column 10\)",
    ),
    "missing text field": (
        b'{"text": "a b c"}\n{"body": "x"}\n',
        r"bad\.jsonl:2: no field 'text' \(has: body\)",
    ),
    "non-string text": (
        b'{"text": "a"}\n{"text": "b"}\n\n{"text": 42}\n',
        r"bad\.jsonl:4: field 'text' is a number, expected a string",
    ),
    "null text": (b'{"text": null}\n', r"bad\.jsonl:1: field 'text' is null, expected a string"),
    "not an object": (
        b'{"text": "a"}\n["text"]\n',
        r"bad\.jsonl:2: expected a JSON object, got an array",
    ),
    "invalid UTF-8": (
        b'{"text": "a"}\n{"text": "caf\xe9"}\n',
        r"bad\.jsonl:2: invalid UTF-8: byte 0xe9 at column 14",
    ),
    "lone surrogate": (
        b'{"text": "a"}\n{"text": "x \\ud800 y"}\n',
        r"bad\.jsonl:2: text holds a lone surrogate \(U\+D800\)",
    ),
    "missing id": (b'{"id": 1, "text": "a"}\n{"text": "b"}\n', r"bad\.jsonl:2: no field 'id'"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_jsonl_stops_with_file_line_and_status_2_and_leaves_nothing(tmp_path, capsys, case):
    data, message = BAD_CASES[case]
    src = tmp_path / "bad.jsonl"
    src.write_bytes(data)
    out, clusters_file = tmp_path / "out.jsonl", tmp_path / "c.csv"
    code, _, err = run(
        capsys,
        "dedup",
        src,
        "-o",
        out,
        "--clusters",
        clusters_file,
        "--report",
        tmp_path / "r.html",
    )
    assert code == 2
    assert re.search(message, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]
    assert src.read_bytes() == data


def test_on_error_skip_counts_and_lists_bad_records(tmp_path, capsys):
    src = tmp_path / "bad.jsonl"
    good = records()[:6]
    lines = [json.dumps(r) for r in good]
    lines.insert(2, "{broken")
    lines.insert(5, json.dumps({"id": "x", "text": 7}))
    lines.insert(6, '{"id": "s", "text": "\\udc00"}')
    src.write_text("\n".join(lines) + "\n")
    code, out, _ = run(
        capsys,
        "dedup",
        src,
        "-o",
        tmp_path / "out.jsonl",
        "--on-error",
        "skip",
        "--json",
        "--clusters",
        tmp_path / "c.csv",
    )
    report = json.loads(out)
    assert code == 0 and report["documents"] == 6 and report["skipped"] == 3
    assert [e.split(": ")[0] for e in report["errors"]] == [f"{src}:3", f"{src}:6", f"{src}:7"]
    expected = neardup.dedup(good, id_field="id")
    assert read_ids(tmp_path / "out.jsonl", "jsonl") == [
        good[r]["id"] for r in np.flatnonzero(expected.keep)
    ]
    with open(tmp_path / "c.csv") as f:
        assert [r["id"] for r in csv.DictReader(f)] == [r["id"] for r in good]
    code, out, _ = run(capsys, "dedup", src, "--dry-run", "--on-error", "skip")
    assert "skipped 3 bad records:" in out and f"{src}:3: malformed JSON" in out


def test_on_error_skip_skips_a_csv_row_of_invalid_utf8(tmp_path, capsys):
    src = tmp_path / "c.csv"
    src.write_bytes(b'id,text\n1,"first doc"\n2,"bad \xff\nrow"\n3,third doc\n')
    code, out, _ = run(
        capsys, "dedup", src, "-o", tmp_path / "out.csv", "--on-error", "skip", "--json"
    )
    report = json.loads(out)
    assert code == 0 and report["documents"] == 2
    assert report["errors"] == [
        f"{src}:3: invalid UTF-8: byte 0xff at column 8 cannot start or continue a character"
    ]
    assert (tmp_path / "out.csv").read_bytes() == b"id,text\r\n1,first doc\r\n3,third doc\r\n"


@needs_parquet
def test_bad_csv_parquet_txt_and_files(tmp_path, capsys):
    cases = []
    (tmp_path / "a.csv").write_text("id,body\n1,x\n")
    cases.append(
        (
            ["dedup", tmp_path / "a.csv", "--dry-run"],
            r"a\.csv:1: no column 'text' \(columns: id, body\)",
        )
    )
    (tmp_path / "b.csv").write_text('id,text\n1,"one\ntwo"\n2,three,extra\n')
    cases.append(
        (["dedup", tmp_path / "b.csv", "--dry-run"], r"b\.csv:4: 3 fields where the header has 2")
    )
    (tmp_path / "c.csv").write_bytes(b"id,text\n1,ok\n2,\xff\n")
    cases.append(
        (
            ["dedup", tmp_path / "c.csv", "--dry-run"],
            r"c\.csv:3: invalid UTF-8: byte 0xff at column 3",
        )
    )
    pq.write_table(pa.table({"text": ["a", None, "c"]}), tmp_path / "d.parquet")
    cases.append(
        (
            ["dedup", tmp_path / "d.parquet", "--dry-run"],
            r"d\.parquet: row 2: column 'text' is null",
        )
    )
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "e.parquet")
    cases.append(
        (
            ["dedup", tmp_path / "e.parquet", "--dry-run"],
            r"e\.parquet: column 'text' is int64, expected strings",
        )
    )
    (tmp_path / "f.parquet").write_bytes(b"not parquet at all")
    cases.append(
        (["dedup", tmp_path / "f.parquet", "--dry-run"], r"f\.parquet: not a valid Parquet file")
    )
    (tmp_path / "g.jsonl.gz").write_bytes(gzip.compress(b'{"text": "a"}\n' * 50)[:-12])
    cases.append(
        (
            ["dedup", tmp_path / "g.jsonl.gz", "--dry-run"],
            r"g\.jsonl\.gz: truncated or corrupt gzip stream",
        )
    )
    cases.append(
        (["dedup", tmp_path / "missing.jsonl", "--dry-run"], r"missing\.jsonl: no such file")
    )
    cases.append(
        (
            ["dedup", tmp_path / "a.csv", "--format", "jsonl", "--dry-run"],
            r"a\.csv:1: malformed JSON",
        )
    )
    (tmp_path / "h.data").write_text("x")
    cases.append(
        (
            ["dedup", tmp_path / "h.data", "--dry-run"],
            r"h\.data: cannot tell the format from the name; pass --format",
        )
    )
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("fine")
    (folder / "b.txt").write_bytes(b"line one\nline \xc3\x28 two")
    cases.append(
        (["dedup", folder, "--dry-run"], r"texts/b\.txt:2: invalid UTF-8: byte 0xc3 at column 6")
    )
    folder2 = tmp_path / "texts2"
    folder2.mkdir()
    (folder2 / "gone.txt").symlink_to(tmp_path / "nowhere")
    cases.append(
        (
            ["dedup", folder2, "--dry-run"],
            r"texts2/gone\.txt: cannot read: no such file or directory",
        )
    )
    for args, message in cases:
        code, _, err = run(capsys, *args)
        assert code == 2, (args, err)
        assert re.search(message, err), (message, err)


def test_usage_errors_and_unwritable_outputs(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    code, _, err = run(capsys, "dedup", src)
    assert code == 2 and "give -o OUTPUT" in err
    code, _, err = run(capsys, "dedup", src, "-o", tmp_path / "out.csv")
    assert code == 2 and "written in the input's format (jsonl)" in err
    code, _, err = run(capsys, "dedup", src, "-o", src)
    assert code == 2 and "is the input" in err
    code, _, err = run(capsys, "dedup", src, "-o", tmp_path / "no" / "such" / "dir.jsonl")
    assert code == 1 and "cannot write" in err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    code, _, err = run(capsys, "dedup", write_input(tmp_path, "txt"), "-o", tmp_path / "full")
    assert code == 2 and "exists and is not an empty folder" in err
    shutil.rmtree(tmp_path / "full")
    shutil.rmtree(tmp_path / "corpus")
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--k", 17)
    assert code == 2 and "--k" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]


def _no_temp_left(folder: Path) -> None:
    assert leftovers(folder) == []


def _default_sigint() -> None:
    # A job started in the background (`pytest ... &` in a script) inherits SIGINT ignored, and
    # Python keeps an ignored SIGINT ignored: the child would never see the Ctrl-C it is sent.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn(args, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "neardup", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
        **kw,
    )


@pytest.mark.parametrize("name", ["feed.jsonl", "feed.jsonl.gz"])
def test_interrupt_while_reading_leaves_no_output(tmp_path, name):
    # A pipe on standard input whose writer goes quiet (a FIFO named as INPUT is refused).
    out = tmp_path / "out"
    out.mkdir()
    proc = _spawn(
        ["dedup", "-", "-o", out / "kept.jsonl", "--clusters", out / "c.csv"],
        stdin=subprocess.PIPE,
    )
    with proc.stdin as feed:
        data = jsonl_bytes(records())
        feed.write(
            gzip.compress(data)[:-20] if name.endswith(".gz") else data
        )  # the rest never comes
        feed.flush()
        deadline = time.monotonic() + 20
        while (
            len(os.listdir(out)) < 2 and time.monotonic() < deadline
        ):  # the temporary outputs exist: mid-run
            time.sleep(0.02)
        assert len(os.listdir(out)) == 2
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert b"interrupted; no output written" in err
    assert os.listdir(out) == []


def test_interrupt_while_writing_leaves_no_output_and_the_input_untouched(tmp_path):
    # 120,000 distinct documents: nearly all are kept, so the second pass writes for a while.
    rng = np.random.default_rng(1)
    vocab = np.array([f"w{n}" for n in range(5000)])
    words = vocab[rng.integers(0, len(vocab), size=(120_000, 24))]
    src = tmp_path / "big.jsonl"
    src.write_text(
        "".join(
            f'{{"id": {n}, "text": "{" ".join(row)}"}}\n' for n, row in enumerate(words.tolist())
        )
    )
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "out"
    out.mkdir()
    proc = _spawn(["dedup", src, "-o", out / "kept.jsonl", "--clusters", out / "c.csv"])
    deadline = time.monotonic() + 60
    seen = 0
    while time.monotonic() < deadline and proc.poll() is None:
        sizes = [p.stat().st_size for p in out.iterdir() if "neardup-tmp" in p.name]
        if sizes and max(sizes) > 0:  # the second pass is writing
            seen = max(sizes)
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert seen > 0, f"the job ended before it was seen writing: {err!r}"
    assert proc.returncode == 130, err
    assert os.listdir(out) == []
    assert hashlib.sha256(src.read_bytes()).hexdigest() == digest


class _Tables(HTMLParser):
    """Rows of every <table id=...> and the <dd data-key=...> values of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.summary: dict[str, str] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._key: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "id" in attrs:
            self._table = attrs["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "dd":
            self._key = attrs.get("data-key")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "dd":
            self._key = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._key:
            self.summary[self._key] = data


def test_html_report_shows_the_brute_force_figures(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    page_path = tmp_path / "report.html"
    # the distances are shown where they decide the candidates: fingerprint candidates
    assert run(capsys, "dedup", src, "--dry-run", "--report", page_path, "-q")[0] == 0
    assert "id='distances'" not in page_path.read_text(encoding="utf-8")
    args = ["--candidates", "fingerprint"]
    assert run(capsys, "dedup", src, "--dry-run", "--report", page_path, "-q", *args)[0] == 0
    page = page_path.read_text(encoding="utf-8")
    assert "<script" not in page and "http" not in page.split("<body>")[1]  # self-contained
    parsed = _Tables()
    parsed.feed(page)
    d = distances(FPS)
    np.fill_diagonal(d, 99)
    nearest = d.min(axis=1)
    rows = parsed.tables["distances"]
    assert rows[0][0] == "distance"
    reach = THRESHOLD_K + 3  # the table shows distances up to k + 3
    for dist in range(reach + 1):
        row = rows[1 + dist]
        assert int(row[0]) == dist
        assert int(row[1]) == int((nearest == dist).sum())
        assert int(row[2]) == int((nearest <= dist).sum())
        assert int(row[3]) == len({p for p in pairs(FPS, reach) if p[2] == dist})
    assert rows[reach + 2][:2] == [f">{reach}", str(int((nearest > reach).sum()))]
    sizes = np.bincount(LABELS)
    size_counts = np.unique(sizes[sizes > 0], return_counts=True)
    assert [[int(a), int(b)] for a, b in parsed.tables["sizes"][1:]] == [
        [int(a), int(b)] for a, b in zip(*size_counts)
    ]
    assert parsed.summary["documents"] == str(len(DOCS))
    assert parsed.summary["clusters"] == str(int((sizes >= 2).sum()))
    assert parsed.summary["removed"] == str(len(DOCS) - len(KEPT_IDS))
    largest = parsed.tables["largest"][1]
    assert int(largest[0]) == sizes.max() and largest[1] == IDS[KEPT_ROW[int(np.argmax(sizes))]]
    assert "<del>" in page and "<ins>" in page  # sample pairs show their differences


@needs_parquet
def test_fingerprint_adds_a_column_in_each_format(tmp_path, capsys):
    hexes = [f"{v:016x}" for v in FPS.tolist()]
    src = write_input(tmp_path, "jsonl")
    assert run(capsys, "fingerprint", src, "-o", tmp_path / "f.jsonl.gz", "-q")[0] == 0
    with gzip.open(tmp_path / "f.jsonl.gz", "rt") as f:
        got = [json.loads(line) for line in f]
    assert got == [{**r, "fingerprint": h} for r, h in zip(records(), hexes)]
    src = write_input(tmp_path, "csv")
    assert run(capsys, "fingerprint", src, "-o", tmp_path / "f.csv", "-q")[0] == 0
    with open(tmp_path / "f.csv", newline="") as f:
        assert [r["fingerprint"] for r in csv.DictReader(f)] == hexes
    src = write_input(tmp_path, "parquet")
    assert run(capsys, "fingerprint", src, "-o", tmp_path / "f.parquet", "-q")[0] == 0
    table = pq.read_table(tmp_path / "f.parquet")
    assert (
        table.column_names == ["id", "text", "n", "fingerprint"]
        and str(table.schema.field("fingerprint").type) == "uint64"
    )
    assert table.column("fingerprint").to_numpy().tolist() == FPS.tolist()
    src = write_input(tmp_path, "txt")
    assert run(capsys, "fingerprint", src, "-o", tmp_path / "t.jsonl", "-q")[0] == 0
    got = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert got == [{"id": f"{i[:5]}/{i}.txt", "fingerprint": h} for i, h in zip(IDS, hexes)]


def test_pairs_lists_the_brute_force_pairs(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    code, out, _ = run(capsys, "pairs", src, "--json", "--k", 4, "--no-verify")
    got = {(r["id_a"], r["id_b"], r["distance"]) for r in map(json.loads, out.splitlines())}
    assert code == 0 and got == {(IDS[a], IDS[b], d) for a, b, d in pairs(FPS, 4)}
    code, out, _ = run(capsys, "pairs", src, "--limit", 2, "-o", tmp_path / "p.csv", "--no-verify")
    assert code == 0 and f"{len(pairs(FPS, 3))} pairs within k=3 (fingerprints only)" in out
    first = max(pairs(FPS, 3), key=lambda p: (p[2], -p[0], -p[1]))
    assert out.splitlines()[0] == f"distance {first[2]}: {IDS[first[0]]}  ~  {IDS[first[1]]}"
    with open(tmp_path / "p.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == len(pairs(FPS, 3))


def test_index_build_add_and_query(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    idx = tmp_path / "c.idx"
    assert run(capsys, "index", "build", src, "-o", idx, "-q")[0] == 0
    code, out, _ = run(capsys, "index", "query", idx, "--text", DOCS[5], "--json")
    expected = sorted(
        (int(r), int(distances(FPS)[5, r])) for r in np.flatnonzero(distances(FPS)[5] <= 3)
    )
    assert (
        code == 0
        and sorted((m["id"], m["distance"]) for m in json.loads(out)["matches"]) == expected
    )
    code, out, _ = run(capsys, "index", "add", idx, src, "--json")
    assert code == 0 and json.loads(out) | {"errors": []} == {
        "index": str(idx),
        "added": len(DOCS),
        "size": 2 * len(DOCS),
        "already_near_duplicates": len(DOCS),
        "skipped": 0,
        "skipped_files": 0,
        "errors": [],
    }
    code, out, _ = run(capsys, "index", "query", idx, src, "--json")
    matches = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(matches) == 2 * int((distances(FPS) <= 3).sum())
    code, _, err = run(capsys, "index", "query", tmp_path / "corpus.jsonl", "--text", "x")
    assert code == 2 and "corpus.jsonl:" in err


def test_empty_inputs_give_empty_outputs(tmp_path, capsys):
    (tmp_path / "empty.jsonl").write_bytes(b"\n")
    code, out, _ = run(
        capsys,
        "dedup",
        tmp_path / "empty.jsonl",
        "-o",
        tmp_path / "out.jsonl",
        "--json",
        "--clusters",
        tmp_path / "c.csv",
    )
    assert code == 0 and json.loads(out)["documents"] == 0
    assert (tmp_path / "out.jsonl").read_bytes() == b"" and (
        tmp_path / "c.csv"
    ).read_text() == "id,cluster,kept,kept_id,jaccard,distance\n"


def test_a_missing_extra_is_named(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.parquet").write_bytes(b"x")
    (tmp_path / "a.jsonl.zst").write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression", None)
    code, _, err = run(capsys, "dedup", tmp_path / "a.parquet", "--dry-run")
    assert code == 2 and "Parquet needs pyarrow: pip install 'neardup[parquet]'" in err
    code, _, err = run(capsys, "dedup", tmp_path / "a.jsonl.zst", "--dry-run")
    assert code == 2 and ".zst files need zstandard: pip install 'neardup[zstd]'" in err


def test_index_ids_come_from_an_integer_id_field(tmp_path, capsys):
    src = tmp_path / "n.jsonl"
    src.write_bytes(
        jsonl_bytes({"n": 1000 + i, "name": IDS[i], "text": t} for i, t in enumerate(DOCS))
    )
    idx = tmp_path / "n.idx"
    assert run(capsys, "index", "build", src, "--id-field", "n", "-o", idx, "-q")[0] == 0
    code, out, _ = run(capsys, "index", "query", idx, "--text", DOCS[7], "--json")
    assert code == 0 and 1007 in [m["id"] for m in json.loads(out)["matches"]]
    code, _, err = run(
        capsys, "index", "build", src, "--id-field", "name", "-o", tmp_path / "bad.idx"
    )
    assert code == 2 and "index ids must be integers" in err and not (tmp_path / "bad.idx").exists()
    assert leftovers(tmp_path) == []


def test_explain_reads_files(tmp_path, capsys):
    (tmp_path / "a.txt").write_text(DOCS[0])
    (tmp_path / "b.txt").write_text(DOCS[0] + " and more")
    code, out, _ = run(capsys, "explain", "--files", tmp_path / "a.txt", tmp_path / "b.txt")
    distance = neardup.hamming(neardup.simhash(DOCS[0]), neardup.simhash(DOCS[0] + " and more"))
    # B's 3-word shingles beyond A's: the two that end on its two new words.
    assert code == 0 and f"distance {distance} " in out
    assert "only in B (2): 'the lazy dog and', " not in out
    assert re.search(r"only in B \(2\): '\S+ \S+ and', '\S+ and more'", out), out
    assert "only in A (0): none" in out


def test_plan_and_explain(capsys):
    code, out, _ = run(capsys, "plan", "--k", 3, "--n", 10_000_000)
    assert code == 0 and out == str(neardup.plan(3, 10_000_000)) + "\n"
    a, b = "the quick brown fox jumps", "the quick brown dog jumps"
    code, out, _ = run(capsys, "explain", a, b)
    distance = neardup.hamming(neardup.simhash(a), neardup.simhash(b))
    assert code == 0 and f"distance {distance} " in out
    assert (
        # the 3-word shingles: 'the quick brown' shared; the two holding fox or dog differ
        "only in A (2): 'quick brown fox', 'brown fox jumps'" in out
        and "only in B (2): 'quick brown dog', 'brown dog jumps'" in out
        and "shared 3-word shingles (1 of 5)" in out
    )


def test_a_folder_without_files_to_read_is_bad_input_for_every_command(tmp_path, capsys):
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text(DOCS[0])
    (folder / "sub" / "b.text").write_text(DOCS[1])
    (folder / ".hidden.txt").write_text(DOCS[2])
    (folder / "_SUCCESS").write_text("")
    index = tmp_path / "i.idx"
    assert run(capsys, "index", "build", write_input(tmp_path, "jsonl"), "-o", index, "-q")[0] == 0
    left_out = (
        f"neardup: {folder}: would leave out 2 files in no format neardup reads: "
        f"{folder / 'a.md'}, {folder / 'sub' / 'b.text'} (neardup reads .jsonl, .ndjson, .csv, "
        ".tsv (each optionally .gz or .zst), .parquet, .pq, .txt); --format FORMAT reads only "
        "the files of one format, --on-error skip reads the others and lists these as skipped\n"
    )
    for args in (
        ["dedup", folder, "-o", tmp_path / "kept"],
        ["dedup", folder, "--dry-run", "--json"],
        ["fingerprint", folder, "-o", tmp_path / "f.csv"],
        ["pairs", folder],
        ["tune", folder],
        ["index", "build", folder, "-o", tmp_path / "j.idx"],
        ["index", "add", index, folder],
        ["index", "query", index, folder],
    ):
        code, out, err = run(capsys, *args)
        assert (code, out, err) == (2, "", left_out), args
        code, out, err = run(capsys, *args, "--format", "txt")
        assert (code, out, err) == (2, "", f"neardup: {folder}: no txt files\n"), args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "i.idx", "notes"]


def test_fingerprint_of_a_folder_names_its_table_or_gets_a_usage_error(tmp_path, capsys):
    src = write_input(tmp_path, "txt")
    for name in ("fps.txt", "fps", "fps.json"):
        code, out, err = run(capsys, "fingerprint", src, "-o", tmp_path / name)
        assert code == 2 and out == "" and "Traceback" not in err, name
        assert (
            re.search(r"Invalid value for '?--output'?: ", err)
            and f"{tmp_path / name}: name it .csv, .tsv, .jsonl or .parquet" in err
        )
    code, _, _ = run(capsys, "fingerprint", src, "-o", tmp_path / "fps.csv", "-q")
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "fps.csv"]


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "csv", "txt"])
def test_every_output_is_named_for_the_inputs_format(tmp_path, capsys, kind):
    src = write_input(tmp_path, kind)
    fmt = "jsonl" if kind.startswith("jsonl") else kind
    good = {
        "jsonl": ["kept.jsonl", "kept.ndjson.gz", "kept.jsonl.zst"],
        "csv": ["kept.csv", "kept.csv.gz"],
        "txt": ["kept", "kept.txt"],
    }[fmt]
    bad = {
        "jsonl": ["kept.txt", "kept", "kept.json", "kept.csv", "kept.jsonl.tar"],
        "csv": ["kept.txt", "kept", "kept.tsv", "kept.jsonl"],
        "txt": ["kept.jsonl", "kept.csv.gz", "kept.parquet"],
    }[fmt]
    for name in bad:
        for command in (["dedup"], ["fingerprint"]) if fmt != "txt" else (["dedup"],):
            code, out, err = run(capsys, *command, src, "-o", tmp_path / name)
            assert (
                code == 2
                and out == ""
                and f"{tmp_path / name}: OUTPUT is written in the input's format" in err
            ), (command, name)
            assert "name it ." + fmt in err if fmt != "txt" else "name a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]
    for name in good:
        code, _, err = run(capsys, "dedup", src, "-o", tmp_path / name, "-q")
        assert code == 0, (name, err)
        path = tmp_path / name
        if fmt == "txt":
            assert read_ids(path, "txt") == sorted(KEPT_IDS)
            continue
        data = path.read_bytes()
        data = (
            gzip.decompress(data)
            if name.endswith(".gz")
            else zstandard.ZstdDecompressor().decompressobj().decompress(data)
            if name.endswith(".zst")
            else data
        )
        lines = data.decode().splitlines()
        ids = (
            [json.loads(line)["id"] for line in lines]
            if fmt == "jsonl"
            else [row["id"] for row in csv.DictReader(lines)]
        )
        assert ids == KEPT_IDS, name


def test_explain_help_lists_only_what_applies(capsys):
    code, out, _ = run(capsys, "explain", "--help")
    assert code == 0 and "--tokens" in out and "--stopwords" in out and "[tf|binary]" in out
    assert (
        "--field" not in out
        and "idf" not in out
        and "--text-field" not in out
        and "INPUT" not in out
    )
    code, _, err = run(capsys, "explain", "--weighting", "idf", "a", "b")
    assert code == 2 and "'idf' is not one of 'tf', 'binary'" in err
    code, _, err = run(capsys, "explain", "--field", "title=2", "a", "b")
    assert code == 2 and re.search(r"No such option:? '?--field", err)
    code, out, _ = run(capsys, "dedup", "--help")
    assert "--field" in out and "[tf|binary|idf]" in out


def test_counts_of_one_are_singular(tmp_path, capsys):
    one = tmp_path / "one.jsonl"
    one.write_bytes(jsonl_bytes([{"id": 1, "text": DOCS[0]}]))
    idx = tmp_path / "one.idx"
    outputs = [
        run(capsys, "fingerprint", one, "-o", tmp_path / "f.jsonl")[1],
        run(capsys, "dedup", one, "--dry-run")[1],
        run(capsys, "index", "build", one, "-o", idx)[1],
        run(capsys, "index", "query", idx, "--text", DOCS[0])[1],
        run(capsys, "index", "query", idx, one)[1],
        run(capsys, "index", "add", idx, one)[1],
    ]
    text = "".join(outputs)
    assert (
        outputs[0].startswith("1 document (")
        and "1 cluster" not in outputs[1]
        and outputs[1].startswith("1 document (")
    )
    assert outputs[2].startswith("indexed 1 document (k=3)") and outputs[3].startswith(
        "1 entry within k=3\n"
    )
    assert outputs[4].endswith("1 of 1 document has an entry within k=3 (1 match)\n")
    assert outputs[5].startswith(f"added 1 document to {idx} (2 in all); 1 of them was within k=3")
    assert not re.search(r"\b1 (documents|entries|matches|clusters|pairs|records)\b", text), text


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Reading:
    """An input whose bytes_read a test moves by hand."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.bytes_read = 0


@pytest.mark.parametrize("ending", ["done", "failed"])
def test_a_progress_bar_ends_at_100_percent_only_when_its_pass_ended(monkeypatch, ending):
    from neardup.corpus import Progress

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    inp = _Reading(1000)
    bar = Progress(inp, "writing", quiet=False)  # type: ignore[arg-type]
    assert bar.shown
    inp.bytes_read = 600
    bar.update()
    inp.bytes_read = 980  # a gzip trailer, a skipped record: the bytes counted fall short
    with pytest.raises(KeyboardInterrupt) if ending == "failed" else contextlib.nullcontext():
        try:
            if ending == "failed":
                raise KeyboardInterrupt
        finally:
            bar.close()
    shown = re.findall(r"writing +\[[#-]+\] +(\d+)%", terminal.getvalue())
    assert shown[-1] == ("100" if ending == "done" else "98"), terminal.getvalue()
    assert not Progress(inp, "writing", quiet=True).shown


def test_every_command_has_help(capsys):
    for args in [
        [],
        ["dedup"],
        ["fingerprint"],
        ["pairs"],
        ["index"],
        ["index", "build"],
        ["index", "add"],
        ["index", "query"],
        ["plan"],
        ["explain"],
    ]:
        code, out, _ = run(capsys, *args, "--help")
        assert code == 0 and out.startswith("Usage: neardup") and len(out) > 200, args


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_without_orjson_the_same_messages(tmp_path, capsys, monkeypatch, case):
    monkeypatch.setattr("neardup.io.jsonl._fast_loads", None)
    test_bad_jsonl_stops_with_file_line_and_status_2_and_leaves_nothing(tmp_path, capsys, case)


def test_without_orjson_the_same_result(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("neardup.io.jsonl._fast_loads", None)
    test_dedup_keeps_the_first_of_each_brute_force_cluster_in_every_format(
        tmp_path, capsys, "jsonl.gz"
    )
    (tmp_path / "kept.jsonl.gz").unlink()
    test_on_error_skip_counts_and_lists_bad_records(tmp_path, capsys)


@needs_parquet
@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_other_formats_on_stdin(tmp_path, capsys, monkeypatch, kind):
    data = write_input(tmp_path, kind).read_bytes()
    code, out, _ = run(
        capsys,
        "dedup",
        "-",
        "--format",
        kind,
        "--dry-run",
        "--json",
        stdin=data,
        monkeypatch=monkeypatch,
    )
    assert code == 0 and json.loads(out)["kept"] == len(KEPT_IDS)
    code, _, err = run(
        capsys, "dedup", "-", "--format", kind, "--dry-run", stdin=b"", monkeypatch=monkeypatch
    )
    assert code == 2 and (
        "<stdin>:1: no header row (the file is empty)" in err
        if kind == "csv"
        else "<stdin>: not a valid Parquet file" in err
    )


# -- --sample: the shipped corpus, for every command that reads INPUT -------------------------------


def test_every_command_that_reads_input_takes_the_sample_flag():
    import click

    from neardup.cli import cli

    def commands(group, path=()):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from commands(command, path + (name,))
            else:
                yield path + (name,), command

    readers = []
    for path, command in commands(cli):
        params = {p.name: p for p in command.params}
        if "input" in params:
            readers.append(" ".join(path))
            flag = next((p for p in command.params if "--sample" in getattr(p, "opts", [])), None)
            assert flag is not None and flag.is_flag and flag.name == "sample", path
    assert sorted(readers) == [
        "dedup",
        "fingerprint",
        "index add",
        "index build",
        "index query",
        "pairs",
        "tune",
    ]


def _unzipped(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


@pytest.mark.parametrize(
    "command", ["dedup", "fingerprint", "pairs", "index build", "index add", "index query", "tune"]
)
def test_sample_is_the_shipped_corpus_for_every_command(tmp_path, capsys, command):
    from neardup.cli import sample_path

    shipped = sample_path()
    assert Path(shipped).is_file()
    results = []
    for source in (["--sample"], [shipped]):
        out_dir = tmp_path / ("flag" if source == ["--sample"] else "path")
        out_dir.mkdir()
        if command == "dedup":
            args = [
                "dedup",
                *source,
                "-o",
                out_dir / "kept.jsonl.gz",
                "--clusters",
                out_dir / "c.csv",
                "--quiet",
            ]
        elif command == "fingerprint":
            args = ["fingerprint", *source, "-o", out_dir / "fps.jsonl.gz", "--quiet"]
        elif command == "pairs":
            args = ["pairs", *source, "-o", out_dir / "pairs.csv", "--quiet"]
        elif command == "index build":
            args = ["index", "build", *source, "-o", out_dir / "s.idx", "--quiet"]
        elif command == "index add":
            assert (
                run(capsys, "index", "build", "--sample", "-o", out_dir / "s.idx", "--quiet")[0]
                == 0
            )
            args = ["index", "add", out_dir / "s.idx", *source, "--quiet"]
        elif command == "index query":
            assert (
                run(capsys, "index", "build", "--sample", "-o", out_dir / "s.idx", "--quiet")[0]
                == 0
            )
            args = ["index", "query", out_dir / "s.idx", *source, "--json"]
        else:
            args = [
                "tune",
                *source,
                "--candidates",
                "fingerprint",
                "--max-k",
                3,
                "--pairs",
                20,
                "--json",
            ]
        code, out, err = run(capsys, *args)
        assert code == 0, err
        if command == "tune":
            report = json.loads(out)
            assert report["documents"] == 3000 and report.pop("seconds") is not None
            out = json.dumps(report)
        files = {p.name: _unzipped(p) for p in sorted(out_dir.iterdir())}
        results.append((out, files))
    assert results[0] == results[1]
    out, files = results[0]
    assert out or files
    if command == "dedup":
        kept = [json.loads(line) for line in files["kept.jsonl.gz"].splitlines()]
        assert 0 < len(kept) < 3000
    if command == "index query":
        assert len(out.splitlines()) >= 3000  # every document finds itself at least


def test_sample_and_input_together_are_a_usage_error(tmp_path, capsys):
    src = write_input(tmp_path, "jsonl")
    for args in (
        ["dedup", src, "--sample", "--dry-run"],
        ["tune", src, "--sample"],
        ["index", "build", src, "--sample", "-o", tmp_path / "x.idx"],
    ):
        code, _, err = run(capsys, *args)
        assert code == 2 and "give INPUT or --sample, not both" in err, args


def test_tune_sample_with_a_number_points_to_pairs(tmp_path, capsys):
    for args in (
        ["tune", "--sample", "50"],
        ["tune", write_input(tmp_path, "jsonl"), "--sample", "50", "--max-k", "2"],
    ):
        code, _, err = run(capsys, *args)
        assert code == 2 and "the pairs measured at each distance are --pairs 50" in err, args
    code, out, _ = run(
        capsys,
        "tune",
        write_input(tmp_path, "jsonl"),
        "--candidates",
        "fingerprint",
        "--pairs",
        "3",
        "--max-k",
        "2",
        "--json",
    )
    assert code == 0 and json.loads(out)["sample"] == 3


def test_dedup_reports_its_candidate_pairs_and_stops_past_max_pairs(capsys):
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    fps = neardup.Simhasher().fingerprint_many(texts)
    distinct = np.unique(fps[fps != 0])
    d = np.bitwise_count(distinct[:, None] ^ distinct[None, :])
    want = int(np.triu(d <= THRESHOLD_K, 1).sum())
    by_fp = ("--candidates", "fingerprint")
    code, out, _ = run(capsys, "dedup", "--sample", "--dry-run", "--json", *by_fp)
    assert code == 0 and json.loads(out)["candidate_pairs"] == want > 100
    code, _, err = run(capsys, "dedup", "--sample", "--dry-run", "--max-pairs", want - 1, *by_fp)
    assert code == 2 and f"{want:,} candidate pairs" in err and f"limit of {want - 1:,}" in err
    assert (
        run(capsys, "dedup", "--sample", "--dry-run", "--max-pairs", want, "--quiet", *by_fp)[0]
        == 0
    )
