"""An independent, slow, pure-Python statement of what neardup computes: the test oracle.

Written from the specification (docs/fingerprint.md, "How a fingerprint is made"), sharing no code with the
package: tokens by Unicode general category, shingles as joined strings, FNV-1a 64 byte by byte
then MurmurHash3's fmix64 finalizer, and 64 tallies summed one bit at a time.
"""

from __future__ import annotations

import math
import unicodedata

OFFSET = 0xCBF29CE484222325
PRIME = 0x100000001B3
MASK = (1 << 64) - 1

OWN_TOKEN_RANGES = [
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x1B000, 0x1B16F),
    (0x20000, 0x3FFFF),
]


def fnv1a_64(data: bytes) -> int:
    h = OFFSET
    for byte in data:
        h ^= byte
        h = (h * PRIME) & MASK
    return h


def fmix64(k: int) -> int:
    """MurmurHash3's fmix64 (Appleby): xor-shift 33, multiply, xor-shift 33, multiply, xor-shift 33."""
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & MASK
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & MASK
    return k ^ (k >> 33)


def checksum(words) -> int:
    """An index file's checksum of its words (all but the last, which holds it): from each word in
    turn, h = (h xor w) * GOLDEN_GAMMA mod 2^64, then h xor (h >> 29), from PI_SEED."""
    h = 0x243F6A8885A308D3  # the first 64 bits of the fraction of pi
    for w in words:
        h = ((h ^ int(w)) * 0x9E3779B97F4A7C15) & MASK  # 2^64 / golden ratio, odd
        h ^= h >> 29
    return h


def feature_hash(data: bytes) -> int:
    """A feature's hash as the fingerprint tallies it."""
    return fmix64(fnv1a_64(data))


def normalize(text: str, unicode_form: str | None = "NFKC", casefold: bool = True) -> str:
    if unicode_form:
        text = unicodedata.normalize(unicode_form, text)
    if casefold:
        text = text.casefold()
    return text


def char_class(c: str) -> str:
    """ "word", "own" (a token by itself) or "sep"."""
    if c < "\x80":
        return "word" if c.isalnum() else "sep"
    if unicodedata.category(c)[0] not in "LNM":
        return "sep"
    code = ord(c)
    if any(lo <= code <= hi for lo, hi in OWN_TOKEN_RANGES):
        return "own"
    return "word"


def tokens(text: str) -> list[str]:
    out: list[str] = []
    current = ""
    for c in text:
        kind = char_class(c)
        if kind == "word":
            current += c
            continue
        if current:
            out.append(current)
            current = ""
        if kind == "own":
            out.append(c)
    if current:
        out.append(current)
    return out


def word_features(text: str, n: int, stopwords: set[str] | None = None) -> list[str]:
    toks = tokens(text)
    if not toks:
        return []
    if len(toks) < n:
        windows = [toks]
    else:
        windows = [toks[i : i + n] for i in range(len(toks) - n + 1)]
    shingles = [" ".join(w) for w in windows]
    if stopwords is not None:
        kept = [s for s, w in zip(shingles, windows) if any(t in stopwords for t in w)]
        if kept:
            return kept
    return shingles


def char_features(text: str, n: int) -> list[str]:
    compact = ""
    pending = False
    for c in text:
        if char_class(c) == "sep":
            pending = bool(compact)
        else:
            if pending:
                compact += " "
                pending = False
            compact += c
    if not compact:
        return []
    if len(compact) <= n:
        return [compact]
    return [compact[i : i + n] for i in range(len(compact) - n + 1)]


def features(
    text: str, tokens_kind: str = "word", ngram: int = 1, stopwords: set[str] | None = None
) -> list[str]:
    if tokens_kind == "word":
        return word_features(text, ngram, stopwords)
    return char_features(text, ngram)


def tallies(hashes: list[int], weights: list[float] | None = None, bits: int = 64) -> list[float]:
    weights = [1] * len(hashes) if weights is None else list(weights)
    out = []
    for i in range(bits):
        t = 0
        for h, w in zip(hashes, weights):
            t += w if (h >> i) & 1 else -w
        out.append(t)
    return out


def simhash(hashes: list[int], weights: list[float] | None = None, bits: int = 64) -> int:
    return sum(1 << i for i, t in enumerate(tallies(hashes, weights, bits)) if t > 0)


def idf_weight(documents: int, df: int) -> float:
    raw = math.log((1 + documents) / (1 + df)) + 1
    return round(raw * 1024) / 1024


def fingerprint(
    text: str,
    tokens_kind: str = "word",
    ngram: int = 1,
    weighting: str = "tf",
    stopwords: set[str] | None = None,
    idf: dict[str, float] | None = None,
    idf_unseen: float = 0.0,
    unicode_form: str | None = "NFKC",
    casefold: bool = True,
) -> int:
    feats = features(normalize(text, unicode_form, casefold), tokens_kind, ngram, stopwords)
    if weighting == "binary":
        feats = list(dict.fromkeys(feats))
    if weighting == "idf":
        assert idf is not None
        weights = [idf.get(f, idf_unseen) for f in feats]
    else:
        weights = None
    return simhash([feature_hash(f.encode("utf-8")) for f in feats], weights)
