"""Deduplicating new documents against a corpus you already have: the dedup index.

A :class:`DedupIndex` file holds, per document of the corpus, its id (an integer or a string,
kept exactly), its fingerprint, the content key of its normalized text and a bottom-``S`` sketch
of its word shingles (``sketch_size``, 128 by default), with the fingerprint settings. Building
one deduplicates the corpus first (``dedup=True``), so the index holds what a dedup keeps.
:func:`dedup_against` then removes from a new batch every document that is a verified
near-duplicate of an index document or of an earlier document of the batch, as a verified dedup
of the corpus followed by the batch would (keep order "first"), and names the document each one
duplicates and their Jaccard. With ``update=True`` the kept documents are appended to the file,
which is replaced atomically.

Every Jaccard in this mode is that of the bottom-``S`` sketches (the index stores no more): exact
when the two documents have at most ``S`` distinct shingles between them, otherwise the
bottom-k estimate, whose standard error is ``sqrt(J (1 - J) / S)`` (0.035 at J = 0.8 for the
default S = 128, 0.05 for S = 64, 0.1 for S = 16). README "Deduplicating against an index" gives
the measured cost: removal precision 0.997 at S = 128 and 0.77 at S = 16, whose file fits 10M
documents in 1 GB where S = 128 takes about 5.4 GB.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import _core
from .chunks import in_chunks
from .dedup import _documents, check_corpus_arguments
from .digest import Digest
from .hasher import Simhasher
from .pipeline import THRESHOLD, THRESHOLD_K
from .validate import check_k, integer
from .verify import check_threshold

__all__ = ["DEFAULT_SKETCH_SIZE", "DedupIndex", "AgainstResult", "dedup_against"]

#: Hashes per stored sketch: 128, for removals verified at precision >= 0.99 (measured 0.997
#: on texts with many pairs just below the threshold; 0.98 at 64, 0.89 at 32, 0.77 at 16:
#: benches/results/against.md). A document with an integer id takes 8 (fingerprint) + 8 (content
#: key) + 8 (id) + 4 (sketch length) + 4 S (sketch) = 28 + 4 S bytes: 540 at S = 128, so 10M
#: documents take 5.4 GB, above a 1 GB budget; ``sketch_size=16`` (92 bytes, 920 MB for 10M)
#: fits 1 GB at precision 0.77. The Jaccard estimate's standard error is sqrt(J(1 - J)/S):
#: 0.035 at J = 0.8 for S = 128, 0.1 for S = 16.
DEFAULT_SKETCH_SIZE = 128
CHUNK_SIZE = 8192
_FORMAT = "neardup-dedup-index"


def _settings_bytes(hasher: Simhasher) -> bytes:
    """The fingerprint settings as JSON; hashers that cannot be written down are refused."""
    settings = hasher._settings()
    if hasher.weighting == "idf":
        raise ValueError(
            "a dedup index stores its fingerprint settings: idf weights are not supported; use tf or binary"
        )
    if settings.get("tokenizer") is not None and not isinstance(settings["tokenizer"], str):
        raise ValueError(
            "a dedup index stores its fingerprint settings: a custom tokenizer function cannot be stored"
        )
    if settings.get("stopwords") is not None:
        settings["stopwords"] = list(settings["stopwords"])
    return json.dumps({"format": _FORMAT, "hasher": settings}, sort_keys=True).encode()


def _hasher_of(meta: bytes) -> Simhasher:
    try:
        settings = json.loads(meta.decode())["hasher"]
    except (ValueError, KeyError, TypeError) as err:
        raise _core.IndexFormatError(
            f"unreadable fingerprint settings in the dedup index: {err}"
        ) from None
    if settings.get("stopwords") is not None:
        settings["stopwords"] = tuple(settings["stopwords"])
    hasher = Simhasher.__new__(Simhasher)
    hasher.__setstate__({"settings": settings, "idf": None})
    return hasher


def _id_values(ids: Any, n: int) -> tuple[bool, Any]:
    """(string ids?, the ids as the core takes them: an int64 array or a list of UTF-8 bytes)."""
    if ids is None:
        return False, np.arange(n, dtype=np.int64)
    values = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    if len(values) != n:
        raise ValueError(f"{n} documents but {len(values)} ids")
    if all(isinstance(v, str) for v in values) and values:
        return True, [v.encode("utf-8", "surrogatepass") for v in values]
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        try:
            return False, np.asarray(values, dtype=np.int64)
        except OverflowError:
            raise ValueError("integer ids must fit in 64 bits") from None
    kinds = sorted({type(v).__name__ for v in values})
    raise TypeError(f"ids must be all integers or all strings, got {', '.join(kinds)}")


def _digest_docs(
    docs: Any,
    hasher: Simhasher,
    shingle: int,
    size: int,
    text_field: str | None,
    id_field: str | None,
    threads: int | None,
) -> tuple[Digest, Any]:
    """(fingerprints, content keys and bottom-``size`` sketches of every document; their ids or None)."""
    texts, ids, _ = _documents(docs, text_field, id_field, hasher, "first")
    parts = [
        hasher._digest(chunk, at, "docs", threads, (shingle, size))
        for at, chunk in in_chunks(texts, CHUNK_SIZE, "docs")
    ]
    if parts:
        got = Digest.concat(parts)
    else:
        got = Digest(
            np.zeros(0, np.uint64),
            np.zeros(0, np.uint64),
            (np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.uint32)),
        )
    if ids is None and texts.ids is not None:
        ids = texts.ids
    return got, ids


class DedupIndex:
    """A corpus kept on disk for deduplicating new documents against it (see the module).

    Open one with :meth:`open`, make one with :meth:`build`. The file is memory-mapped: opening
    reads only its checksum pass, and several processes share its pages. It is never changed in
    place: :meth:`append` and ``dedup(..., update=True)`` write a new file and rename it over the
    old one, so readers that opened the old file keep it and a crash leaves it whole.
    """

    def __init__(self, inner: Any, path: str) -> None:
        self._inner = inner
        self.path = path
        self.hasher = _hasher_of(bytes(inner.meta))

    @classmethod
    def open(cls, path: str | os.PathLike[str], mmap: bool = True) -> DedupIndex:
        """Opens a dedup index file. IndexFormatError if it is not one (truncated, corrupted,
        foreign or of a newer version)."""
        path = os.fspath(path)
        return cls(_core.DedupIndex.load(path, mmap), path)

    @classmethod
    def build(
        cls,
        docs: Any,
        path: str | os.PathLike[str],
        *,
        hasher: Simhasher | None = None,
        k: int = THRESHOLD_K,
        threshold: float = THRESHOLD,
        shingle: int = 3,
        sketch_size: int = DEFAULT_SKETCH_SIZE,
        ids: Iterable[Any] | None = None,
        text_field: str | None = None,
        id_field: str | None = None,
        dedup: bool = True,
        threads: int | None = None,
    ) -> DedupIndex:
        """Writes the dedup index of a corpus to ``path`` (atomically) and opens it.

        Args:
            docs: the documents, as :func:`neardup.dedup` takes them.
            path: the file to write.
            hasher: the fingerprint settings (default ``Simhasher()``; not idf).
            k, threshold, shingle: the near-duplicate test, stored as the index's defaults.
            sketch_size: hashes per stored sketch, 1 to 1024 (default 128: removals verified at
                precision >= 0.99, 540 bytes a document with integer ids; 16 makes a file of 92
                bytes a document, 920 MB for 10M, at precision 0.77 near the threshold).
            ids: an id per document (all integers or all strings); default ``id_field``'s values,
                the table's id column, or row numbers.
            dedup: deduplicate the corpus first, keeping what ``neardup.dedup`` keeps (with the
                index's sketches); False indexes every document as given.
        """
        hasher, threads = check_corpus_arguments(docs, hasher, threads)
        k = check_k(k)
        threshold = check_threshold(threshold)
        shingle = integer(shingle, "shingle", minimum=1)
        sketch_size = integer(sketch_size, "sketch_size", minimum=1)
        meta = _settings_bytes(hasher)
        got, found_ids = _digest_docs(
            docs, hasher, shingle, sketch_size, text_field, id_field, threads
        )
        n = len(got.fingerprints)
        string_ids, id_values = _id_values(ids if ids is not None else found_ids, n)
        starts, ends, hashes = got.sketches  # type: ignore[misc]
        rows = np.arange(n, dtype=np.int64)
        if dedup and n:
            found = _core.StarCandidates(got.fingerprints, got.keys, k, threads=threads)
            kept, _ = found.stars(rows, threshold, starts, ends, hashes, sketch_size)
            rows = np.flatnonzero(kept == rows)
        path = os.fspath(path)
        _core.DedupIndex.create(
            path,
            sketch_size,
            shingle,
            k,
            threshold,
            string_ids,
            meta,
            np.ascontiguousarray(got.fingerprints[rows]),
            np.ascontiguousarray(got.keys[rows]),
            np.ascontiguousarray(starts[rows]),
            np.ascontiguousarray(ends[rows]),
            hashes,
            [id_values[r] for r in rows.tolist()]
            if string_ids
            else np.ascontiguousarray(id_values[rows]),
        )
        return cls.open(path)

    @property
    def k(self) -> int:
        return int(self._inner.k)

    @property
    def threshold(self) -> float:
        return float(self._inner.threshold)

    @property
    def shingle(self) -> int:
        return int(self._inner.shingle)

    @property
    def sketch_size(self) -> int:
        return int(self._inner.sketch_size)

    @property
    def string_ids(self) -> bool:
        return bool(self._inner.string_ids)

    @property
    def mapped(self) -> bool:
        return bool(self._inner.mapped)

    def __len__(self) -> int:
        return len(self._inner)

    @property
    def fingerprints(self) -> np.ndarray:
        return self._inner.fingerprints()

    def ids_of(self, rows: Iterable[int]) -> list[Any]:
        """The ids of some documents of the index, by position."""
        got = self._inner.ids_of([int(r) for r in rows])
        return [v.decode("utf-8", "surrogatepass") for v in got] if self.string_ids else got

    @property
    def ids(self) -> list[Any]:
        """Every id, in index order."""
        return self.ids_of(range(len(self)))

    def check_file(self) -> None:
        """IndexChangedError if the file was changed in place since it was opened."""
        self._inner.check_file()

    def _append(self, digest: Digest, ids: Any, rows: np.ndarray) -> None:
        """Writes this index plus ``rows`` of a digested batch to the file, atomically, and
        opens the new file."""
        string_ids, values = _id_values(ids, len(digest.fingerprints))
        if string_ids != self.string_ids:
            want = "strings" if self.string_ids else "integers"
            raise TypeError(
                f"this index holds ids that are {want}: the new documents' ids must be {want} too"
            )
        starts, ends, hashes = digest.sketches  # type: ignore[misc]
        self._inner.save_appended(
            self.path,
            np.ascontiguousarray(digest.fingerprints[rows]),
            np.ascontiguousarray(digest.keys[rows]),
            np.ascontiguousarray(starts[rows]),
            np.ascontiguousarray(ends[rows]),
            hashes,
            [values[r] for r in rows.tolist()]
            if string_ids
            else np.ascontiguousarray(values[rows]),
        )
        self._inner = _core.DedupIndex.load(self.path, self.mapped)

    def __repr__(self) -> str:
        return (
            f"<DedupIndex {self.path!r}: {len(self)} documents, k={self.k}, Jaccard >= {self.threshold:g}, "
            f"{self.shingle}-word shingles, sketches of {self.sketch_size}>"
        )


class AgainstResult:
    """What :func:`dedup_against` found, per new document in input order.

    Attributes:
        ids: the new documents' ids (row numbers if none were given).
        keep: True for the documents kept.
        duplicate_of: for a removed document, the id of the document it duplicates (in the
            index, or an earlier new document); None for a kept one.
        in_index: True when that document is in the index.
        jaccard: their Jaccard (1.0 for copies and kept documents), from the sketches.
    """

    def __init__(
        self,
        ids: list[Any],
        keep: np.ndarray,
        duplicate_of: list[Any],
        in_index: np.ndarray,
        jaccard: np.ndarray,
    ) -> None:
        self.ids, self.keep, self.duplicate_of, self.in_index, self.jaccard = (
            ids,
            keep,
            duplicate_of,
            in_index,
            jaccard,
        )

    @property
    def n_documents(self) -> int:
        return len(self.keep)

    @property
    def n_removed(self) -> int:
        return int((~self.keep).sum())

    @property
    def n_kept(self) -> int:
        return int(self.keep.sum())

    def removed(self) -> list[dict[str, Any]]:
        """One dict per removed document: ``id``, ``duplicate_of``, ``in_index``, ``jaccard``."""
        return [
            {
                "id": self.ids[r],
                "duplicate_of": self.duplicate_of[r],
                "in_index": bool(self.in_index[r]),
                "jaccard": float(self.jaccard[r]),
            }
            for r in np.flatnonzero(~self.keep).tolist()
        ]

    def __len__(self) -> int:
        return self.n_documents

    def __repr__(self) -> str:
        return (
            f"<AgainstResult: {self.n_documents} documents, {self.n_removed} removed "
            f"({int(self.in_index.sum())} for documents of the index)>"
        )


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
) -> AgainstResult:
    """Removes from ``docs`` the verified near-duplicates of the index's documents and of earlier
    documents of ``docs``; see the module. ``k`` and ``threshold`` default to the index's; the
    hasher and shingle are the index's (others are a ValueError). With ``update``, the kept
    documents are appended to the index file (atomically), with their ids."""
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
    hasher, threads = check_corpus_arguments(docs, index.hasher, threads)
    k = index.k if k is None else check_k(k)
    threshold = index.threshold if threshold is None else check_threshold(threshold)
    got, found_ids = _digest_docs(
        docs, hasher, index.shingle, index.sketch_size, text_field, id_field, threads
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
    starts, ends, hashes = got.sketches  # type: ignore[misc]
    kept, index_row, jaccard = index._inner.dedup(
        got.fingerprints, got.keys, starts, ends, hashes, k, threshold, threads
    )
    rows = np.arange(n, dtype=np.int64)
    keep = kept == rows
    in_index = index_row >= 0
    from_index = dict(
        zip(
            np.unique(index_row[in_index]).tolist(),
            index.ids_of(np.unique(index_row[in_index]).tolist()),
        )
    )
    duplicate_of: list[Any] = [
        None if keep[r] else from_index[int(index_row[r])] if in_index[r] else values[int(kept[r])]
        for r in range(n)
    ]
    result = AgainstResult(values, keep, duplicate_of, in_index, jaccard)
    if update:
        index._append(got, values, np.flatnonzero(keep))
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
    shingle: int,
    text_field: str | None,
    id_field: str | None,
    threads: int | None,
) -> AgainstResult:
    """``neardup.dedup(docs, against=index)``: the arguments of :func:`neardup.dedup` checked
    for the index mode (keep "first", verified, the index's shingles) and passed on."""
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
        shingle=None if shingle == 3 else shingle,
        text_field=text_field,
        id_field=id_field,
        update=update,
        threads=threads,
    )
