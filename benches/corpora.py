"""The corpus suite of the benchmarks (issue 13): six corpora made from what this machine's Debian
and PyPI packages ship, or generated from them, each with its exact truth.

    python benches/corpora.py build [--out DIR] [--only NAME ...] [--install]
    python benches/corpora.py list [--out DIR]

writes, for each corpus NAME, ``DIR/NAME.jsonl`` (one ``{"id", "text", "source"}`` per line) and
``DIR/NAME.truth.tsv.gz`` (``id_a, id_b, jaccard``: every pair of documents whose word-3-shingle
Jaccard is >= 0.5, by :func:`synth.exact_truth` with neardup's own shingles,
:func:`synth.neardup_shingles`), then ``DIR/NAME.done`` with counts. DIR defaults to
``../benchdata/suite`` beside the clone: data is never committed.

- ``short``: Debian package descriptions: ``../shared/data/debian-descriptions.jsonl.gz`` when
  present, else ``apt-cache dumpavail`` (the package lists; run ``apt-get update`` first), topped up
  with the installed packages (``/var/lib/dpkg/status``) and the summaries and descriptions of the
  Python packages installed here (``METADATA`` files).
- ``long``: manuals and documentation: the English manual pages of ``/usr/share/man`` (roff
  macros stripped simply) and the text, Markdown, reStructuredText, HTML (tags stripped) and
  gzipped files of ``/usr/share/doc``, one document per file, 500 to 100,000 characters.
- ``code``: every ``.py`` file of the Python standard library and site-packages of at most
  100,000 characters, empty ``__init__.py`` files included.
- ``chinese``: the Chinese translations (``zh_*`` gettext catalogues, ``.mo``) that packages ship,
  one document per translated message, and the paragraphs of Chinese manual pages.
- ``dups``: short texts (the first 12,000 of ``short``) and three of them copied 1,000, 2,000 and
  4,000 times, with 100 light edits of each (seeded).
- ``edits``: real documents of 100 bytes to 100 KB (from ``short``, ``long`` and ``code``) and
  seeded edits of them at several rates: word substitutions, insertions, deletions, paragraph
  moves.

The Debian packages whose files ``long`` and ``chinese`` read: ``manpages``, ``manpages-dev`` and
``python3-doc`` (more manuals), ``manpages-zh`` (Chinese manual pages), and any package with
``zh_CN`` translations (git, vim, postgresql ...). ``--install`` runs ``apt-get install -y`` for
them; without it the builder installs nothing and says what is missing when a corpus falls short
of ``MIN_DOCS`` documents.
"""

from __future__ import annotations

import argparse
import gettext
import gzip
import hashlib
import html
import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402  (the truth tool and the scorer)

__all__ = [
    "CORPORA",
    "DEFAULT_OUT",
    "Doc",
    "build",
    "build_chinese",
    "build_code",
    "build_dups",
    "build_edits",
    "build_long",
    "build_short",
    "edit_text",
    "read_corpus",
    "strip_roff",
    "write_corpus",
]

DEFAULT_OUT = HERE.parent.parent / "benchdata" / "suite"
MIN_DOCS = 2_000
MAX_DOCS = 100_000
PYTHON_LIB = Path("/root/.pyenv/versions/3.11.7/lib/python3.11")
PACKAGES = ["manpages", "manpages-dev", "python3-doc", "manpages-zh"]
#: Bumped whenever a builder would give other documents from the same sources.
VERSION = 1


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    source: str


# --- short -----------------------------------------------------------------------------------


def _deb822(text: str) -> Iterator[tuple[str, str]]:
    """(package, description) of each stanza of a Packages/status file: the first line of
    Description and its continuation lines (leading space removed, " ." as an empty line)."""
    for stanza in re.split(r"\n\s*\n", text):
        name = desc = None
        lines = stanza.split("\n")
        for k, line in enumerate(lines):
            if line.startswith("Package:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("Description:"):
                body = [line.split(":", 1)[1].strip()]
                for cont in lines[k + 1 :]:
                    if not cont.startswith(" "):
                        break
                    cont = cont[1:]
                    body.append("" if cont.strip() == "." else cont)
                desc = "\n".join(body)
        if name and desc:
            yield name, desc


def _metadata_descriptions(lib: Path) -> Iterator[tuple[str, str]]:
    """(distribution, summary + description) of the Python packages installed under lib."""
    for meta in sorted(lib.glob("site-packages/*.dist-info/METADATA")):
        try:
            raw = meta.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        head, _, body = raw.partition("\n\n")
        fields = dict(re.findall(r"^(Name|Summary): (.*)$", head, flags=re.M))
        if "Name" in fields:
            yield fields["Name"], (fields.get("Summary", "") + "\n" + body.strip()).strip()


def build_short(
    debian: Path | None = synth.DEBIAN_JSONL_GZ,
    status: Path = Path("/var/lib/dpkg/status"),
    lib: Path = PYTHON_LIB,
    apt: bool = True,
    limit: int = MAX_DOCS,
) -> list[Doc]:
    """Short descriptions: the Debian corpus when present, else this machine's package metadata."""
    docs: list[Doc] = []
    if debian is not None and debian.is_file():
        with gzip.open(debian, "rt", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                docs.append(Doc(f"short-{len(docs):06d}", d["text"], f"debian:{d['id']}"))
        return docs[:limit]
    seen: set[str] = set()

    def add(origin: str, pairs: Iterable[tuple[str, str]]) -> None:
        for name, text in pairs:
            if name not in seen and text.strip():
                seen.add(name)
                docs.append(Doc(f"short-{len(docs):06d}", text, f"{origin}:{name}"))

    if apt:
        try:
            dump = subprocess.run(
                ["apt-cache", "dumpavail"],
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
            )
            add("apt", _deb822(dump.stdout))
        except OSError:
            pass
    if status.is_file():
        add("dpkg", _deb822(status.read_text(encoding="utf-8", errors="replace")))
    add("pypi", _metadata_descriptions(lib))
    return docs[:limit]


# --- long ------------------------------------------------------------------------------------

_ROFF_ESCAPES = [
    (re.compile(r"\\f(\(..|\[[^\]]*\]|.)"), ""),  # font changes
    (re.compile(r"\\s[-+]?\d+"), ""),  # size changes
    (re.compile(r"\\[*n](\(..|\[[^\]]*\]|.)"), ""),  # strings and registers
    (re.compile(r"\\\(em|\\\(en"), "-"),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), " "),  # special characters
    (re.compile(r"\\[&|^%:]"), ""),
    (re.compile(r"\\-"), "-"),
    (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\(.)"), r"\1"),
]
#: Macros whose arguments are text (headings, fonts, tagged paragraphs).
_ALTERNATING = {"BI", "BR", "IB", "IR", "RB", "RI"}  # fonts alternate between arguments, no space
_TEXT_MACROS = {
    "SH",
    "SS",
    "B",
    "I",
    "BI",
    "BR",
    "IB",
    "IR",
    "RB",
    "RI",
    "SM",
    "SB",
    "TP",
    "IP",
    "TH",
    "UR",
    "MT",
    "Nm",
    "Nd",
    "Sh",
    "Ar",
    "Fl",
    "Op",
    "Pa",
    "Xr",
    "Dt",
}


def strip_roff(source: str) -> str:
    """The text of a manual page, roughly: comments dropped, the arguments of text macros kept,
    other requests as paragraph breaks, inline escapes removed."""
    out: list[str] = []
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"", '\\"')) or line.strip() in (".", "'"):
            continue
        if line.startswith((".", "'")):
            name, _, args = line[1:].strip().partition(" ")
            if name in _TEXT_MACROS and args:
                words = [quoted or bare for quoted, bare in re.findall(r'"([^"]*)"|(\S+)', args)]
                line = ("" if name in _ALTERNATING else " ").join(words)
            else:
                if out and out[-1] != "":
                    out.append("")
                continue
        for pattern, repl in _ROFF_ESCAPES:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _strip_html(source: str) -> str:
    source = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", source)
    source = re.sub(r"(?i)<(br|p|div|h\d|li|tr|pre)\b[^>]*>", "\n", source)
    text = html.unescape(re.sub(r"(?s)<[^>]*>", "", source))
    return re.sub(r"\n\s*\n\s*", "\n\n", text).strip()


_TEXT_SUFFIXES = {
    "",
    ".txt",
    ".md",
    ".rst",
    ".html",
    ".htm",
    ".debian",
    ".text",
    ".news",
    ".markdown",
}


def _read_text_file(path: Path) -> str | None:
    """The text of a documentation file (gunzipped), or None when it is not text."""
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if b"\0" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _man_files(roots: Iterable[Path]) -> Iterator[Path]:
    for root in roots:
        for section in sorted(root.glob("man*")):
            for f in sorted(section.iterdir()):
                if f.is_file() and not f.is_symlink():
                    yield f


def build_long(
    doc_root: Path = Path("/usr/share/doc"),
    man_roots: Iterable[Path] = (Path("/usr/share/man"),),
    extra_roots: Iterable[Path] = (
        Path("/usr/share/doc/python3"),
        Path("/usr/share/doc/python3.11"),
    ),
    min_chars: int = 500,
    max_chars: int = 100_000,
    limit: int = MAX_DOCS,
) -> list[Doc]:
    """Manuals and documentation, one document per file (English manual pages only)."""
    docs: list[Doc] = []
    seen: set[Path] = set()

    def add(path: Path, text: str | None) -> None:
        if text is not None and min_chars <= len(text) <= max_chars and len(docs) < limit:
            docs.append(Doc(f"long-{len(docs):06d}", text, str(path)))

    for f in _man_files(man_roots):
        source = _read_text_file(f)
        if source is None or source.lstrip().startswith(".so "):
            continue
        add(f, strip_roff(source))
    roots = [doc_root] + [r for r in extra_roots if r.is_dir() and doc_root not in r.parents]
    for root in roots:
        if not root.is_dir():
            continue
        for dirpath, _dirs, files in sorted(os.walk(root)):
            for name in sorted(files):
                f = Path(dirpath) / name
                if f.is_symlink() or f in seen:
                    continue
                seen.add(f)
                inner = Path(name[:-3]) if name.endswith(".gz") else Path(name)
                if inner.suffix.lower() not in _TEXT_SUFFIXES and not inner.name.startswith(
                    ("README", "NEWS", "changelog", "copyright")
                ):
                    continue
                text = _read_text_file(f)
                if text is not None and inner.suffix.lower() in (".html", ".htm"):
                    text = _strip_html(text)
                add(f, text)
    return docs


# --- code ------------------------------------------------------------------------------------


def build_code(
    lib: Path = PYTHON_LIB, max_chars: int = 100_000, limit: int = MAX_DOCS
) -> list[Doc]:
    """Every .py file under lib (the standard library and site-packages) of at most ``max_chars``
    characters, empty ones included (the few larger ones are mostly generated tables)."""
    docs: list[Doc] = []
    for dirpath, dirs, files in os.walk(lib):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py") and len(docs) < limit:
                f = Path(dirpath) / name
                if f.is_symlink():
                    continue
                try:
                    text = f.read_bytes().decode("utf-8", errors="replace")
                except OSError:
                    continue
                if len(text) <= max_chars:
                    docs.append(Doc(f"code-{len(docs):06d}", text, str(f.relative_to(lib))))
    return docs


# --- chinese ---------------------------------------------------------------------------------

_HAN = re.compile(r"[\u4e00-\u9fff]")


def _mo_files(roots: Iterable[Path]) -> list[Path]:
    found = []
    for root in roots:
        if root.is_dir():
            for dirpath, _dirs, files in os.walk(root):
                if re.search(r"/zh([_.-][A-Za-z0-9_.-]*)?(/|$)", dirpath + "/"):
                    found += [Path(dirpath) / f for f in files if f.endswith(".mo")]
    return sorted(found)


def build_chinese(
    mo_roots: Iterable[Path] = (
        Path("/usr/share/locale"),
        Path("/usr/share/vim"),
        Path("/usr/lib/locale"),
        PYTHON_LIB,
    ),
    man_roots: Iterable[Path] = (Path("/usr/share/man/zh_CN"), Path("/usr/share/man/zh_TW")),
    min_han: int = 2,
    limit: int = MAX_DOCS,
) -> list[Doc]:
    """Chinese text: each translated message of the zh gettext catalogues (identical catalogue
    files read once) holding at least ``min_han`` Han characters, then each paragraph of the
    Chinese manual pages holding as many."""
    docs: list[Doc] = []
    digests: set[bytes] = set()
    for f in _mo_files(mo_roots):
        try:
            raw = f.read_bytes()
            with open(f, "rb") as fh:
                catalog = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError, ValueError, LookupError):
            continue
        digest = hashlib.blake2b(raw, digest_size=16).digest()
        if digest in digests:
            continue
        digests.add(digest)
        for key, value in sorted(catalog.items(), key=lambda kv: str(kv[0])):
            if (
                key
                and isinstance(value, str)
                and len(_HAN.findall(value)) >= min_han
                and len(docs) < limit
            ):
                docs.append(
                    Doc(
                        f"zh-{len(docs):06d}",
                        value,
                        f"{f}:{key if isinstance(key, str) else key[0]}"[:300],
                    )
                )
    for f in _man_files(man_roots):
        source = _read_text_file(f)
        if source is None:
            continue
        for k, para in enumerate(strip_roff(source).split("\n\n")):
            if len(_HAN.findall(para)) >= min_han and len(docs) < limit:
                docs.append(Doc(f"zh-{len(docs):06d}", para, f"{f}#{k}"))
    return docs


# --- dups ------------------------------------------------------------------------------------


def _light_edit(rng: random.Random, text: str) -> str:
    """One or two words changed, dropped or doubled, or the case or punctuation changed."""
    words = text.split(" ")
    for _ in range(rng.randint(1, 2)):
        op = rng.random()
        at = rng.randrange(len(words))
        if op < 0.3:
            words[at] = words[at].upper()
        elif op < 0.55 and len(words) > 3:
            del words[at]
        elif op < 0.8:
            words.insert(at, words[at])
        else:
            words[at] = words[at] + rng.choice(",.;!")
    return " ".join(words)


def build_dups(
    short: list[Doc],
    seed: int = 0,
    base: int = 12_000,
    copies: tuple[int, ...] = (1_000, 2_000, 4_000),
    edits: int = 100,
) -> list[Doc]:
    """``base`` short texts, and for each of ``copies`` a text of at least ten words copied that
    many times and edited lightly ``edits`` times, shuffled (seeded)."""
    rng = random.Random(f"neardup-suite-dups:{seed}")
    pool = short[:base]
    if not pool:
        return []
    texts = [(d.text, d.source) for d in pool]
    candidates = [d for d in pool if len(d.text.split()) >= 10] or pool
    for count, src in zip(copies, rng.sample(candidates, min(len(copies), len(candidates)))):
        texts += [(src.text, f"copy:{src.id}")] * count
        texts += [(_light_edit(rng, src.text), f"edit:{src.id}") for _ in range(edits)]
    rng.shuffle(texts)
    return [Doc(f"dups-{i:06d}", t, s) for i, (t, s) in enumerate(texts)]


def group_sizes(total: int, largest: int, seed: int = 5) -> list[int]:
    """Sizes of groups of copies for a heavy-duplication corpus at scale: the ``largest``, then
    sizes from 2 to about 4,000 (most small: ``4,000 u^3``, seeded) while their sum stays at
    most ``total``."""
    rng = random.Random(seed)
    sizes = [largest]
    while True:
        size = int(min(largest, 2 + 4000 * rng.random() ** 3))
        if sum(sizes) + size > total:
            return sizes
        sizes.append(size)


# --- edits -----------------------------------------------------------------------------------

#: Edit rates (edits per word) of the variants; each variant also moves a paragraph with
#: probability 0.3.
RATES = (0.005, 0.02, 0.05, 0.1, 0.2, 0.35)
_TOKEN = re.compile(r"\S+|\s+")


def edit_text(
    rng: random.Random, text: str, rate: float, vocabulary: list[str], move: float = 0.3
) -> str:
    """``text`` with about ``rate`` edits per word (a word substituted, inserted or deleted, in
    proportions 2 : 1 : 1, whitespace kept), and one paragraph moved with probability ``move``."""
    paragraphs = text.split("\n\n")
    spans = [_TOKEN.findall(p) for p in paragraphs]
    where = [
        (p, k) for p, toks in enumerate(spans) for k, tok in enumerate(toks) if not tok.isspace()
    ]
    n_edits = int(rate * len(where) + rng.random())
    for p, k in rng.sample(where, min(n_edits, len(where))):
        op = rng.random()
        word = rng.choice(vocabulary) if vocabulary else "x"
        if op < 0.5:
            spans[p][k] = word
        elif op < 0.75:
            spans[p][k] = spans[p][k] + " " + word
        else:
            spans[p][k] = ""
    paragraphs = ["".join(toks) for toks in spans]
    if len(paragraphs) >= 3 and rng.random() < move:
        moved = paragraphs.pop(rng.randrange(len(paragraphs)))
        paragraphs.insert(rng.randrange(len(paragraphs) + 1), moved)
    return "\n\n".join(paragraphs)


def build_edits(
    sources: list[Doc],
    seed: int = 0,
    per_band: int = 700,
    max_variants: int = 4,
    bands: tuple[tuple[int, int], ...] = ((100, 1_000), (1_000, 10_000), (10_000, 100_000)),
) -> list[Doc]:
    """``per_band`` real documents of each size band (bytes of UTF-8), each followed by 0 to
    ``max_variants`` edited variants at rates drawn from ``RATES``, shuffled (seeded)."""
    rng = random.Random(f"neardup-suite-edits:{seed}")
    vocabulary: list[str] = []
    for d in sources[:: max(1, len(sources) // 2000)]:
        vocabulary += d.text.split()[:50]
    out: list[tuple[str, str]] = []
    for lo, hi in bands:
        fit = [
            d
            for d in sources
            if lo <= len(d.text.encode("utf-8")) < hi and len(d.text.split()) >= 5
        ]
        for d in rng.sample(fit, min(per_band, len(fit))):
            out.append((d.text, f"base:{d.source}"))
            for _ in range(rng.randint(0, max_variants)):
                rate = rng.choice(RATES)
                out.append((edit_text(rng, d.text, rate, vocabulary), f"edit{rate}:{d.source}"))
    rng.shuffle(out)
    return [Doc(f"edits-{i:06d}", t, s) for i, (t, s) in enumerate(out)]


# --- files -----------------------------------------------------------------------------------


def write_corpus(
    docs: list[Doc], out: Path, name: str, threshold: float = synth.LOOSE
) -> dict[str, object]:
    """Writes NAME.jsonl, NAME.truth.tsv.gz (exact truth at ``threshold``) and NAME.done; returns
    the counts the marker records."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    jsonl, truth_path, marker = (
        out / f"{name}.jsonl",
        out / f"{name}.truth.tsv.gz",
        out / f"{name}.done",
    )
    marker.unlink(missing_ok=True)
    tmp = jsonl.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(
                json.dumps({"id": d.id, "text": d.text, "source": d.source}, ensure_ascii=False)
                + "\n"
            )
    os.replace(tmp, jsonl)
    truth = synth.exact_truth([d.text for d in docs], threshold, synth.neardup_shingles)
    ids = [d.id for d in docs]
    a, b = truth.keys // max(truth.n, 1), truth.keys % max(truth.n, 1)
    tmp = truth_path.with_suffix(".tmp")
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=3, mtime=0) as f,
    ):
        f.write(b"id_a\tid_b\tjaccard\n")
        step = 1_000_000
        for s in range(0, len(a), step):
            f.write(
                "".join(
                    f"{ids[x]}\t{ids[y]}\t{j:.6f}\n"
                    for x, y, j in zip(
                        a[s : s + step].tolist(),
                        b[s : s + step].tolist(),
                        truth.jaccard[s : s + step].tolist(),
                    )
                ).encode("utf-8")
            )
    os.replace(tmp, truth_path)
    lengths = sorted(len(d.text) for d in docs)
    done: dict[str, object] = {
        "version": VERSION,
        "name": name,
        "documents": len(docs),
        "bytes": sum(len(d.text.encode("utf-8")) for d in docs),
        "median_chars": lengths[len(lengths) // 2] if lengths else 0,
        "max_chars": lengths[-1] if lengths else 0,
        "pairs_50": int(len(truth.keys)),
        "pairs_80": int((truth.jaccard >= 0.8 - 1e-9).sum()),
        "docs_with_earlier_80": int(
            len(set((truth.keys[truth.jaccard >= 0.8 - 1e-9] % max(truth.n, 1)).tolist()))
        ),
        "seconds": round(time.perf_counter() - started, 1),
    }
    marker.write_text(json.dumps(done, indent=1) + "\n", encoding="utf-8")
    return done


def read_corpus(path: Path) -> list[Doc]:
    with open(path, encoding="utf-8") as f:
        return [Doc(d["id"], d["text"], d.get("source", "")) for d in map(json.loads, f)]


CORPORA = ["short", "long", "code", "chinese", "dups", "edits"]


def build(
    out: Path = DEFAULT_OUT,
    only: Iterable[str] | None = None,
    seed: int = 0,
    builders: dict[str, Callable[[], list[Doc]]] | None = None,
    log: Callable[[str], None] = print,
    copies: tuple[int, ...] = (1_000, 2_000, 4_000),
) -> dict[str, dict[str, object]]:
    """Builds the corpora named in ``only`` (all by default) into ``out``. ``dups`` and ``edits``
    are made from ``short`` (and ``long`` and ``code``), read from ``out`` when built there
    before, else built in memory. ``builders`` replaces the sources of short, long, code and
    chinese (the tests build from a temporary folder); ``copies`` are the sizes of dups' groups."""
    names = list(only if only else CORPORA)
    for name in names:
        if name not in CORPORA:
            raise ValueError(f"unknown corpus {name!r}; the suite has {', '.join(CORPORA)}")
    sources: dict[str, Callable[[], list[Doc]]] = {
        "short": build_short,
        "long": build_long,
        "code": build_code,
        "chinese": build_chinese,
    }
    sources.update(builders or {})
    cache: dict[str, list[Doc]] = {}

    def docs_of(name: str) -> list[Doc]:
        if name not in cache:
            built = out / f"{name}.jsonl"
            cache[name] = (
                read_corpus(built)
                if name not in names and (out / f"{name}.done").exists()
                else sources[name]()
            )
        return cache[name]

    sources["dups"] = lambda: build_dups(docs_of("short"), seed=seed, copies=copies)
    sources["edits"] = lambda: build_edits(
        docs_of("short") + docs_of("long") + docs_of("code"), seed=seed
    )
    results = {}
    for name in names:
        started = time.perf_counter()
        docs = docs_of(name)
        if len(docs) < MIN_DOCS:
            log(
                f"{name}: only {len(docs)} documents (fewer than {MIN_DOCS}); "
                f"`python benches/corpora.py build --only {name} --install` installs {', '.join(PACKAGES)}"
            )
        done = write_corpus(docs, out, name)
        results[name] = done
        log(
            f"{name}: {done['documents']:,} documents, {int(done['bytes']) / 1e6:,.1f} MB, "  # type: ignore[call-overload]
            f"{done['pairs_80']:,} pairs at Jaccard >= 0.8 ({done['pairs_50']:,} >= 0.5), "
            f"{time.perf_counter() - started:.1f} s"
        )
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the corpora and their truth")
    b.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder (default {DEFAULT_OUT})")
    b.add_argument(
        "--only", action="append", choices=CORPORA, help="build this corpus only (repeatable)"
    )
    b.add_argument("--seed", type=int, default=0, help="seed of dups and edits")
    b.add_argument(
        "--install", action="store_true", help=f"apt-get install {' '.join(PACKAGES)} first"
    )
    ls = sub.add_parser("list", help="the corpora built in a folder, from their markers")
    ls.add_argument("--out", type=Path, default=DEFAULT_OUT)
    cp = sub.add_parser(
        "copies",
        help="a heavy-duplication corpus at scale: every text of a built short corpus, and "
        "groups of copies (with 10 light edits each) of up to --largest copies, --total in all",
    )
    cp.add_argument("short", type=Path, help="short.jsonl of a built suite")
    cp.add_argument("output", type=Path, help="the JSONL to write (id, text)")
    cp.add_argument("--total", type=int, default=760_000, help="copies in all (default 760,000)")
    cp.add_argument("--largest", type=int, default=4_909, help="the largest group (default 4,909)")
    cp.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    if args.command == "copies":
        if args.output.resolve() == args.short.resolve():
            ap.error(f"{args.output}: the output would replace its input")
        sizes = group_sizes(args.total, args.largest, args.seed)
        short = read_corpus(args.short)
        docs = build_dups(short, seed=args.seed, base=len(short), copies=tuple(sizes), edits=10)
        tmp = args.output.with_name(args.output.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n")
        os.replace(tmp, args.output)
        print(f"{args.output}: {len(docs):,} documents, {len(sizes):,} groups of copies")
        return 0
    if args.command == "list":
        for name in CORPORA:
            marker = args.out / f"{name}.done"
            print(
                f"{name}: {marker.read_text(encoding='utf-8') if marker.exists() else 'not built'}"
            )
        return 0
    if args.install:
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES], check=True
        )
    build(args.out, args.only, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
