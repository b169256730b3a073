"""``neardup tune`` for dedup's default, prefix candidates: the documents each threshold removes."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from .. import pipeline
from ..corpus import Progress, fingerprint_with_progress, resketcher
from ..hasher import Simhasher
from ..pipeline import FirstPass
from ..threshold_table import ThresholdRow, as_dict, sample_rows, threshold_rows
from ..verify import WHOLE
from .options import Source
from .output import _count, _errors_text, _evidence_note, _say, _size

#: Characters of each text shown beside a sample pair.
PREVIEW = 90


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= PREVIEW else flat[: PREVIEW - 3] + "...")


def tune_thresholds(
    source: Source,
    hasher: Simhasher,
    thresholds: list[float],
    threshold: float,
    shingle: int,
    max_pairs: int | None,
    threads: int | None,
    as_json: bool,
) -> None:
    """The threshold table of INPUT: for each threshold, the documents dedup removes there, with
    the pairs just above it (removed) and just below it (kept)."""
    start = time.perf_counter()
    ordered = sorted({*thresholds, threshold})
    inp = source.open(hasher, replayable=True)
    with inp:
        first = FirstPass(
            hasher, shingle, threads, budget=pipeline.SKETCH_BUDGET, prefixes=ordered[0]
        )
        first.expect(inp.size)
        fps, _, nbytes = fingerprint_with_progress(inp, hasher, threads, as_json, first=first)
        rows = threshold_rows(
            first,
            ordered,
            threads,
            resketcher(inp, hasher, shingle, threads, as_json, first),
            resketcher(inp, hasher, shingle, threads, as_json, first, size=WHOLE),
            max_pairs,
        )
        wanted = sample_rows(rows)
        ids: dict[int, Any] = {}
        texts: dict[int, str] = {}
        if wanted:
            progress = Progress(inp, f"texts of {len(wanted):,} sample documents", as_json)
            inp.bytes_read = 0
            try:
                for first_row, chunk_ids, chunk_texts in inp.replay(ids=True, texts=wanted):
                    named = inp.named_ids(first_row, chunk_ids)
                    ids.update(
                        (r, named[r - first_row])
                        for r in wanted
                        if first_row <= r < first_row + len(named)
                    )
                    texts.update(chunk_texts)
                    progress.update()
            finally:
                progress.close()
    seconds = time.perf_counter() - start
    n = len(fps)
    if as_json:
        summary = {
            "input": inp.name,
            "candidates": "prefix",
            "documents": n,
            "shingle": shingle,
            "threshold": threshold,
            "rows": [as_dict(row, ids, texts) for row in rows],
            # dedup --json's name for what dedup at the threshold in use left uncompared
            "evidence": {"short_pairs_skipped": _in_use(rows, threshold).short_pairs_skipped},
            "bytes": nbytes,
            "seconds": round(seconds, 4),
            "skipped": len(inp.errors),
            "skipped_files": len(inp.left_out),
            "errors": [str(e) for e in inp.errors],
        }
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    lines = [
        f"{_count(n, 'document')}; prefix candidates (dedup's default): the pairs of documents "
        f"sharing one of their rarest word {shingle}-shingles, removed at Jaccard >= the threshold",
        _table(rows, threshold, n),
        *_samples(rows, ids, texts),
        _advice(rows, threshold, n)
        + _evidence_note({"short_pairs_skipped": _in_use(rows, threshold).short_pairs_skipped}),
        f"{inp.name}: {_size(nbytes)} in {seconds:.2f} s",
    ]
    _say("\n".join(lines + _errors_text(inp)))


def _table(rows: list[ThresholdRow], threshold: float, n: int) -> str:
    header = ("threshold", "removed", "kept", "clusters", "")
    body = [
        (
            f"{row.threshold:g}",
            f"{row.removed:,}",
            f"{n - row.removed:,}",
            f"{row.clusters:,}",
            "<- in use (--threshold)" if row.threshold == threshold else "",
        )
        for row in rows
    ]
    widths = [max(len(h), *(len(line[c]) for line in body)) for c, h in enumerate(header)]
    return "\n".join(
        "  ".join(
            cell.rjust(w) if c < 4 else cell for c, (cell, w) in enumerate(zip(line, widths))
        ).rstrip()
        for line in [header, *body]
    )


def _samples(rows: list[ThresholdRow], ids: dict[int, Any], texts: dict[int, str]) -> list[str]:
    lines = ["pairs just above each threshold (removed) and just below it (kept):"]
    for row in rows:
        if not row.above and not row.below:
            lines.append(f"threshold {row.threshold:g}: no pair on either side")
            continue
        lines.append(f"threshold {row.threshold:g}:")
        for side, pairs in (("removed", row.above), ("kept", row.below)):
            for p in pairs:
                other = "kept:" if side == "removed" else "beside:"
                lines.append(
                    f"  {side:8} J {p.jaccard:.4f}  {ids.get(p.row, p.row)} "
                    f"{_preview(texts.get(p.row, ''))}"
                )
                lines.append(
                    f"  {'':8} {other:8}  {ids.get(p.kept_row, p.kept_row)} "
                    f"{_preview(texts.get(p.kept_row, ''))}"
                )
            if not pairs:
                lines.append(
                    f"  {side:8} none"
                    + (
                        " (the table's lowest threshold)"
                        if side == "kept" and row is rows[0]
                        else ""
                    )
                )
    return lines


def _in_use(rows: list[ThresholdRow], threshold: float) -> ThresholdRow:
    return next(row for row in rows if row.threshold == threshold)


def _advice(rows: list[ThresholdRow], threshold: float, n: int) -> str:
    in_use = _in_use(rows, threshold)
    return (
        f"dedup at --threshold {threshold:g} removes {in_use.removed:,} of {n:,} documents; "
        "`neardup dedup INPUT --threshold T` removes the number in T's row (the same input and "
        "options). Read the pairs around a threshold and choose the lowest whose removals just "
        "above it are still duplicates to you."
    )
