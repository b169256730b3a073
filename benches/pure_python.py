"""The default neardup fingerprint in plain Python: the baseline the benchmarks compare against.

Same algorithm as ``Simhasher()`` on text of letters and digits (NFKC, case folding, word tokens,
FNV-1a 64 finished by fmix64, 64 signed tallies), written the way a careful pure-Python library would write it.
"""

from __future__ import annotations

import re
import unicodedata

OFFSET = 0xCBF29CE484222325
PRIME = 0x100000001B3
MASK = (1 << 64) - 1
TOKEN = re.compile(r"[^\W_]+")


def fnv1a_64(data: bytes) -> int:
    h = OFFSET
    for byte in data:
        h = ((h ^ byte) * PRIME) & MASK
    return h


def fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return h ^ (h >> 33)


def fingerprint(text: str) -> int:
    text = unicodedata.normalize("NFKC", text).casefold()
    tallies = [0] * 64
    for token in TOKEN.findall(text):
        h = fmix64(fnv1a_64(token.encode("utf-8")))
        for i in range(64):
            tallies[i] += 1 if (h >> i) & 1 else -1
    fp = 0
    for i, t in enumerate(tallies):
        if t > 0:
            fp |= 1 << i
    return fp
