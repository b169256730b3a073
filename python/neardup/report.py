"""The HTML report of a dedup job: one self-contained page about what was removed.

Its main figures are the removals: how many, the distribution of their Jaccard with the document
kept in their place, the cluster sizes and the largest clusters, sample removals across the
Jaccard range beside the kept document (their word-level differences marked), and, with prefix
candidates, the pairs just below the threshold that were kept. Every count is the ``--json``
summary's. With fingerprint candidates or ``--no-verify``, where the Hamming distance decides
which pairs are compared, a secondary section shows the fingerprint distances: up to k + 3 (less
where the fingerprints are so dense that the search further out would cost more than the job's
own), the documents whose nearest neighbour is at each distance, the pairs at each, and sample
pairs beyond k that a larger k would add.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _core
from .errors import TooManyPairsError
from .index import find_all
from .validate import MAX_K
from .verify import jaccard as shingle_jaccard

__all__ = ["ReportData", "prepare", "render"]

SAMPLES_PER_DISTANCE = 3
LARGEST_CLUSTERS = 10
NONE = 255  # nearest-neighbour distance of a document with no neighbour within the report's range
#: The report's search beyond k may cost this many times the search at k (in estimated candidate
#: comparisons), or REACH_FLOOR comparisons (a few seconds) if that is more: at most as much as
#: the job's own search, so a report at most doubles it. (At 4, a dense corpus at k = 13 searched
#: to 14 at 1.7 times the job's comparisons, and the report tripled a 213 s job.)
REACH_COST = 1
REACH_FLOOR = 2_000_000_000


Pair = tuple[int, int, float | None]  # (kept row, removed or other row, Jaccard if known)


@dataclass
class Distances:
    """The fingerprint distances of a corpus, shown when they decide the candidates."""

    reach: int  # distances shown: 0..reach
    nearest: list[int]  # documents whose nearest neighbour is at distance d, d = 0..reach
    no_neighbour: int  # documents with none within reach
    pairs: list[int]  # pairs at distance d
    beyond: dict[int, list[Pair]]  # distance beyond k -> sample pairs a larger k would add


@dataclass
class ReportData:
    """The figures of a report, and the rows whose ids and texts it shows."""

    k: int
    candidates: str  # "prefix", "fingerprint", or "fingerprints alone" (--no-verify)
    threshold: float | None
    jaccards: list[tuple[str, int]]  # (Jaccard range, removals in it)
    samples: list[tuple[str, list[Pair]]]  # (Jaccard range, sample removals in it)
    below: list[Pair]  # pairs just below the threshold that were kept (prefix candidates)
    sizes: list[tuple[int, int]]  # (cluster size, how many clusters)
    largest: list[tuple[int, int, list[int]]]  # (size, kept row, other rows shown)
    distances: Distances | None  # None with prefix candidates, where k decides nothing
    rows: set[int] = field(default_factory=set)


def nearest_distances(
    fps: np.ndarray, reach: int, threads: int | None = None
) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Per document, the distance to its nearest other document (``NONE`` beyond ``reach``);
    and pair counts per distance. Copies are collapsed first, so copies cost nothing."""
    unique, first, inverse, counts = np.unique(
        fps, return_index=True, return_inverse=True, return_counts=True
    )
    inverse = inverse.reshape(-1)
    ui, uj, ud = find_all(unique, reach, threads=threads)
    nearest_u = np.full(len(unique), NONE, dtype=np.uint8)
    np.minimum.at(nearest_u, ui, ud)
    np.minimum.at(nearest_u, uj, ud)
    nearest_u[counts >= 2] = 0
    pairs = np.zeros(reach + 1, dtype=np.int64)
    pairs[0] = int((counts * (counts - 1) // 2).sum())
    np.add.at(pairs, ud.astype(np.int64), counts[ui].astype(np.int64) * counts[uj])
    return nearest_u[inverse], pairs, (unique, first, counts, ui, uj, ud)


def neighbourhood(
    fps: np.ndarray, reach: int, threads: int | None = None
) -> tuple[np.ndarray, np.ndarray, dict[int, list[tuple[int, int]]]]:
    """Per document, the distance to its nearest other document (``NONE`` beyond ``reach``);
    the pairs of documents at each distance; and at each distance up to
    ``SAMPLES_PER_DISTANCE`` sample pairs of rows (the first row of each fingerprint). No pair
    is listed, so memory stays linear in the documents however densely they are packed."""
    unique, first, inverse, counts = np.unique(
        fps, return_index=True, return_inverse=True, return_counts=True
    )
    nearest_u, found, (a, b, d) = _core.neighbourhood(
        unique, counts.astype(np.uint64), reach, SAMPLES_PER_DISTANCE, threads
    )
    nearest_u[counts >= 2] = 0
    pairs = found.astype(np.int64)
    pairs[0] = int((counts * (counts - 1) // 2).sum())
    samples: dict[int, list[tuple[int, int]]] = {}
    for x, y, dist in zip(first[a].tolist(), first[b].tolist(), d.tolist()):
        samples.setdefault(dist, []).append((min(x, y), max(x, y)))
    return nearest_u[inverse.reshape(-1)], pairs, {e: sorted(p) for e, p in samples.items()}


def affordable_reach(fps: np.ndarray, k: int) -> int:
    """How far beyond ``k`` the report looks: up to ``k + 3`` (16 at most), stopping before the
    first distance whose search would cost more than ``REACH_COST`` times the search at ``k``
    (at least ``REACH_FLOOR`` comparisons), so that on densely packed fingerprints the report
    never costs more than the job's search, nor is refused after it."""
    unique = np.unique(fps)
    allowed = max(REACH_FLOOR, REACH_COST * _core.search_cost(unique, k))
    reach = k
    while reach < min(MAX_K, k + 3) and _core.search_cost(unique, reach + 1) <= allowed:
        reach += 1
    return reach


def jaccard_edges(threshold: float) -> list[float]:
    """The edges of the removals' Jaccard ranges: the threshold, the multiples of 0.05 above it,
    and 1 (a last range holds the Jaccards of exactly 1: copies and equal shingle sets)."""
    steps = [round(0.05 * i, 2) for i in range(1, 20)]
    return [threshold, *(x for x in steps if x > threshold), 1.0]


def _jaccard_ranges(
    removed: np.ndarray, jaccard: np.ndarray, threshold: float | None
) -> list[tuple[str, np.ndarray]]:
    """(label, removed rows) of each Jaccard range, from the lowest."""
    values = np.float32(jaccard[removed])
    if threshold is None:
        return [("no Jaccard (fingerprints alone)", removed)]
    edges = jaccard_edges(threshold)
    low = values < np.float32(threshold)  # never, but shown if so
    ranges = [(f"J < {threshold:g}", removed[low])] if low.any() else []
    for a, b in zip(edges, edges[1:]):
        inside = (values >= np.float32(a)) & (values < np.float32(b))
        ranges.append((f"{a:g} \u2264 J < {b:g}", removed[inside]))
    ranges.append(("J = 1 (copies, equal shingle sets)", removed[values >= np.float32(1.0)]))
    return ranges


def prepare(
    fps: np.ndarray,
    result: Any,
    threads: int | None = None,
    seed: int = 0,
    candidates: str = "prefix",
    below: list[Any] | None = None,
) -> ReportData:
    """The report's figures from the fingerprints and the :class:`~neardup.DedupResult` of a
    job whose candidates were ``candidates`` (``"prefix"`` or ``"fingerprint"``); ``below``:
    the pairs just below the threshold that it kept (:class:`neardup.threshold_table.Removal`)."""
    labels, keep, k, threshold = result.cluster, result.keep, result.k, result.threshold
    mode = "fingerprints alone" if threshold is None else candidates
    rng = np.random.default_rng(seed)
    rows: set[int] = set()
    removed = np.flatnonzero(~keep)

    def pair(r: int) -> Pair:
        j = result.jaccard[r]
        return int(result.kept_row[r]), int(r), None if j != j else float(j)

    jaccards, samples = [], []
    for label, at in _jaccard_ranges(removed, result.jaccard, threshold):
        jaccards.append((label, len(at)))
        picked = np.sort(rng.choice(len(at), min(SAMPLES_PER_DISTANCE, len(at)), replace=False))
        samples.append((label, [pair(int(r)) for r in at[picked]]))
    below_pairs: list[Pair] = [(p.kept_row, p.row, None) for p in below or []]
    distances = None if mode == "prefix" else _distances(fps, result, threads)
    sizes_all = np.bincount(labels, minlength=0) if len(labels) else np.zeros(0, np.int64)
    sizes_all = sizes_all[sizes_all > 0]
    size_values, size_counts = np.unique(sizes_all, return_counts=True)

    largest: list[tuple[int, int, list[int]]] = []
    if len(labels):
        label_sizes = np.bincount(labels)
        top = np.argsort(-label_sizes, kind="stable")[:LARGEST_CLUSTERS]
        for label in top:
            size = int(label_sizes[label])
            if size < 2:
                break
            members = np.flatnonzero(labels == label)
            kept = int(result.kept_row[members[0]])
            others = [int(r) for r in members[members != kept][:3]]
            largest.append((size, kept, others))
            rows.add(kept)
            rows.update(others)
    shown = [p for _, some in samples for p in some] + below_pairs
    if distances is not None:
        shown += [p for some in distances.beyond.values() for p in some]
    for a, b, _ in shown:
        rows.update((a, b))
    return ReportData(
        k=k,
        candidates=mode,
        threshold=threshold,
        jaccards=jaccards,
        samples=samples,
        below=below_pairs,
        sizes=[(int(s), int(c)) for s, c in zip(size_values, size_counts)],
        largest=largest,
        distances=distances,
        rows=rows,
    )


def _distances(fps: np.ndarray, result: Any, threads: int | None) -> Distances:
    """The fingerprint distances around the job's k (see :func:`affordable_reach`)."""
    k = result.k
    reach = affordable_reach(fps, k)
    while True:
        try:
            nearest, pairs, beyond = neighbourhood(fps, reach, threads)
            break
        except TooManyPairsError:  # refused before the search, from its estimated work
            if reach == k:
                raise
            reach -= 1
    hist = np.bincount(nearest[nearest != NONE], minlength=reach + 1)[: reach + 1]
    return Distances(
        reach=reach,
        nearest=[int(v) for v in hist],
        no_neighbour=int((nearest == NONE).sum()),
        pairs=[int(v) for v in pairs],
        beyond={
            d: [(a, b, None) for a, b in beyond[d]]
            for d in range(k + 1, reach + 1)
            if beyond.get(d)
        },
    )


_CSS = """
body{font:15px/1.45 system-ui,sans-serif;max-width:1360px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em;overflow-wrap:anywhere} h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f4f4f4;overflow-wrap:anywhere}
#jaccard td:first-child,#largest td+td,#largest th{text-align:left}
table.pairs{width:100%;table-layout:fixed} table.pairs th{text-align:left}
td.text{text-align:left;vertical-align:top;font-size:13px;white-space:pre-wrap;overflow-wrap:anywhere}
td.jaccard{text-align:left;font-weight:600;background:#fafafa}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em} dt{font-weight:600}
del{background:#fdd;text-decoration:line-through} ins{background:#dfd;text-decoration:none}
.chosen{background:#eef6ff} .note{color:#666;font-size:.9em} svg{display:block;margin:.5em 0}
"""


def _bars(values: list[int], labels: list[str], highlight: set[int], title: str) -> str:
    """An inline SVG bar chart (square-root scale, so small bars stay visible)."""
    width, height, pad = 40 * len(values) + 60, 200, 30
    top = max(values) if values and max(values) > 0 else 1
    parts = [
        f'<svg width="{width}" height="{height + 2 * pad}" role="img" aria-label="{html.escape(title)}">'
    ]
    for i, (value, label) in enumerate(zip(values, labels)):
        h = (value / top) ** 0.5 * height if value else 0
        x = 50 + 40 * i
        color = "#3b7dd8" if i in highlight else "#9bb8e0"
        parts.append(
            f'<rect x="{x}" y="{pad + height - h:.1f}" width="30" height="{h:.1f}" fill="{color}"/>'
        )
        parts.append(
            f'<text x="{x + 15}" y="{pad + height + 16}" font-size="11" text-anchor="middle">'
            f"{html.escape(label)}</text>"
        )
        parts.append(
            f'<text x="{x + 15}" y="{pad + height - h - 4:.1f}" font-size="10" text-anchor="middle">{value}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _diff(a: str, b: str, limit: int = 300) -> tuple[str, str]:
    """The two texts with the words only one of them has marked (first ``limit`` words); each
    word keeps the white space after it, so line breaks (code, lists) stay."""
    ta, tb = re.findall(r"\S+\s*", a)[:limit], re.findall(r"\S+\s*", b)[:limit]
    wa, wb = [t.rstrip() for t in ta], [t.rstrip() for t in tb]
    out_a: list[str] = [html.escape(a[: len(a) - len(a.lstrip())])]
    out_b: list[str] = [html.escape(b[: len(b) - len(b.lstrip())])]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        left, right = html.escape("".join(ta[i1:i2])), html.escape("".join(tb[j1:j2]))
        if op == "equal":
            out_a.append(left)
            out_b.append(right)
        else:
            if left:
                out_a.append(f"<del>{left}</del>")
            if right:
                out_b.append(f"<ins>{right}</ins>")
    more_a = " …" if len(re.findall(r"\S+", a)) > limit else ""
    more_b = " …" if len(re.findall(r"\S+", b)) > limit else ""
    return "".join(out_a) + more_a, "".join(out_b) + more_b


def _name(row: int, ids: dict[int, Any]) -> str:
    value = ids.get(row)
    return html.escape(f"#{row}" if value is None else str(value))


def _pairs_table(pairs: list[Pair], ids: dict[int, Any], texts: dict[int, str], kind: str) -> str:
    """A table of pairs: for each, a row naming the two documents and their Jaccard, and a row
    of their two texts with their differences marked."""
    first, second = {"removal": ("kept", "removed"), "below": ("kept", "also kept")}.get(
        kind, ("", "")
    )
    out = [f"<table class='pairs {kind}'>"]
    for a, b, jac in pairs:
        left, right = _diff(texts.get(a, ""), texts.get(b, ""))
        if jac is None:
            jac = shingle_jaccard(texts.get(a, ""), texts.get(b, ""))
        out.append(
            f"<tr><th>{first} {_name(a, ids)}</th><th>{second} {_name(b, ids)}</th></tr>"
            f"<tr><td colspan='2' class='jaccard'>Jaccard {jac:.4f}</td></tr>"
            f"<tr><td class='text'>{left}</td><td class='text'>{right}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _shown_title(title: str) -> str:
    """The input's name as the page names it: its last path part (the whole path is in the
    summary)."""
    name = title.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return name or title


def render(
    data: ReportData,
    summary: dict[str, Any],
    ids: dict[int, Any],
    texts: dict[int, str],
    title: str,
) -> str:
    """The page: summary, removals and their Jaccard, cluster sizes, largest clusters, sample
    removals, pairs just below the threshold, and (fingerprint candidates) the distances."""
    k, threshold, shown = data.k, data.threshold, _shown_title(title)
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>neardup report: {html.escape(shown)}</title><style>{_CSS}</style></head><body>",
        f"<h1>neardup dedup: {html.escape(shown)}</h1>",
    ]
    if data.candidates == "prefix":
        rule = (
            f"Prefix candidates (the default): documents sharing one of the rarest word shingles "
            f"of their sketches are compared, and a document is removed when the Jaccard of its "
            f"word shingles with the document kept in its place is {threshold:g} or above (k plays "
            "no part)."
        )
    elif data.candidates == "fingerprint":
        rule = (
            f"Fingerprint candidates: documents whose fingerprints are within k = {k} bits are "
            f"compared, and a document is removed when the Jaccard of its word shingles with the "
            f"document kept in its place is {threshold:g} or above."
        )
    else:
        rule = (
            f"Fingerprints alone (--no-verify): documents whose fingerprints are within k = {k} "
            "bits are near-duplicates, without comparing their shingles."
        )
    out.append(f"<p id='rule' data-candidates='{data.candidates}'>{html.escape(rule)}</p>")
    out.append("<h2>Summary</h2><dl id='summary'>")
    labels = {
        "input": "input",
        "documents": "documents",
        "removed": "removed",
        "kept": "kept",
        "clusters": "clusters (2+ documents)",
        "candidates": "candidates",
        "threshold": "Jaccard threshold",
        "k": "k (fingerprint radius)",
        "candidate_pairs": "candidate pairs compared",
        "seconds": "seconds",
        "mb_per_s": "MB/s",
        "skipped": "skipped (bad input)",
    }
    for key, label in labels.items():
        if key not in summary or (key == "k" and data.candidates == "prefix"):
            continue
        value = summary[key]
        value = "none (fingerprints alone)" if value is None else value
        text = f"{value:.2f}" if isinstance(value, float) and key != "threshold" else str(value)
        out.append(f"<dt>{label}</dt><dd data-key='{key}'>{html.escape(text)}</dd>")
    out.append("</dl>")

    removed = sum(count for _, count in data.jaccards)
    out.append(f"<h2 id='removals'>Removals: {removed}</h2>")
    out.append(
        "<p>Each removed document, by its Jaccard with the document kept in its place.</p>"
        "<table id='jaccard'><tr><th>Jaccard</th><th>removals</th></tr>"
    )
    for label, count in data.jaccards:
        out.append(f"<tr><td>{html.escape(label)}</td><td>{count}</td></tr>")
    out.append(f"<tr><td>all</td><td>{removed}</td></tr></table>")
    out.append(
        _bars(
            [c for _, c in data.jaccards],
            [
                lb.replace("J = 1 (copies, equal shingle sets)", "1").split(" ")[0]
                for lb, _ in data.jaccards
            ],
            set(),
            "removals by Jaccard",
        )
    )

    out.append("<h2>Cluster sizes</h2>")
    shown_sizes = data.sizes[:30]
    out.append(
        _bars([c for _, c in shown_sizes], [str(s) for s, _ in shown_sizes], set(), "cluster sizes")
    )
    out.append("<table id='sizes'><tr><th>documents in the cluster</th><th>clusters</th></tr>")
    for size, count in data.sizes:
        out.append(f"<tr><td>{size}</td><td>{count}</td></tr>")
    out.append("</table>")
    if data.largest:
        out.append(
            "<h2>Largest clusters</h2><table "
            "id='largest'><tr><th>documents</th><th>kept</th><th>others (first three)</th></tr>"
        )
        for size, kept, others in data.largest:
            names = ", ".join(_name(r, ids) for r in others)
            out.append(f"<tr><td>{size}</td><td>{_name(kept, ids)}</td><td>{names}</td></tr>")
        out.append("</table>")

    out.append("<h2 id='samples'>Sample removals across the Jaccard range</h2>")
    out.append(
        "<p class='note'>Each removed document beside the document kept in its place. Words "
        "only in the kept text are <del>struck out</del>; words only in the removed one are "
        "<ins>marked</ins>.</p>"
    )
    for label, pairs in data.samples:
        out.append(f"<h3>Removals at {html.escape(label)}</h3>")
        out.append(
            _pairs_table(pairs, ids, texts, "removal") if pairs else "<p class='note'>none</p>"
        )
    if data.candidates == "prefix":
        out.append(f"<h2 id='below'>Kept just below the threshold ({threshold:g})</h2>")
        out.append(
            "<p class='note'>Pairs of documents that a somewhat lower threshold would remove "
            "and this one kept, of the highest Jaccards (<code>neardup tune</code> shows them "
            "at every threshold).</p>"
        )
        # Measured on their texts (the run below decided on estimates): a pair at the
        # threshold or above, kept because its partner went elsewhere, is not below it.
        measured: list[Pair] = [
            (a, b, shingle_jaccard(texts.get(a, ""), texts.get(b, ""))) for a, b, _ in data.below
        ]
        below = [p for p in measured if threshold is not None and (p[2] or 0.0) < threshold]
        out.append(
            _pairs_table(below, ids, texts, "below") if below else "<p class='note'>none</p>"
        )
    if data.distances is not None:
        out.append(_distances_section(data.distances, k, ids, texts))

    errors = summary.get("errors") or []
    if errors:
        out.append(f"<h2>Skipped input ({len(errors)})</h2><ul id='errors'>")
        for message in errors[:200]:
            out.append(f"<li>{html.escape(str(message))}</li>")
        if len(errors) > 200:
            out.append(f"<li>… and {len(errors) - 200} more</li>")
        out.append("</ul>")
    out.append("</body></html>\n")
    return "\n".join(out)


def _distances_section(dist: Distances, k: int, ids: dict[int, Any], texts: dict[int, str]) -> str:
    """The fingerprint distances: nearest neighbours and pairs at each distance, and the pairs
    beyond k that a larger k would make candidates."""
    reach = dist.reach
    out = ["<h2 id='fingerprints'>Fingerprint distances</h2>"]
    out.append(
        "<p>For each distance d, the documents whose nearest other document is exactly d bits "
        f"away, and the pairs of documents d bits apart. Pairs within k = {k} (shaded) are the "
        "candidates.</p>"
    )
    if reach < min(MAX_K, k + 3):
        out.append(
            f"<p class='note' id='reach'>Distances beyond {reach} are not searched: these "
            "fingerprints are packed so densely that a search further out would cost more than "
            "the job's own, or pass the work limit of a search.</p>"
        )
    dist_labels = [str(d) for d in range(reach + 1)] + [f">{reach}"]
    out.append(
        _bars(
            dist.nearest + [dist.no_neighbour],
            dist_labels,
            set(range(k + 1)),
            "nearest-neighbour distances",
        )
    )
    docs_with = np.cumsum(dist.nearest).tolist()
    out.append(
        "<table id='distances'><tr><th>distance</th><th>documents whose nearest is at d</th>"
        "<th>documents with a neighbour within d</th><th>pairs at d</th></tr>"
    )
    for d in range(reach + 1):
        cls = " class='chosen'" if d <= k else ""
        out.append(
            f"<tr{cls}><td>{d}</td><td>{dist.nearest[d]}</td><td>{docs_with[d]}</td><td>{dist.pairs[d]}</td></tr>"
        )
    out.append(
        f"<tr><td>&gt;{reach}</td><td>{dist.no_neighbour}</td><td></td><td></td></tr></table>"
    )
    for d, pairs in sorted(dist.beyond.items()):
        out.append(
            f"<h3 id='d{d}'>distance {d}, beyond k: {dist.pairs[d]} pairs a larger k would compare</h3>"
        )
        out.append(_pairs_table(pairs, ids, texts, "beyond"))
    return "".join(out)
