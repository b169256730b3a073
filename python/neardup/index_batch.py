"""Documents as a dedup index compares them (:class:`Batch`): what a first pass digests new
documents into before they are searched against an index or added to it."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .digest import key_words
from .index_lists import Lists

__all__ = ["Batch", "take_sets"]


def take_sets(
    sets: tuple[np.ndarray, np.ndarray], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The exact sets ``(lengths, values)`` of ``rows``, in that order (lists of uint32 values,
    gathered as :meth:`Lists.take` gathers them)."""
    lens, values = sets
    got = Lists(lens, values, lens).take(rows)
    return got.lengths, got.hashes


class Batch(NamedTuple):
    """Documents as the dedup index compares them: fingerprints, content keys, compact
    sketches (``lens``, ``words``: ``sketch_bytes / 4`` words a document), for an index with
    prefix postings their prefix lists (:class:`neardup.index_lists.Lists`) and, for an exact
    index, their exact sets ``(lengths, values)``."""

    fingerprints: np.ndarray
    keys: np.ndarray
    lens: np.ndarray
    words: np.ndarray
    lists: Lists | None = None
    sets: tuple[np.ndarray, np.ndarray] | None = None

    @staticmethod
    def of(first: Any, n: int) -> Batch:
        """From a :class:`neardup.pipeline.FirstPass` whose sketches are IndexSketches."""
        lens, words = first.sketches.arrays(n)
        return Batch(
            first.fingerprints,
            first.keys,
            lens,
            words,
            first.sketches.lists(n),
            first.sketches.sets(n),
        )

    def for_core(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arrays as the core takes them (keys as 64-bit words, two a key)."""
        return self.fingerprints, key_words(self.keys), self.lens, self.words

    def take(self, rows: np.ndarray) -> Batch:
        w = len(self.words) // max(len(self.lens), 1)
        words = self.words.reshape(-1, w)[rows].reshape(-1) if w else self.words[:0]
        return Batch(
            np.ascontiguousarray(self.fingerprints[rows]),
            np.ascontiguousarray(self.keys[rows]),
            np.ascontiguousarray(self.lens[rows]),
            np.ascontiguousarray(words),
            self.lists.take(rows) if self.lists is not None else None,
            take_sets(self.sets, rows) if self.sets is not None else None,
        )

    def lists_for_core(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        return self.lists.for_core() if self.lists is not None else None

    def save_rows(self, inner: Any, tmp: str, rows: np.ndarray, ids: Any) -> None:
        """Writes ``inner`` (a core index) followed by ``rows`` of this batch, with their ``ids``,
        to the new file ``tmp``. Their exact sets go as this batch's with the rows that pick
        them: the core reads them where they lie (perhaps a memory-mapped temporary file), never
        gathered into a copy."""
        kept = self._replace(sets=None).take(rows)
        picked = None if self.sets is None else np.ascontiguousarray(rows, np.uint32)
        inner.save_appended(tmp, *kept.for_core(), ids, kept.lists_for_core(), self.sets, picked)
