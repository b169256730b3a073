"""Deduplication of a corpus: fingerprints, near-duplicate clusters, one document kept per cluster."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .against import from_dedup
from .chunks import CHUNK_SIZE, count_docs, in_chunks
from .dedup_result import DedupResult
from .deprecation import renamed
from .hasher import Simhasher
from .index import DEFAULT_MAX_PAIRS
from .pipeline import (
    SHINGLE,
    VERIFY,
    FirstPass,
    Keep,
    check_candidates,
    check_settings,
    keep_order,
    related_rows,
    stars,
)
from .pipeline import (
    candidates as find_candidates,
)
from .progress import log, progress_bar
from .sources import _documents, check_corpus_arguments
from .validate import integer
from .verify import WHOLE, Sketches

__all__ = ["dedup"]

# What a dedup did goes to the "neardup" logger (neardup/progress.py) at INFO (one record per
# call: documents, removed, seconds, k, threshold, with the same values as attributes of the
# record), and its stages at DEBUG.


def _check_keep(keep: Any) -> None:
    if not (keep in ("first", "longest") or callable(keep)):
        raise ValueError(f'keep must be "first", "longest" or a function, got {keep!r}')


@renamed(column="text_field")
def dedup(
    docs: Any,
    k: int | None = None,
    hasher: Simhasher | None = None,
    keep: Keep = "first",
    *,
    threshold: float | None | object = VERIFY,
    shingle: int | None = None,
    text_field: str | None = None,
    id_field: str | None = None,
    threads: int | None = None,
    progress: bool = False,
    against: Any = None,
    update: bool = False,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    candidates: str | None = None,
) -> DedupResult:
    """Finds the near-duplicates of a corpus and keeps one document of each cluster.

    Two documents are near-duplicates when the sets of their word ``shingle``-grams have
    Jaccard similarity of at least ``threshold`` (0.8 by default): every such pair is found, the
    candidates being the documents that share one of the rarest shingles of their sketches
    (``candidates="prefix"``; with ``candidates="fingerprint"``, those whose fingerprints are
    within Hamming distance ``k``, and without verification near-duplicates are those
    fingerprints alone). Documents with the same
    normalized text are copies, found by a hash and never compared. Documents are taken in
    ``keep`` order: the first not yet removed is kept, and removes its own near-duplicates, so
    every removed document is a near-duplicate of the document kept in its place.

    Args:
        docs: a list or any iterable of strings or dicts (the text in ``text_field``, default
            ``"text"``; with ``hasher.fields`` set, dicts go to the hasher whole), a pandas
            Series or DataFrame, a polars DataFrame, a pyarrow Table or a Hugging Face
            ``datasets.Dataset`` (the text in the ``text_field`` column, default ``"text"``; a
            Dataset is read in Arrow batches).
        k: the candidate radius of fingerprint candidates, 0 to 16 (default 8; 3 with
            ``threshold=None``).
        hasher: the fingerprint settings (default: ``Simhasher()``).
        keep: which document is kept: ``"first"``, ``"longest"`` (ties to the first), or a
            function called on each document that has a copy or a candidate, whose highest
            result is kept first (ties to the first), such as ``lambda doc: doc["stars"]``.
            With a function, a one-shot iterator of documents is held in a list.
        threshold: the least Jaccard similarity of the word-shingle sets of a near-duplicate
            pair, in (0, 1]: exact below 1,024 shingles, a bottom-1024 estimate above, and
            exact again for a pair whose estimate lies within 0.0625 of the threshold (its
            documents read again; see docs/evidence.md). ``None`` takes every pair within ``k``
            on its fingerprints alone: faster, less precise.
        shingle: words per shingle for ``threshold`` (default 3; with ``against``, the
            index's, and another is a ValueError).
        text_field: the field (of dicts) or column (of tables) holding the text; ``column=``
            is its old name, deprecated.
        id_field: the field (of dicts) or column (of tables) holding the id. By default, as
            on the command line: the ``id`` field when the first document has one, the ``id``
            column of a table that has one; otherwise row numbers (a pandas frame's index).
        threads: worker threads (default: every core).
        progress: show a progress bar of the documents read (tqdm's, notebook-aware, when tqdm
            is installed; nothing otherwise).
        against: a :class:`neardup.DedupIndex` (or its path): remove from ``docs`` the
            near-duplicates of its documents and of earlier ``docs``, and return a
            :class:`neardup.against.AgainstResult` naming what each removed one duplicates.
        update: with ``against``, append the kept documents to the index file (atomically).
        max_pairs: the most candidate pairs (pairs of distinct fingerprints within ``k``):
            more raise :class:`neardup.TooManyPairsError` naming their number, before they are
            stored. None lifts the limit. ``stats["candidate_pairs"]`` is their number. With
            ``against``, it bounds the index search as :meth:`neardup.DedupIndex.search` says.
        candidates: how verified pairs are proposed: ``"prefix"`` (the default), documents
            sharing one of the rarest word shingles of their sketches (every pair at
            ``threshold``, whatever ``k``; ``stats["prefix_pairs"]`` counts them), or
            ``"fingerprint"``, fingerprints within ``k``. Without verification, fingerprints
            always propose. With ``against``, left out it is the index's (``"prefix"`` for an
            index built with prefix postings, the default of :meth:`neardup.DedupIndex.build`);
            ``"prefix"`` against an index without postings is a ValueError. In prefix mode
            ``max_pairs`` bounds the pairs compared, which ``stats["candidate_pairs"]`` counts.

    What each call did is logged at INFO to the ``logging`` logger ``"neardup"``, and its
    stages at DEBUG.

    Returns:
        a :class:`DedupResult`.

    Example:
        >>> result = dedup(["a cat sat on the mat", "A cat sat on the mat!", "dogs bark"])
        >>> result.keep.tolist(), result.kept_row.tolist(), result.jaccard.tolist()
        ([True, False, True], [0, 0, 2], [1.0, 1.0, 1.0])
    """
    if against is not None:
        return from_dedup(
            docs,
            against,
            update,
            k=k,
            hasher=hasher,
            keep=keep,
            threshold=threshold,
            shingle=shingle,  # type: ignore[return-value]
            text_field=text_field,
            id_field=id_field,
            threads=threads,
            max_pairs=max_pairs,
            progress=progress,
            candidates=candidates,
        )
    k, threshold, shingle = check_settings(k, threshold, SHINGLE if shingle is None else shingle)
    max_pairs = None if max_pairs is None else integer(max_pairs, "max_pairs", minimum=0)
    _check_keep(keep)
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {type(progress).__name__}")
    hasher, threads = check_corpus_arguments(docs, hasher, threads)
    start = time.perf_counter()
    texts, ids, doc_at = _documents(docs, text_field, id_field, hasher, keep)
    use_prefixes = check_candidates(candidates) == "prefix" and threshold is not None
    first = FirstPass(
        hasher,
        shingle if threshold is not None else None,
        threads,
        budget=None,
        prefixes=threshold if use_prefixes else None,  # type: ignore[arg-type]
    )
    bar = progress_bar(count_docs(docs), "neardup dedup") if progress else None
    try:
        for at, chunk in in_chunks(texts, CHUNK_SIZE, "docs"):
            first.digest(chunk, at)
            if bar is not None:
                bar.update(len(chunk))
        first.finish()
        fps, keys = first.fingerprints, first.keys
        n = len(fps)
        # The steps of neardup.stages.LOCAL, each timed as seconds_<step>.
        timed = {"seconds_digest": time.perf_counter() - start}
        log.debug(
            "dedup: digest of %d documents (%d bytes) in %.3f s",
            n,
            texts.nbytes,
            timed["seconds_digest"],
        )
        if bar is not None:
            bar.set_postfix_str("clustering", refresh=True)
        lengths = np.asarray(texts.lengths, dtype=np.int64)
        stage = time.perf_counter()
        found = find_candidates(
            fps, keys, k, threads, first.short, threshold, max_pairs, first.prefixes
        )
        order = keep_order(keep, n, lengths, doc_at, lambda: related_rows(fps, keys, found))
        timed["seconds_candidates"] = time.perf_counter() - stage
        log.debug(
            "dedup: candidates (%s) and the keep order in %.3f s",
            "prefixes" if use_prefixes else f"fingerprints within k={k}",
            timed["seconds_candidates"],
        )
        stage = time.perf_counter()
        evidence: dict[str, Any] = {}
        whole = (
            _whole_sketches(doc_at, text_field, hasher, shingle, threads)
            if doc_at is not None and threshold is not None
            else None
        )
        kept, jaccard = stars(found, order, threshold, first.sketches, None, whole, evidence)  # type: ignore[arg-type]
        timed["seconds_stars"] = time.perf_counter() - stage
        log.debug(
            "dedup: stars, verified as they are taken (%s) in %.3f s",
            "fingerprints only" if threshold is None else f"Jaccard >= {threshold:g}",
            timed["seconds_stars"],
        )
        if bar is not None:
            bar.set_postfix_str("done", refresh=True)
    finally:
        if bar is not None:
            bar.close()
    if ids is None and texts.ids is not None:
        ids = (
            np.asarray(texts.ids, dtype=object)
            if not all(isinstance(v, int) for v in texts.ids)
            else np.asarray(texts.ids)
        )
    seconds = time.perf_counter() - start
    stats = {
        "documents": n,
        # Prefix candidates: the pairs compared (what max_pairs bounds then).
        "candidate_pairs": evidence["pairs_compared"] if use_prefixes else found.pair_count,
        "bytes": texts.nbytes,
        "seconds": seconds,
        "mb_per_s": texts.nbytes / seconds / 1e6 if seconds > 0 else 0.0,
        **timed,
        **evidence,
    }
    result = DedupResult(
        fps,
        kept,
        jaccard,
        k,
        stats,
        ids,
        threshold,  # type: ignore[arg-type]
        "prefix" if use_prefixes else "fingerprint",
    )
    if type(docs).__module__.startswith("pandas") and hasattr(docs, "index"):
        result._index = docs.index  # to_pandas() keeps it, so the result joins back on the input
    log.info(
        "dedup: %d document%s, %d removed (%d cluster%s) in %.3f s, %s, threshold=%s",
        n,
        "" if n == 1 else "s",
        result.n_removed,
        result.n_clusters,
        "" if result.n_clusters == 1 else "s",
        seconds,
        "prefix candidates" if use_prefixes else f"k={k}",
        threshold,
        extra={
            "documents": n,
            "removed": result.n_removed,
            "seconds": seconds,
            "k": k,
            "candidates": result.candidates,
            "threshold": threshold,
        },
    )
    return result


def _whole_sketches(
    doc_at: Callable[[int], Any],
    text_field: str | None,
    hasher: Simhasher,
    shingle: int,
    threads: int | None,
) -> Callable[[np.ndarray], Sketches]:
    """Whole shingle sets of given rows, their documents read again (``doc_at``): for the pairs
    whose bottom-k estimate lies near the threshold."""

    def text_of(doc: Any) -> Any:
        if isinstance(doc, Mapping) and hasher.fields is None:
            return doc[text_field or "text"]
        return doc

    def whole(rows: np.ndarray) -> Sketches:
        sketches = Sketches(hasher, shingle, size=WHOLE, threads=threads)
        sketches.add(rows, [text_of(doc_at(int(r))) for r in rows])
        return sketches

    return whole
