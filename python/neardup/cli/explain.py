"""``neardup explain``: why two documents are (not) near-duplicates."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import click

from .. import pipeline
from ..dedup import dedup
from ..verify import jaccard
from .app import cli
from .options import (
    _verification,
    checked_k_options,
    hasher_options,
    make_hasher,
    read_text_file,
)


@cli.command()
@click.argument("a")
@click.argument("b")
@click.option("--files", is_flag=True, help="A and B are files to read, not texts.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Features to list in each group.",
)
@checked_k_options
@functools.partial(hasher_options, corpus=False)
def explain(
    a: str,
    b: str,
    files: bool,
    limit: int,
    k: int | None,
    threshold: float,
    no_verify: bool,
    shingle: int,
    **hasher_flags: Any,
) -> None:
    """Why two texts match or not, decided as `neardup dedup` decides with the same --k,
    --threshold, --shingle and fingerprint options: their distance, their shingle Jaccard, the
    verdict, the features they share and the ones that differ."""
    threshold_in_force = _verification(threshold, no_verify)
    hasher = make_hasher(**hasher_flags)
    if files:
        a, b = read_text_file(a), read_text_file(b)
    fa, fb = hasher.fingerprint(a), hasher.fingerprint(b)
    distance = bin(fa ^ fb).count("1")
    ca, cb = Counter(hasher.features(a)), Counter(hasher.features(b))
    shared, only_a, only_b = ca & cb, ca - cb, cb - ca
    bits = [i for i in range(64) if (fa ^ fb) >> i & 1]

    def listing(counter: Counter[str]) -> str:
        items = counter.most_common()
        text = ", ".join(f"{f!r}" + (f" x{c}" if c > 1 else "") for f, c in items[:limit])
        return text + (f", ... ({len(items) - limit:,} more)" if len(items) > limit else "")

    total = sum((ca | cb).values()) or 1
    click.echo(
        f"A {fa:016x}\nB {fb:016x}\ndistance {distance} (bits {', '.join(map(str, bits)) or 'none'})"
    )
    k = pipeline.default_k(k, threshold_in_force)
    # The verdict is dedup's own, on the two texts (B removed as A's near-duplicate or not):
    # copies, short texts compared whatever their distance, the sketches' Jaccard.
    result = dedup([a, b], k=k, hasher=hasher, threshold=threshold_in_force, shingle=shingle)
    removed = not bool(result.keep[1])
    if threshold_in_force is None:
        rule = f"fingerprints alone, k={k}"
        shown = ""
    else:
        rule = f"k={k}, Jaccard >= {threshold_in_force:g} of word {shingle}-shingles"
        value = float(result.jaccard[1]) if removed else jaccard(a, b, ngram=shingle, hasher=hasher)
        shown = f"Jaccard {value:.4f}; "
    verdict = (
        "near-duplicates: dedup removes B" if removed else "not near-duplicates: dedup keeps both"
    )
    click.echo(f"{shown}{verdict} ({rule})")
    click.echo(f"shared features ({sum(shared.values())} of {total}): {listing(shared) or 'none'}")
    click.echo(f"only in A ({sum(only_a.values())}): {listing(only_a) or 'none'}")
    click.echo(f"only in B ({sum(only_b.values())}): {listing(only_b) or 'none'}")
