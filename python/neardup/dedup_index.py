"""The dedup index: a corpus on disk that new documents are deduplicated against.

A :class:`DedupIndex` file holds, per document of the corpus, its id (an integer or a string,
kept exactly), its fingerprint, the content key of its normalized text and a compact sketch of its
word shingles, with the fingerprint settings; :meth:`DedupIndex.search` finds, for a batch of new
documents, the verified near-duplicates it holds (:class:`Matches`). Deduplicating a batch against
it (:func:`neardup.against.dedup_against`) and the sketches' sizes and errors are described in
:mod:`neardup.against`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from . import _core
from .chunks import count_docs, in_chunks
from .digest import key_words
from .errors import IndexFormatError
from .hasher import Simhasher
from .index import DEFAULT_MAX_PAIRS, _max_pairs
from .index_kinds import dedup_index_error
from .io.outputs import check_replaceable, write_atomically
from .pipeline import THRESHOLD, THRESHOLD_K, FirstPass
from .progress import progress_bar
from .sources import _documents, check_corpus_arguments
from .validate import check_k, integer
from .verify import check_threshold

__all__ = [
    "DEFAULT_SKETCH_BITS",
    "DEFAULT_SKETCH_BYTES",
    "AgainstResult",
    "Batch",
    "CompactSketches",
    "DedupIndex",
    "Matches",
]

#: Bytes of a document's compact sketch: 64, so a document with an integer id takes 8
#: (fingerprint) + 8 (content key) + 8 (id) + 4 (sketch length) + 64 = 92 bytes, and 10M
#: documents 920 MB. Chosen with DEFAULT_SKETCH_BITS on the synthetic corpus and the corpus
#: suite (benches/results/against.md).
DEFAULT_SKETCH_BYTES = 64
#: Bits per bin of a sketched document: 1 (512 bins in 64 bytes), the most precise of 1, 2, 4
#: and 32 bits at equal size near J = 0.8 (benches/results/against.md).
DEFAULT_SKETCH_BITS = 1
#: A document's whole shingle set is hashed before its compact sketch is made; past this many
#: distinct shingles only the smallest hashes are kept (a bottom-k sample of the set).
WHOLE_SET = 1 << 20
CHUNK_SIZE = 8192
_FORMAT = "neardup-dedup-index"


def _identity(path: str) -> tuple[int, int, int, int] | None:
    """What tells a file from the one that replaced it: device, inode, size, modification time."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


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
    """The fingerprint settings a dedup index holds. The file's checksum is checked before: this
    checks what it holds (a file written by other means may pass the checksum), so that any
    problem is an IndexFormatError, never another exception."""
    try:
        stored = json.loads(meta.decode())
        if not isinstance(stored, dict) or stored.get("format") != _FORMAT:
            raise ValueError("not the settings of a neardup dedup index")
        settings = stored["hasher"]
        if not isinstance(settings, dict):
            raise ValueError("the settings are not a JSON object")
        if settings.get("stopwords") is not None:
            settings["stopwords"] = tuple(settings["stopwords"])
        hasher = Simhasher.__new__(Simhasher)
        hasher.__setstate__({"settings": settings, "idf": None})
        hasher.fingerprint("a check")  # settings that cannot fingerprint are refused here
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as err:
        raise _core.IndexFormatError(
            f"unreadable fingerprint settings in the dedup index: {type(err).__name__}: {err}"
        ) from None
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


class CompactSketches:
    """The compact sketches of a corpus's rows, each made as soon as its chunk's whole shingle
    sets are added (so only a chunk's sets are held at once). It fills the place of
    :class:`neardup.verify.Sketches` in a :class:`neardup.pipeline.FirstPass`."""

    dropped = False
    budget = None

    def __init__(self, shingle: int, sketch_bytes: int, sketch_bits: int, threads: int | None):
        self.ngram, self.size = shingle, WHOLE_SET
        self.words, self.bits, self.threads = sketch_bytes // 4, sketch_bits, threads
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add_sketches(
        self, rows: Any, starts: np.ndarray, ends: np.ndarray, hashes: np.ndarray
    ) -> None:
        """Adds rows ``rows``, row ``rows[d]``'s shingle set being ``hashes[starts[d]:ends[d]]``."""
        lens, words = _core.compact_sketches(
            np.ascontiguousarray(starts, dtype=np.uint64),
            np.ascontiguousarray(ends, dtype=np.uint64),
            np.ascontiguousarray(hashes, dtype=np.uint64),
            self.words,
            self.bits,
            self.threads,
        )
        self._parts.append((np.asarray(rows, dtype=np.int64), lens, words))

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, words) of rows 0..n-1 (a row not added: no shingles)."""
        lens = np.zeros(n, np.uint32)
        words = np.zeros((n, self.words), np.uint32)
        for rows, part_lens, part_words in self._parts:
            lens[rows] = part_lens
            words[rows] = part_words.reshape(-1, self.words)
        return lens, words.reshape(-1)


class Batch(NamedTuple):
    """Documents as the dedup index compares them: fingerprints, content keys and compact
    sketches (``lens``, ``words``: ``sketch_bytes / 4`` words a document)."""

    fingerprints: np.ndarray
    keys: np.ndarray
    lens: np.ndarray
    words: np.ndarray

    @staticmethod
    def of(first: Any, n: int) -> Batch:
        """From a :class:`neardup.pipeline.FirstPass` whose sketches are CompactSketches."""
        lens, words = first.sketches.arrays(n)
        return Batch(first.fingerprints, first.keys, lens, words)

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
        )


def _digest_docs(
    docs: Any,
    hasher: Simhasher,
    shingle: int,
    sketch_bytes: int,
    sketch_bits: int,
    text_field: str | None,
    id_field: str | None,
    threads: int | None,
    progress: bool = False,
) -> tuple[Batch, Any]:
    """(fingerprints, content keys and compact sketches of every document; their ids or None),
    with a progress bar of the documents digested if ``progress``."""
    texts, ids, _ = _documents(docs, text_field, id_field, hasher, "first")
    first = FirstPass(hasher, shingle, threads)
    first.sketches = CompactSketches(shingle, sketch_bytes, sketch_bits, threads)  # type: ignore[assignment]
    bar = progress_bar(count_docs(docs), "neardup dedup against") if progress else None
    try:
        for at, chunk in in_chunks(texts, CHUNK_SIZE, "docs"):
            first.digest(chunk, at)
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    if ids is None and texts.ids is not None:
        ids = texts.ids
    return Batch.of(first, first.rows), ids


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
        self._identity = _identity(path)

    @classmethod
    def open(cls, path: str | os.PathLike[str], mmap: bool = True) -> DedupIndex:
        """Opens a dedup index file. IndexFormatError if it is not one (truncated, corrupted,
        foreign or of a newer version)."""
        path = os.fspath(path)
        try:
            inner = _core.DedupIndex.load(path, mmap)
        except IndexFormatError as err:
            raise dedup_index_error(path, err) from None
        return cls(inner, path)

    def _reopen_if_replaced(self) -> None:
        """Opens the file again if another writer has replaced it since this index opened it."""
        if self.path and _identity(self.path) != self._identity:
            self._inner = _core.DedupIndex.load(self.path, self.mapped)
            self._identity = _identity(self.path)

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
        sketch_bytes: int = DEFAULT_SKETCH_BYTES,
        sketch_bits: int = DEFAULT_SKETCH_BITS,
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
            sketch_bytes: bytes of each document's compact sketch, a multiple of 4 from 4 to 1,024
                (default 64: 92 bytes a document with an integer id, 920 MB for 10M).
            sketch_bits: bits per bin of a sketched document: 1, 2, 4, 8, 16 or 32 (default 1).
            ids: an id per document (all integers or all strings); default ``id_field``'s values,
                the table's id column, or row numbers.
            dedup: deduplicate the corpus first, keeping what ``neardup.dedup(docs,
                against=<an empty index>)`` keeps (the index's Jaccards); False indexes every
                document as given.
        """
        check_replaceable(os.fspath(path))
        hasher, threads = check_corpus_arguments(docs, hasher, threads)
        shingle = integer(shingle, "shingle", minimum=1)
        empty = cls._empty(hasher, k, threshold, shingle, sketch_bytes, sketch_bits, False)
        got, found_ids = _digest_docs(
            docs, hasher, shingle, sketch_bytes, sketch_bits, text_field, id_field, threads
        )
        n = len(got.fingerprints)
        string_ids, id_values = _id_values(ids if ids is not None else found_ids, n)
        rows = np.arange(n, dtype=np.int64)
        if dedup and n:
            rows = np.flatnonzero(empty.search(got, threads=threads).keep)
        path = os.fspath(path)
        inner = _core.DedupIndex.empty(
            sketch_bytes // 4,
            sketch_bits,
            shingle,
            empty.k,
            empty.threshold,
            string_ids,
            empty._meta,
        )
        kept = got.take(rows)
        values = (
            [id_values[r] for r in rows.tolist()]
            if string_ids
            else np.ascontiguousarray(id_values[rows])
        )
        write_atomically(path, lambda tmp: inner.save_appended(tmp, *kept.for_core(), values))
        return cls.open(path)

    @classmethod
    def _empty(
        cls,
        hasher: Simhasher,
        k: int,
        threshold: float,
        shingle: int,
        sketch_bytes: int,
        sketch_bits: int,
        string_ids: bool,
    ) -> DedupIndex:
        """An empty index in memory (not saved) with these settings, checked."""
        k = check_k(k)
        threshold = check_threshold(threshold)
        sketch_bytes = integer(sketch_bytes, "sketch_bytes", minimum=4)
        if sketch_bytes % 4:
            raise ValueError(f"sketch_bytes must be a multiple of 4, got {sketch_bytes}")
        sketch_bits = integer(sketch_bits, "sketch_bits", minimum=1)
        meta = _settings_bytes(hasher)
        inner = _core.DedupIndex.empty(
            sketch_bytes // 4, sketch_bits, shingle, k, threshold, string_ids, meta
        )
        return cls(inner, "")

    @property
    def _meta(self) -> bytes:
        return bytes(self._inner.meta)

    def search(
        self,
        batch: Batch,
        *,
        k: int | None = None,
        threshold: float | None = None,
        threads: int | None = None,
        max_pairs: int | None = DEFAULT_MAX_PAIRS,
    ) -> Matches:
        """Deduplicates digested documents against the index and themselves (the one call into
        the core that every caller makes); ``k`` and ``threshold`` default to the index's.

        Raises TooManyPairsError, before the search starts, when its candidate comparisons
        (estimated from the fingerprints) pass the work limit of :func:`neardup.find_all`, and
        as soon as it finds more than ``max_pairs`` candidate pairs of distinct fingerprints
        (with the index and among the batch; the error names a lower bound of their number);
        ``max_pairs=None`` lifts both, as it does there."""
        k = self.k if k is None else check_k(k)
        threshold = self.threshold if threshold is None else check_threshold(threshold)
        kept, index_row, jaccard = self._inner.dedup(
            *batch.for_core(), k, threshold, threads, _max_pairs(max_pairs)
        )
        return Matches(kept, index_row, jaccard)

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
    def sketch_bytes(self) -> int:
        return 4 * int(self._inner.sketch_words)

    @property
    def sketch_bits(self) -> int:
        return int(self._inner.sketch_bits)

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
        if not self.string_ids:
            return got  # type: ignore[no-any-return]
        try:
            return [v.decode("utf-8", "surrogatepass") for v in got]
        except UnicodeDecodeError as err:
            raise _core.IndexFormatError(
                f"{self.path}: an id of the dedup index is not UTF-8 ({err.reason} at byte "
                f"{err.start}): the file was changed by other means than neardup"
            ) from None

    @property
    def ids(self) -> list[Any]:
        """Every id, in index order."""
        return self.ids_of(range(len(self)))

    def check_file(self) -> None:
        """IndexChangedError if the file was changed in place since it was opened."""
        self._inner.check_file()

    def _append(self, batch: Batch, ids: Any, rows: np.ndarray) -> None:
        """Writes this index plus ``rows`` of a digested batch to the file, atomically, and
        opens the new file. The caller holds the file's lock (:func:`neardup.paths.locked`)."""
        write_atomically(self.path, lambda tmp: self._write_appended(tmp, batch, ids, rows))
        self._inner = _core.DedupIndex.load(self.path, self.mapped)
        self._identity = _identity(self.path)

    def _append_streamed(
        self, n_new: int, id_bytes: int, fill: Callable[[str], Iterable[np.ndarray]]
    ) -> None:
        """Writes this index plus ``n_new`` documents that ``fill(section)`` hands an array at a
        time (see ``_core.DedupIndex.save_streamed``) to the file, atomically, and opens the
        new file. The caller holds the file's lock."""
        write_atomically(
            self.path, lambda tmp: self._inner.save_streamed(tmp, n_new, id_bytes, fill)
        )
        self._inner = _core.DedupIndex.load(self.path, self.mapped)
        self._identity = _identity(self.path)

    def _write_appended(self, tmp: str, batch: Batch, ids: Any, rows: np.ndarray) -> None:
        """Writes this index plus ``rows`` of a digested batch to the new file ``tmp``."""
        string_ids, values = _id_values(ids, len(batch.fingerprints))
        if string_ids != self.string_ids:
            want = "strings" if self.string_ids else "integers"
            raise TypeError(
                f"this index holds ids that are {want}: the new documents' ids must be {want} too"
            )
        kept = batch.take(rows)
        new_ids = (
            [values[r] for r in rows.tolist()] if string_ids else np.ascontiguousarray(values[rows])
        )
        self._inner.save_appended(tmp, *kept.for_core(), new_ids)

    def __repr__(self) -> str:
        return (
            f"<DedupIndex {self.path!r}: {len(self)} documents, k={self.k}, Jaccard >= {self.threshold:g}, "
            f"{self.shingle}-word shingles, sketches of {self.sketch_bytes} bytes, {self.sketch_bits}-bit bins>"
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


class Matches(NamedTuple):
    """What :meth:`DedupIndex.search` found, per digested document: ``kept``, the row of the
    batch kept in its place (itself when kept) or -1 when removed for a document of the index;
    ``index_row``, that document's row in the index or -1; ``jaccard``, their Jaccard (1 for a
    kept document and for copies)."""

    kept: np.ndarray
    index_row: np.ndarray
    jaccard: np.ndarray

    @property
    def keep(self) -> np.ndarray:
        return self.kept == np.arange(len(self.kept))

    @property
    def in_index(self) -> np.ndarray:
        return self.index_row >= 0

    def kept_ids(self, index: DedupIndex, ids: list[Any]) -> list[Any]:
        """Per document, the id of the one it duplicates (in the index, or of ``ids``), or its
        own id when kept."""
        in_index = self.in_index
        rows = np.unique(self.index_row[in_index]).tolist()
        named = dict(zip(rows, index.ids_of(rows)))
        return [
            named[int(i)] if i >= 0 else ids[int(c)]
            for i, c in zip(self.index_row.tolist(), self.kept.tolist())
        ]

    def result(self, index: DedupIndex, ids: list[Any]) -> AgainstResult:
        """The evidence, with the documents' ``ids``."""
        keep = self.keep
        duplicate_of = [None if k else d for k, d in zip(keep, self.kept_ids(index, ids))]
        return AgainstResult(ids, keep, duplicate_of, self.in_index, self.jaccard)
