"""What the first pass of a dedup keeps of each document: its fingerprint, the content key of
its normalized text (XXH3-128: equal keys mark copies of one text, never compared; two different
texts share one with probability 2^-128) and, when pairs are verified, its word-shingle sketch
(see :mod:`neardup.verify`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["KEY_DTYPE", "Digest", "key_words", "keys_of_words", "no_keys"]

#: A content key: the XXH3-128 of a normalized text, as its low and high 64 bits. Arrays of keys
#: sort, compare and index as one value a row (``np.unique`` takes them as they are).
KEY_DTYPE = np.dtype([("lo", "<u8"), ("hi", "<u8")])


def no_keys(n: int = 0) -> np.ndarray:
    """``n`` zero keys."""
    return np.zeros(n, KEY_DTYPE)


def keys_of_words(words: np.ndarray) -> np.ndarray:
    """Keys from the core's 64-bit words, two a key (low half first)."""
    return np.ascontiguousarray(words, dtype=np.uint64).view(KEY_DTYPE)


def key_words(keys: np.ndarray) -> np.ndarray:
    """Keys as the core takes them: 64-bit words, two a key (low half first)."""
    return np.ascontiguousarray(keys, dtype=KEY_DTYPE).view(np.uint64)


def keys_of_columns(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Keys from their halves (as a DataFrame holds them, in two columns)."""
    keys = no_keys(len(lo))
    keys["lo"], keys["hi"] = lo, hi
    return keys


class Digest(NamedTuple):
    """Fingerprints, content keys and sketches of a run of documents: document d's sketch is
    ``hashes[starts[d]:ends[d]]`` of ``sketches = (starts, ends, hashes)``, None when not made."""

    fingerprints: np.ndarray
    keys: np.ndarray
    sketches: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @staticmethod
    def of(
        fingerprints: np.ndarray, keys: np.ndarray, sketches: tuple[np.ndarray, np.ndarray] | None
    ) -> Digest:
        """From the core's arrays: keys as 64-bit words (two a key), sketches as (offsets,
        hashes)."""
        keys = keys_of_words(keys)
        if sketches is None:
            return Digest(fingerprints, keys, None)
        offsets, hashes = sketches
        return Digest(fingerprints, keys, (offsets[:-1], offsets[1:], hashes))

    def take(self, rows: np.ndarray) -> Digest:
        """The digests of ``rows``, in that order."""
        sketches = None
        if self.sketches is not None:
            starts, ends, hashes = self.sketches
            sketches = (starts[rows], ends[rows], hashes)
        return Digest(self.fingerprints[rows], self.keys[rows], sketches)

    @staticmethod
    def concat(parts: list[Digest]) -> Digest:
        """One run after the other (every part sketched, or none)."""
        fps = np.concatenate([p.fingerprints for p in parts]) if parts else np.zeros(0, np.uint64)
        keys = np.concatenate([p.keys for p in parts]) if parts else no_keys()
        if not parts or any(p.sketches is None for p in parts):
            return Digest(fps, keys, None)
        starts, ends, hashes = [], [], []
        base = 0
        for p in parts:
            assert p.sketches is not None
            s, e, h = p.sketches
            starts.append(s + np.uint64(base))
            ends.append(e + np.uint64(base))
            hashes.append(h)
            base += len(h)
        return Digest(
            fps, keys, (np.concatenate(starts), np.concatenate(ends), np.concatenate(hashes))
        )
