"""``neardup explain``: why two documents are (not) near-duplicates."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import click

from .app import cli
from .options import hasher_options, make_hasher, read_text_file


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
@functools.partial(hasher_options, corpus=False)
def explain(a: str, b: str, files: bool, limit: int, **hasher_flags: Any) -> None:
    """Why two texts match or not: their distance, shared features and the ones that differ."""
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
        return text + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")

    total = sum((ca | cb).values()) or 1
    click.echo(
        f"A {fa:016x}\nB {fb:016x}\ndistance {distance} (bits {', '.join(map(str, bits)) or 'none'})"
    )
    click.echo(
        f"near-duplicates at k >= {distance}; the default k=3 {'matches' if distance <= 3 else 'does not match'}"
    )
    click.echo(f"shared features ({sum(shared.values())} of {total}): {listing(shared) or 'none'}")
    click.echo(f"only in A ({sum(only_a.values())}): {listing(only_a) or 'none'}")
    click.echo(f"only in B ({sum(only_b.values())}): {listing(only_b) or 'none'}")
