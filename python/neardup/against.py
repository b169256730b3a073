"""Deduplicating new documents against a corpus you already have: the dedup index.

A :class:`DedupIndex` file holds, per document of the corpus, its id (an integer or a string,
kept exactly), its fingerprint, the content key of its normalized text and a compact sketch of its
word shingles: ``sketch_bytes`` (64 by default) that hold the document's shingle hashes when it
has at most ``sketch_bytes / 4`` of them, else a b-bit similarity sketch of
``8 sketch_bytes / sketch_bits`` bins (512 one-bit bins by default; see ``src/sketch/compact_sketch.rs``).
Building one deduplicates the corpus first (``dedup=True``), so the index holds what a dedup keeps.
:func:`dedup_against` then removes from a new batch every document that is a verified
near-duplicate of an index document or of an earlier document of the batch, as a verified dedup
of the corpus followed by the batch would (keep order "first"), and names the document each one
duplicates and their Jaccard. With ``update=True`` the kept documents are appended to the file,
which is replaced atomically.

Every Jaccard in this mode is exact: an index keeps each document's exact set (its shingle hashes
cut to 32 bits, 4 bytes a distinct shingle), and deduplicating B against the index of A gives
B what :func:`neardup.dedup` of A + B gives it. An index built with ``exact=False`` keeps only
the compact sketches: exact between two documents of at most ``sketch_bytes / 4`` shingles,
otherwise the b-bit estimate, unbiased with a standard error of ``sqrt(P (1 - P) / m) / (1 -
2^-b)`` for m bins and ``P = J + (1 - J) 2^-b`` (0.026 at J = 0.8 by default); its documents take
36 + ``sketch_bytes`` bytes with an integer id (100 by default: 1 GB for 10M documents).
docs/against.md gives the measured figures of both.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import dedup_index
from .dedup_index import (  # noqa: F401 (the index's names, also reachable from here)
    DEFAULT_SKETCH_BITS,
    DEFAULT_SKETCH_BYTES,
    AgainstResult,
    Batch,
    DedupIndex,
    Matches,
    _digest_docs,
    _settings_bytes,
)
from .hasher import Simhasher
from .index import DEFAULT_MAX_PAIRS
from .paths import locked
from .sources import check_corpus_arguments

__all__ = ["dedup_against"]
__all__ += dedup_index.__all__


def dedup_against(
    docs: Any,
    index: DedupIndex,
    *,
    hasher: Simhasher | None = None,
    k: int | None = None,
    threshold: float | None = None,
    shingle: int | None = None,
    ids: Iterable[Any] | None = None,
    text_field: str | None = None,
    id_field: str | None = None,
    update: bool = False,
    threads: int | None = None,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    progress: bool = False,
    candidates: str | None = None,
) -> AgainstResult:
    """Removes from ``docs`` the verified near-duplicates of the index's documents and of earlier
    documents of ``docs``; see the module. ``k`` and ``threshold`` default to the index's; the
    hasher and shingle are the index's (others are a ValueError). With ``update``, the kept
    documents are appended to the index file (atomically), with their ids, under the file's lock
    (the one ``neardup dedup --against --update`` takes; the file is read again if another writer
    replaced it). A search past the work limit, or finding more than ``max_pairs`` candidate
    pairs, raises TooManyPairsError unless ``max_pairs=None`` (see :meth:`DedupIndex.search`).
    ``progress`` shows a bar of the documents digested, as :func:`neardup.dedup` does.
    ``candidates`` defaults to the index's (``"prefix"`` for an index built with prefix
    postings, the default; see :meth:`DedupIndex.build`); ``"fingerprint"`` searches any index
    by fingerprint."""
    if not isinstance(index, DedupIndex):
        raise TypeError(f"against must be a neardup.DedupIndex, got {type(index).__name__}")
    if hasher is not None and hasher != index.hasher:
        raise ValueError(
            f"the index was built with {index.hasher!r}; its documents cannot be compared with {hasher!r}"
        )
    if shingle is not None and shingle != index.shingle:
        raise ValueError(
            f"the index holds sketches of {index.shingle}-word shingles, not {shingle}"
        )
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {type(progress).__name__}")
    hasher, threads = check_corpus_arguments(docs, index.hasher, threads)
    candidates = index._candidates(candidates, threshold)
    with contextlib.ExitStack() as held:
        if update and len(index) == 0:
            # The first documents of an index set its order: listed in it under the lock, so
            # that no other writer's documents come first.
            held.enter_context(locked(index.path))
            index._reopen_if_replaced()
        return _against(
            docs,
            index,
            hasher,
            k,
            threshold,
            ids,
            text_field,
            id_field,
            update,
            threads,
            max_pairs,
            progress,
            candidates,
            locked_already=bool(held._exit_callbacks),  # type: ignore[attr-defined]
        )


def _against(
    docs: Any,
    index: DedupIndex,
    hasher: Simhasher,
    k: int | None,
    threshold: float | None,
    ids: Iterable[Any] | None,
    text_field: str | None,
    id_field: str | None,
    update: bool,
    threads: int | None,
    max_pairs: int | None,
    progress: bool,
    candidates: str,
    locked_already: bool,
) -> AgainstResult:
    """:func:`dedup_against` once its arguments are checked."""
    sketches = index.sketches(threads)
    got, found_ids = _digest_docs(
        docs,
        hasher,
        index.shingle,
        index.sketch_bytes,
        index.sketch_bits,
        text_field,
        id_field,
        threads,
        progress,
        sketches=sketches,
    )
    n = len(got.fingerprints)
    given = ids if ids is not None else found_ids
    values = (
        (given.tolist() if hasattr(given, "tolist") else list(given))
        if given is not None
        else list(range(n))
    )
    if len(values) != n:
        raise ValueError(f"{n} documents but {len(values)} ids")
    search: dict[str, Any] = {
        "k": k,
        "threshold": threshold,
        "threads": threads,
        "max_pairs": max_pairs,
    }
    if not update:
        listed = index._listing(sketches)
        return listed.search(got, candidates=candidates, **search).result(listed, values)
    # The lock every writer of the file takes (``neardup dedup --against --update`` too), held
    # from the search to the rename, against the file as it is once the lock is held.
    with contextlib.nullcontext() if locked_already else locked(index.path):
        index._reopen_if_replaced()
        listed = index._listing(sketches)
        result = listed.search(got, candidates=candidates, **search).result(listed, values)
        listed._append(got, values, np.flatnonzero(result.keep))
        index._reopen_if_replaced()
    return result


def from_dedup(
    docs: Any,
    against: Any,
    update: bool,
    *,
    k: int | None,
    hasher: Simhasher | None,
    keep: Any,
    threshold: Any,
    shingle: int | None,
    text_field: str | None,
    id_field: str | None,
    threads: int | None,
    max_pairs: int | None,
    progress: bool,
    candidates: str | None = None,
) -> AgainstResult:
    """``neardup.dedup(docs, against=index)``: the arguments of :func:`neardup.dedup` checked
    for the index mode (keep "first", verified, the index's shingles) and passed on, every one
    of them (``max_pairs`` and ``progress`` too)."""
    from .pipeline import VERIFY

    if keep != "first":
        raise ValueError(
            'deduplicating against an index keeps the index\'s documents first: keep must be "first"'
        )
    if threshold is None:
        raise ValueError(
            "deduplicating against an index verifies every pair by its sketches: threshold cannot be None"
        )
    if not isinstance(update, bool):
        raise TypeError(f"update must be True or False, got {type(update).__name__}")
    if isinstance(against, (str, os.PathLike)):
        against = DedupIndex.open(against)
    return dedup_against(
        docs,
        against,
        hasher=hasher,
        k=k,
        threshold=None if threshold is VERIFY else threshold,
        shingle=shingle,
        text_field=text_field,
        id_field=id_field,
        update=update,
        threads=threads,
        max_pairs=max_pairs,
        progress=progress,
        candidates=candidates,
    )
