"""What the first pass of a dedup keeps of each document: its fingerprint, the content key of
its normalized text (XXH3-64: equal keys and fingerprints mark copies of one text) and, when
pairs are verified, its word-shingle sketch (see :mod:`neardup.verify`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Digest"]


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
        """From the core's arrays: sketches as (offsets, hashes)."""
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
        keys = np.concatenate([p.keys for p in parts]) if parts else np.zeros(0, np.uint64)
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
