"""``neardup pairs``: every near-duplicate pair."""

from __future__ import annotations

import functools
import itertools
import json
import shutil
import textwrap
from typing import Any

import click
import numpy as np

from .. import _core, pipeline
from ..corpus import fingerprint_with_progress, resketcher
from ..index import DEFAULT_MAX_PAIRS, find_all
from ..io import (
    Outputs,
    TableWriter,
)
from ..paths import check_outputs
from ..pipeline import FirstPass, default_k, exact_in_band, first_rows, sketches_of
from ..verify import WHOLE
from .app import cli
from .options import (
    Source,
    _verification,
    checked_k_options,
    hasher_options,
    input_options,
    make_hasher,
    run_options,
)
from .output import _count, _errors_text, _jaccard_note, _table_name, _TooManyPairs


def _find_all_within(
    fps: np.ndarray, k: int, max_pairs: int, threads: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """find_all, refusing more than --max-pairs pairs (0: no limit) before they are allocated."""
    try:
        return find_all(fps, k, threads=threads, max_pairs=max_pairs or None)
    except _core.TooManyPairsError as err:
        if "candidate comparisons" in str(err):  # the work limit, not the pair limit
            raise _TooManyPairs(
                f"{err.count:,} candidate comparisons (estimated) for the search at k={k} among "
                f"{len(fps):,} documents, more than the limit of {err.limit:,}; lower --k, or "
                "pass --max-pairs 0 for no limit on pairs or work"
            ) from None
        raise _TooManyPairs(
            f"{'at least ' if getattr(err, 'at_least', False) else ''}"
            f"{err.count:,} pairs within k={k} among {len(fps):,} documents, more than --max-pairs "
            f"{err.limit:,}; raise --max-pairs (0 for no limit) or lower --k"
        ) from None


def _short_pairs(
    first: FirstPass,
    fps: np.ndarray,
    of: np.ndarray,
    k: int,
    threshold: float,
    max_pairs: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The verified pairs of short texts beyond ``k`` (``neardup dedup`` compares short texts
    whatever their fingerprints), one per pair of rows (copies of a text each, ``of`` giving
    each row's first row by content key), as ``(i, j, distance, jaccard)``."""
    assert first.short is not None
    rows, starts, ends, hashes = first.short.parts()
    ok = fps[rows] != 0  # a text without features has no near-duplicates but its copies
    try:
        a, b, jac = _core.short_text_pairs(
            rows[ok], starts[ok], ends[ok], hashes, threshold, max_pairs=max_pairs or None
        )
    except _core.TooManyPairsError as err:
        raise _TooManyPairs(
            f"{err.count:,} candidate pairs of short texts, more than --max-pairs {err.limit:,}; "
            "raise --max-pairs (0 for no limit)"
        ) from None
    d = np.bitwise_count(fps[a] ^ fps[b]).astype(np.uint8)
    far = d > k  # nearer pairs are listed with the others
    a, b, d, jac = a[far], b[far], d[far], jac[far]
    # Every copy of the two texts: the rows whose first row (by content key) is a or b.
    by_first = np.argsort(of, kind="stable")
    firsts = of[by_first]
    lo, hi = np.searchsorted(firsts, a), np.searchsorted(firsts, a, side="right")
    lo_b, hi_b = np.searchsorted(firsts, b), np.searchsorted(firsts, b, side="right")
    if bool(((hi - lo) == 1).all() and ((hi_b - lo_b) == 1).all()):
        return a, b, d, jac
    out = [
        (min(x, y), max(x, y), dist, j)
        for p, (dist, j) in enumerate(zip(d.tolist(), jac.tolist()))
        for x in by_first[lo[p] : hi[p]].tolist()
        for y in by_first[lo_b[p] : hi_b[p]].tolist()
    ]
    i2, j2, d2, jac2 = (list(c) for c in zip(*out))
    return (
        np.asarray(i2, np.int64),
        np.asarray(j2, np.int64),
        np.asarray(d2, np.uint8),
        np.asarray(jac2, np.float64),
    )


@cli.command()
@input_options
@functools.partial(checked_k_options, prefix=False)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write every pair (id_a, id_b, distance, jaccard) to FILE (.csv, .tsv, .jsonl or .parquet).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Pairs to show with a preview (the farthest apart first).",
)
@click.option(
    "--max-pairs",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_PAIRS,
    show_default=True,
    help="The most pairs within --k to collect (counted before they are; 0 for no limit): more is an error, status 2.",
)
@hasher_options
@run_options
def pairs(
    source: Source,
    k: int | None,
    threshold: float,
    no_verify: bool,
    shingle: int,
    output: str | None,
    limit: int,
    max_pairs: int,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    **hasher_flags: Any,
) -> None:
    """The near-duplicate pairs of INPUT within --k: fingerprints within --k bits and word
    shingles with Jaccard >= --threshold (short texts, of at most 16 shingles, whatever their
    fingerprints), with their distance, Jaccard and a short preview of each text. pairs proposes
    by fingerprints only: dedup's default prefix candidates find every pair at --threshold,
    some of them farther apart than --k.

    A Jaccard is exact when both documents have fewer than 1,024 shingles, and whenever it lies
    within 5 standard errors of the threshold (0.0625 at 0.8; the documents are read again);
    else it is a bottom-1024 estimate (docs/evidence.md), as in neardup dedup's --clusters."""
    threshold = _verification(threshold, no_verify)  # type: ignore[assignment]
    k = default_k(k, threshold)
    hasher = make_hasher(**hasher_flags)
    _table_name(output, "--output")
    inp = source.open(hasher, replayable=True)
    check_outputs([inp.path], [("-o", output)])
    with inp, Outputs() as outputs:
        tmp = outputs.reserve(output) if output else None
        first = FirstPass(
            hasher,
            shingle if threshold is not None else None,
            threads,
            budget=pipeline.SKETCH_BUDGET,
        )
        fps, _, _ = fingerprint_with_progress(inp, hasher, threads, quiet or as_json, first=first)
        i, j, d = _find_all_within(fps, k, max_pairs, threads)
        jac = np.full(len(i), np.nan)
        band_pairs = 0
        if threshold is not None:
            of = first_rows(first.keys)  # copies share the sketch of their first row
            sketches = sketches_of(
                lambda: np.unique(np.concatenate([of[i], of[j]])),
                first.sketches,
                resketcher(inp, hasher, shingle, threads, quiet or as_json, first),
            )
            same = first.keys[i] == first.keys[j]  # copies of one text, with or without words
            # A pair whose estimate lies near the threshold: its Jaccard is the exact one, the
            # two documents read again (as neardup dedup decides it).
            jac = np.ones(len(i))
            jac[~same], band = exact_in_band(
                sketches,
                of[i[~same]],
                of[j[~same]],
                sketches.jaccard(of[i[~same]], of[j[~same]]),
                threshold,
                resketcher(inp, hasher, shingle, threads, quiet or as_json, first, size=WHOLE),
            )
            band_pairs = int(band.sum())
            ok = jac >= threshold
            i, j, d, jac = i[ok], j[ok], d[ok], jac[ok]
            si, sj, sd, sjac = _short_pairs(first, fps, of, k, threshold, max_pairs)
            i, j = np.concatenate([i, si]), np.concatenate([j, sj])
            d, jac = np.concatenate([d, sd.astype(d.dtype)]), np.concatenate([jac, sjac])
        else:
            plain = (fps[i] != 0) | (
                first.keys[i] == first.keys[j]
            )  # texts without features: copies only
            i, j, d = i[plain], j[plain], d[plain]
            jac = jac[plain]
        order = np.lexsort((j, i, -d.astype(np.int64)))
        shown = order[:limit]
        preview_rows = set(i[shown].tolist()) | set(j[shown].tolist())
        need = set(np.concatenate([i, j]).tolist()) if (output or as_json) else preview_rows
        ids: dict[int, Any] = {}
        texts: dict[int, str] = {}
        for first_row, chunk_ids, chunk_texts in inp.replay(
            ids=True, texts=preview_rows if not as_json else frozenset()
        ):
            for row, value in enumerate(inp.named_ids(first_row, chunk_ids), first_row):
                if row in need:
                    ids[row] = value
            texts.update(chunk_texts)
        if tmp is not None and output is not None:
            table = TableWriter(tmp, output, ["id_a", "id_b", "distance", "jaccard"])
            table.write(
                {
                    "id_a": [ids[r] for r in i.tolist()],
                    "id_b": [ids[r] for r in j.tolist()],
                    "distance": d,
                    "jaccard": [None if x != x else round(x, 4) for x in jac.tolist()],
                }
            )
            table.close()
        outputs.commit()
    if as_json:
        for n in order.tolist():
            value = float(jac[n])
            click.echo(
                json.dumps(
                    {
                        "id_a": ids[int(i[n])],
                        "id_b": ids[int(j[n])],
                        "distance": int(d[n]),
                        "jaccard": None if value != value else round(value, 4),
                    },
                    ensure_ascii=False,
                )
            )
        return
    if quiet:
        return
    column = max(20, (shutil.get_terminal_size((120, 20)).columns - 7) // 2)
    for n in shown.tolist():
        a, b = int(i[n]), int(j[n])
        value = float(jac[n])
        click.echo(
            f"distance {int(d[n])}{'' if value != value else f', Jaccard {value:.3f}'}: {ids[a]}  ~  {ids[b]}"
        )
        left, right = (
            textwrap.wrap(" ".join(texts.get(row, "").split()), column)[:3] for row in (a, b)
        )
        for x, y in itertools.zip_longest(left, right, fillvalue=""):
            click.echo(f"  {x:<{column}} | {y}")
    more = f" (showing {len(shown):,})" if len(shown) < len(i) else ""
    click.echo(
        f"{_count(len(i), 'pair')} within k={k}{' (short texts at any distance)' if threshold is not None else ''}"
        f"{_jaccard_note(threshold)} among {len(fps):,} documents{more}"
        + (f"; wrote {output}" if output else "")
    )
    if band_pairs:
        click.echo(
            f"{_count(band_pairs, 'pair')} near the threshold decided on the exact Jaccard "
            "(documents read again)"
        )
    for line in _errors_text(inp):
        click.echo(line)
