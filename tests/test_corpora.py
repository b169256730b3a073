"""benches/corpora.py: the corpus suite's builders on a tiny temporary machine (a fake
/usr/share/doc, man pages, a Python library and a gettext catalogue written here), its files and
their exact truth (checked by brute force over the written files)."""

from __future__ import annotations

import gzip
import json
import random
import struct
import sys
from itertools import combinations
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
import corpora  # noqa: E402
import synth  # noqa: E402


def write_mo(path: Path, messages: dict[str, str]) -> None:
    """A GNU gettext catalogue (.mo), little-endian, as msgfmt writes it (without a hash table)."""
    items = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    ids = [k.encode() for k, _ in items]
    strs = [v.encode() for _, v in items]
    n = len(items)
    key_start = 7 * 4 + 16 * n
    data = b""
    koffsets, voffsets = [], []
    for k in ids:
        koffsets.append((len(k), key_start + len(data)))
        data += k + b"\0"
    for v in strs:
        voffsets.append((len(v), key_start + len(data)))
        data += v + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, n, 7 * 4, 7 * 4 + 8 * n, 0, 0)
    table = b"".join(struct.pack("<2I", *o) for o in koffsets) + b"".join(
        struct.pack("<2I", *o) for o in voffsets
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + table + data)


def read_truth(path: Path) -> dict[tuple[str, str], float]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        assert f.readline() == "id_a\tid_b\tjaccard\n"
        return {(a, b): float(j) for a, b, j in (line.rstrip("\n").split("\t") for line in f)}


def brute_truth(docs: list[dict[str, str]], threshold: float = 0.5) -> dict[tuple[str, str], float]:
    sets = [synth.neardup_shingles(d["text"]) for d in docs]
    out = {}
    for i, j in combinations(range(len(docs)), 2):
        jac = synth.jaccard(sets[i], sets[j])
        if jac >= threshold:
            out[(docs[i]["id"], docs[j]["id"])] = jac
    return out


MAN_PAGE = r""".\" a comment that must go
.TH FROB 1 2024-01-01 "frob 1.0" "User Commands"
.SH NAME
frob \- frobnicate the \fBwidgets\fR of a \fIsystem\fP
.SH DESCRIPTION
.B frob
reads every widget and turns it \(em once \- into a gadget.
.PP
Options are described below; the \-v flag prints more.
.TP
.BR \-v ", " \-\-verbose
Print every widget as it is frobnicated, with its size and its owner.
"""


def test_strip_roff() -> None:
    text = corpora.strip_roff(MAN_PAGE)
    assert "comment" not in text and ".TH" not in text and "\\f" not in text
    assert "frob - frobnicate the widgets of a system" in text
    assert "reads every widget and turns it - once - into a gadget." in text
    assert "-v, --verbose" in text
    assert "\n\nOptions are described below; the -v flag prints more." in text


def test_light_and_rated_edits_are_seeded() -> None:
    text = "alpha beta gamma delta\n\nepsilon zeta eta theta\n\niota kappa lambda mu\n\nnu xi omicron pi"
    a = corpora.edit_text(random.Random(1), text, 0.3, ["new"])
    assert a == corpora.edit_text(random.Random(1), text, 0.3, ["new"])
    assert a != text
    assert corpora.edit_text(random.Random(1), text, 0.0, ["new"], move=0.0) == text
    # Whitespace survives: an edit at rate 0 with a paragraph move keeps every paragraph.
    moved = corpora.edit_text(random.Random(3), text, 0.0, [], move=1.0)
    assert sorted(moved.split("\n\n")) == sorted(text.split("\n\n"))


def test_group_sizes_fill_the_total_without_passing_it() -> None:
    sizes = corpora.group_sizes(100_000, 4_909, seed=5)
    assert sizes[0] == 4_909 and max(sizes) == 4_909 and min(sizes) >= 2
    # The next group drawn would not fit: the total is filled to within one group.
    assert 100_000 - 4_909 < sum(sizes) <= 100_000
    assert sizes == corpora.group_sizes(100_000, 4_909, seed=5)
    assert sizes != corpora.group_sizes(100_000, 4_909, seed=6)


def test_build_on_a_tiny_machine(tmp_path: Path) -> None:
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(300)]
    fake = tmp_path / "machine"
    # /usr/share/doc: a text file, a gzipped changelog, an HTML page, a binary file, a short file.
    doc = fake / "doc"
    body = " ".join(rng.choice(vocab) for _ in range(200))
    (doc / "pkg").mkdir(parents=True)
    (doc / "pkg" / "README.txt").write_text("Read me. " + body)
    (doc / "pkg" / "changelog.gz").write_bytes(
        gzip.compress(("pkg (1.0) unstable; " + body + " urgency").encode())
    )
    (doc / "pkg" / "index.html").write_text(
        "<html><style>x{}</style><p>Hello " + body + "</p></html>"
    )
    (doc / "pkg" / "logo.png").write_bytes(b"\x89PNG\0\0" + b"x" * 600)
    (doc / "pkg" / "tiny.txt").write_text("too short")
    man = fake / "man"
    (man / "man1").mkdir(parents=True)
    (man / "man1" / "frob.1.gz").write_bytes(gzip.compress((MAN_PAGE + "\n" + body).encode()))
    (man / "man1" / "alias.1.gz").write_bytes(gzip.compress(b".so man1/frob.1\n"))
    # A Python library: modules, an empty __init__.py, a package METADATA for short.
    lib = fake / "lib"
    (lib / "site-packages" / "pkg").mkdir(parents=True)
    (lib / "site-packages" / "pkg" / "__init__.py").write_text("")
    (lib / "site-packages" / "sub").mkdir()
    (lib / "site-packages" / "sub" / "__init__.py").write_text("")
    (lib / "mod.py").write_text("def f(x):\n    return x + 1\n")
    (lib / "site-packages" / "tool-1.0.dist-info").mkdir()
    (lib / "site-packages" / "tool-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tool\nSummary: A tool that frobs\n\nThe long description of the tool.\n"
    )
    # Package descriptions: a dpkg status file.
    status = fake / "status"
    stanzas = []
    for i in range(40):
        words = " ".join(rng.choice(vocab) for _ in range(12))
        stanzas.append(
            f"Package: p{i}\nVersion: 1\nDescription: package {i % 7} of the suite\n {words}\n "
            f".\n second paragraph {i % 3}\n"
        )
    status.write_text("\n".join(stanzas))
    # A Chinese catalogue (and an identical copy, read once) and a Chinese man page.
    zh = {f"msg{i}": "无法打开文件" + "中文字符"[i % 4] + "请检查权限" for i in range(20)}
    zh["ascii"] = "no Chinese here"
    write_mo(fake / "locale" / "zh_CN" / "LC_MESSAGES" / "a.mo", zh)
    write_mo(fake / "locale" / "zh_CN.UTF-8" / "LC_MESSAGES" / "b.mo", zh)
    write_mo(fake / "locale" / "fr" / "LC_MESSAGES" / "a.mo", {"x": "pas du chinois"})
    (fake / "zhman" / "man1").mkdir(parents=True)
    (fake / "zhman" / "man1" / "ls.1").write_text(
        ".TH LS 1\n.SH 名称\nls \\- 列出目录内容\n.PP\n显示文件的信息。\n"
    )

    builders = {
        "short": lambda: corpora.build_short(debian=None, status=status, lib=lib, apt=False),
        "long": lambda: corpora.build_long(doc, [man], extra_roots=()),
        "code": lambda: corpora.build_code(lib),
        "chinese": lambda: corpora.build_chinese([fake / "locale"], [fake / "zhman"]),
    }
    out = tmp_path / "suite"
    logs: list[str] = []
    corpora.build(
        out, only=["short", "long", "code", "chinese"], builders=builders, log=logs.append
    )
    assert any(
        "fewer than" in line and "--install" in line for line in logs
    )  # tiny corpora are said to be so

    short = [
        json.loads(line) for line in (out / "short.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(short) == 41
    assert (
        short[0]["text"].startswith("package 0 of the suite\n")
        and "\n\nsecond paragraph 0" in short[0]["text"]
    )
    assert short[-1]["source"] == "pypi:tool" and short[-1]["text"].startswith(
        "A tool that frobs\nThe long"
    )

    long = {
        Path(d["source"]).name: d["text"]
        for d in map(json.loads, (out / "long.jsonl").read_text(encoding="utf-8").splitlines())
    }
    assert set(long) == {"frob.1.gz", "README.txt", "changelog.gz", "index.html"}
    assert "x{}" not in long["index.html"] and long["index.html"].startswith("Hello w")
    assert "frobnicate the widgets" in long["frob.1.gz"]

    code = {
        d["source"]: d["text"]
        for d in map(json.loads, (out / "code.jsonl").read_text(encoding="utf-8").splitlines())
    }
    assert code == {
        "mod.py": "def f(x):\n    return x + 1\n",
        "site-packages/pkg/__init__.py": "",
        "site-packages/sub/__init__.py": "",
    }

    chinese = [
        json.loads(line)
        for line in (out / "chinese.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert (
        len(chinese) == 20 + 2
    )  # one catalogue of the two copies, no ASCII message; two paragraphs
    assert [d["text"] for d in chinese[-2:]] == [
        "LS 1\n名称\nls - 列出目录内容",
        "显示文件的信息。",
    ]

    # Every truth file is the brute-force truth of its corpus; the two empty __init__.py are copies.
    for name in ("short", "long", "code", "chinese"):
        docs = [
            json.loads(line)
            for line in (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        got = read_truth(out / f"{name}.truth.tsv.gz")
        want = brute_truth(docs)
        assert got.keys() == want.keys()
        assert all(got[k] == pytest.approx(want[k], abs=1e-6) for k in got)
        marker = json.loads((out / f"{name}.done").read_text())
        assert marker["documents"] == len(docs) and marker["pairs_50"] == len(got)
    code_truth = read_truth(out / "code.truth.tsv.gz")
    ids = {
        d["source"]: d["id"]
        for d in map(json.loads, (out / "code.jsonl").read_text(encoding="utf-8").splitlines())
    }
    assert code_truth == {
        (ids["site-packages/pkg/__init__.py"], ids["site-packages/sub/__init__.py"]): 1.0
    }
    assert len(read_truth(out / "chinese.truth.tsv.gz")) > 0  # messages one character apart

    # dups and edits from the corpora built above (read back from the folder), seeded.
    corpora.build(out, only=["dups"], log=logs.append, copies=(100, 200, 400))
    dups = [
        json.loads(line) for line in (out / "dups.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(dups) == 41 + 100 + 200 + 400 + 300
    texts = [d["text"] for d in dups]
    counts = sorted(texts.count(t) for t in set(texts) if texts.count(t) >= 100)
    assert len(counts) == 3 and counts[0] >= 100 and counts[-1] >= 400
    marker = json.loads((out / "dups.done").read_text())
    assert marker["pairs_80"] >= 100 * 99 // 2 + 200 * 199 // 2 + 400 * 399 // 2
    got = read_truth(out / "dups.truth.tsv.gz")
    assert got == pytest.approx(brute_truth(dups), abs=1e-6)
    first = (out / "dups.jsonl").read_bytes()
    corpora.build(out, only=["dups"], log=logs.append, copies=(100, 200, 400))
    assert (out / "dups.jsonl").read_bytes() == first

    sources = [
        corpora.Doc(d["id"], d["text"], d["source"])
        for name in ("short", "long", "code")
        for d in map(json.loads, (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines())
    ]
    edits = corpora.build_edits(sources, per_band=10)
    assert edits == corpora.build_edits(sources, per_band=10)
    bases = [d for d in edits if d.source.startswith("base:")]
    assert len(bases) == len({d.source for d in bases}) and len(edits) > len(bases)
    assert all(100 <= len(d.text.encode()) < 100_000 for d in bases)
    docs = [{"id": d.id, "text": d.text} for d in edits]
    truth = synth.exact_truth([d["text"] for d in docs], 0.5, synth.neardup_shingles)
    want = brute_truth(docs)
    assert len(truth.keys) == len(want)
