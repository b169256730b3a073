"""Seed 001's hand-worked example, its rows as printed: the 9-bit hashes of "hello there world",
of each token and of each of its characters, written as arrays, position 0 first."""

from __future__ import annotations

TOKENS = {
    "hello": "0 1 0 1 0 1 0 1 1",
    "there": "0 0 0 1 0 0 1 0 0",
    "world": "1 0 0 1 0 1 0 1 0",
}
CHARS = {
    "h": "1 0 1 1 0 1 0 0 1",
    "e": "0 1 0 1 1 0 0 0 1",
    "l": "1 1 0 1 1 0 1 0 0",
    "o": "1 1 1 0 0 0 0 0 0",
    "t": "1 1 1 0 1 0 1 0 1",
    "w": "0 0 0 0 1 1 1 0 1",
    "d": "0 1 0 0 1 0 0 0 0",
}

#: Each token, then each of its characters, as the seed lists them. It gives "r" two different
#: hashes (under "there" and "world"); each row is taken as it stands.
WITH_CHARACTERS = (
    [TOKENS["hello"]]
    + [CHARS[c] for c in "hello"]
    + [TOKENS["there"]]
    + [CHARS[c] for c in "the"]
    + ["0 0 0 1 1 0 0 0 0", CHARS["e"]]
    + [TOKENS["world"], CHARS["w"], CHARS["o"], "0 0 1 1 0 0 0 1 1", CHARS["l"], CHARS["d"]]
)


def bits(row: str) -> int:
    """A row as an integer: position i is bit i."""
    return sum(1 << i for i, b in enumerate(row.split()) if b == "1")
