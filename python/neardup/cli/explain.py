"""``neardup explain``: why two documents are (not) near-duplicates."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import click

from .. import pipeline
from ..dedup import dedup
from ..pair_sample import shingles
from ..tune import _word_hasher
from ..verify import jaccard
from .app import cli
from .options import (
    _verification,
    candidates_option,
    checked_k_options,
    hasher_options,
    make_hasher,
    note_unused_k,
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
    help="Shingles (features with --no-verify) to list in each group.",
)
@checked_k_options
@candidates_option
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
    candidates: str | None,
    **hasher_flags: Any,
) -> None:
    """Why two texts match or not, decided as `neardup dedup` decides with the same
    --candidates, --threshold, --shingle, --k and fingerprint options: the candidates mode and
    threshold in use, their shingle Jaccard, the verdict, the shingles they share (those the
    Jaccard counts) and the ones that differ; their fingerprints and distance, which decide only
    with --candidates fingerprint or --no-verify."""
    threshold_in_force = _verification(threshold, no_verify)
    note_unused_k(k, candidates, threshold_in_force)
    hasher = make_hasher(**hasher_flags)
    if files:
        a, b = read_text_file(a), read_text_file(b)
    fa, fb = hasher.fingerprint(a), hasher.fingerprint(b)
    distance = bin(fa ^ fb).count("1")
    bits = [i for i in range(64) if (fa ^ fb) >> i & 1]
    mode = (
        "fingerprints alone"
        if threshold_in_force is None
        else f"{pipeline.check_candidates(candidates)} candidates"
    )
    k = pipeline.default_k(k, threshold_in_force)
    # The verdict is dedup's own, on the two texts (B removed as A's near-duplicate or not):
    # copies, short texts, the sketches' Jaccard.
    result = dedup(
        [a, b],
        k=k,
        hasher=hasher,
        threshold=threshold_in_force,
        shingle=shingle,
        candidates=None if threshold_in_force is None else candidates,
    )
    removed = not bool(result.keep[1])
    copies = hasher.normalize(a) == hasher.normalize(b)
    within = distance <= k
    if threshold_in_force is None:
        rule = f"fingerprints alone: distance {distance} {'<=' if within else '>'} k={k}"
        shown = ""
    else:
        value = float(result.jaccard[1]) if removed else jaccard(a, b, ngram=shingle, hasher=hasher)
        shown = f"Jaccard {value:.4f}; "
        fingerprints = (
            f"fingerprint candidates, threshold {threshold_in_force:g}, word {shingle}-shingles"
        )
        sign = ">=" if value >= threshold_in_force else "<"
        decision = f"Jaccard {value:.4f} {sign} threshold {threshold_in_force:g}"
        if copies:
            rule = "copies: the same normalized text, removed whatever the candidates"
        elif mode == "prefix candidates":
            rule = (
                f"prefix candidates, threshold {threshold_in_force:g}, word {shingle}-shingles: "
                f"every pair at Jaccard >= {threshold_in_force:g} shares one "
                f"of its rarest shingles and is compared, whatever the fingerprints; {decision}"
            )
        elif within:
            rule = f"{fingerprints}: distance {distance} <= k={k}, compared; {decision}"
        elif removed:
            rule = (
                f"{fingerprints}: distance {distance} "
                f"> k={k}, but short texts (at most {pipeline.SHORT} shingles) are compared "
                f"whatever their distance; {decision}"
            )
        else:
            rule = f"{fingerprints}: distance {distance} > k={k}, not compared ({decision})"
    verdict = (
        "near-duplicates: dedup removes B" if removed else "not near-duplicates: dedup keeps both"
    )
    click.echo(f"{shown}{verdict} ({rule})")
    click.echo(
        f"A {fa:016x}\nB {fb:016x}\ndistance {distance} (bits {', '.join(map(str, bits)) or 'none'})"
        + (
            ""
            if threshold_in_force is None or mode == "fingerprint candidates"
            else "; not used by prefix candidates"
        )
    )

    def listing(counter: Counter[str]) -> str:
        items = counter.most_common()
        text = ", ".join(f"{f!r}" + (f" x{c}" if c > 1 else "") for f, c in items[:limit])
        return text + (f", ... ({len(items) - limit:,} more)" if len(items) > limit else "")

    if threshold_in_force is None:  # the fingerprints' features decide
        ca, cb = Counter(hasher.features(a)), Counter(hasher.features(b))
        what = "features"
    else:  # the shingles the Jaccard counts, each once
        words = _word_hasher(hasher)
        ca, cb = (Counter(list(_in_order(words.features(t), shingle))) for t in (a, b))
        what = f"{shingle}-word shingles"
    shared, only_a, only_b = ca & cb, ca - cb, cb - ca
    total = sum((ca | cb).values())
    click.echo(f"shared {what} ({sum(shared.values())} of {total}): {listing(shared) or 'none'}")
    click.echo(f"only in A ({sum(only_a.values())}): {listing(only_a) or 'none'}")
    click.echo(f"only in B ({sum(only_b.values())}): {listing(only_b) or 'none'}")


def _in_order(tokens: list[str], shingle: int) -> dict[str, None]:
    """The set of word shingles of :func:`neardup.pair_sample.shingles`, in the order of the text."""
    found = shingles(tokens, shingle)
    ordered = (" ".join(tokens[i : i + shingle]) for i in range(max(len(tokens) - shingle + 1, 1)))
    return dict.fromkeys(s for s in ordered if s in found) or dict.fromkeys(found)
