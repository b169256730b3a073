"""The first pass over a batch of texts as an Arrow table (:func:`digest_batch`, public in
:mod:`neardup.kernels`): each text's fingerprint, content key, length and shingle sketch, in
one call into the core (:func:`neardup.hasher.digest_many`), and the sketches gathered into
Arrow lists."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from .chunks import refuse_mapping
from .digest import Digest, no_keys
from .hasher import Simhasher, digest_many
from .verify import SKETCH_SIZE, WHOLE

#: The dtype of a sketch's hashes (the core's).
SKETCH_DTYPE = np.dtype(f"uint{_core.SKETCH_HASH_BITS}")


def digest_batch(
    texts: Any,
    hasher: Simhasher | None = None,
    *,
    shingle: int | None = 3,
    size: int = SKETCH_SIZE,
    name: str = "texts",
    whole: bool = False,
) -> Any:
    """The first pass over a batch of texts, as an Arrow table of one row per text:
    ``fingerprint`` (uint64), ``key`` (the content key of the normalized text), ``length``
    (characters) and, with ``shingle`` (None: fingerprints only), ``sketch``: the bottom-``size``
    word-``shingle`` sketch, a list of hashes in ascending order. A copy of a text earlier in
    the batch has an empty sketch (its text's first occurrence holds it).

    With ``whole`` (and ``shingle``), a column ``shingles`` too: the whole shingle set (as
    :func:`shingle_sets` makes it, at most ``WHOLE`` hashes) of each text whose sketch is cut
    (holds ``size`` hashes), empty for the others, whose sketch is their whole set. They come
    from the same pass (a sketch is the first ``size`` hashes of the whole set): the pairs of
    :func:`pairs_in_band` are decided on them without reading the texts again.

    ``texts`` is an Arrow array or chunked array of strings, or any sequence of str. An Arrow
    column of strings without nulls is read where it lies in its buffers (the core digests its
    ASCII texts there, as :func:`neardup.dedup` reads a Parquet file; the others go through
    Python): the same table, without a Python string for each text.
    """
    import pyarrow as pa

    refuse_mapping(texts, "texts")
    hasher = hasher if hasher is not None else Simhasher()
    spec = (shingle, WHOLE if whole else size) if shingle is not None else None
    arrow = isinstance(texts, pa.ChunkedArray | pa.Array)
    got = _digest_arrow(texts, hasher, spec, name) if arrow else None
    if got is None:
        values = texts.to_pylist() if arrow else list(texts)
        got = _digest_values(values, hasher, spec, name)
    digest, lengths = got
    keys = digest.keys
    columns: dict[str, Any] = {
        "fingerprint": pa.array(digest.fingerprints, pa.uint64()),
        "key": pa.array(np.ascontiguousarray(keys["lo"]), pa.uint64()),
        "key_hi": pa.array(np.ascontiguousarray(keys["hi"]), pa.uint64()),
        "length": pa.array(lengths),
    }
    if spec is not None:
        starts, ends, hashes = _ranges_of(digest)
        if whole:
            cut = ends - starts >= size
            columns["sketch"] = _list(*_gathered(starts, np.minimum(ends, starts + size), hashes))
            columns["shingles"] = _list(*_gathered(starts, np.where(cut, ends, starts), hashes))
        else:
            columns["sketch"] = _list(*_gathered(starts, ends, hashes))
    return pa.table(columns)


def _digest_values(
    values: list[Any], hasher: Simhasher, spec: tuple[int, int] | None, name: str
) -> tuple[Digest, np.ndarray]:
    """The digests of a list of texts, in one call into the core, and their lengths."""
    seen = _core.KeySet() if spec is not None else None
    lengths = np.fromiter((len(t) for t in values), np.int64, len(values))
    if not values:
        return _no_digests(spec), lengths
    return digest_many(hasher, values, threads=1, sketch=spec, name=name, seen=seen), lengths


def _digest_arrow(
    texts: Any, hasher: Simhasher, spec: tuple[int, int] | None, name: str
) -> tuple[Digest, np.ndarray] | None:
    """The digests of an Arrow column of strings and their lengths, its ASCII texts digested
    by the core where they lie and the others through Python, in their rows; None when the
    column must take the Python path whole (a null, another type, a hasher of several fields
    or a Python tokenizer, or a text the Python path refuses: it names it there)."""
    import pyarrow as pa

    if hasher.fields is not None or hasher.tokenizer is not None or texts.null_count:
        return None
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        return None
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    kinds, fps, lengths, keys, sketches = hasher.string_block(texts, spec, 1)
    digest = Digest.of(fps, keys, sketches)
    lengths = lengths.astype(np.int64)
    slow = np.flatnonzero(kinds != 1)
    if len(slow):
        try:
            other, other_lengths = _digest_values(
                texts.take(pa.array(slow)).to_pylist(), hasher, spec, name
            )
        except Exception:  # noqa: BLE001 - the Python path names the text, by its row
            return None
        # The slow texts' digests after the others, then each taken back to its row.
        rows = np.arange(len(lengths), dtype=np.int64)
        rows[slow] = len(lengths) + np.arange(len(slow), dtype=np.int64)
        digest = Digest.concat([digest, other]).take(rows)
        lengths[slow] = other_lengths
    return digest, lengths


def _no_digests(spec: tuple[int, int] | None) -> Digest:
    empty = np.zeros(0, np.uint64)
    return Digest(empty, no_keys(), (empty, empty, empty) if spec is not None else None)


def _ranges_of(digest: Digest) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    assert digest.sketches is not None
    starts, ends, hashes = digest.sketches
    return starts.astype(np.int64), ends.astype(np.int64), np.asarray(hashes, SKETCH_DTYPE)


def _list(offsets: np.ndarray, flat: np.ndarray) -> Any:
    import pyarrow as pa

    return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat))


def _gathered(
    first: np.ndarray, last: np.ndarray, hashes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, hashes) of the lists ``hashes[first[i]:last[i]]``, gathered end to end.

    Lists that follow each other in ``hashes`` are copied as one slice: a batch's sketches in
    the order the core made them are a few slices (one more for each cut sketch or row moved),
    however many hashes they hold; lists in any other order are taken hash by hash."""
    lengths = last - first
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    listed = np.flatnonzero(lengths > 0)
    lo, hi = first[listed], last[listed]
    breaks = np.flatnonzero(lo[1:] != hi[:-1]) + 1
    if len(breaks) * 64 < offsets[-1]:
        heads, tails = lo[np.r_[0, breaks]], hi[np.r_[breaks - 1, len(lo) - 1]]
        slices = [hashes[a:b] for a, b in zip(heads.tolist(), tails.tolist())] if len(lo) else []
        flat = np.concatenate(slices) if slices else np.zeros(0, hashes.dtype)
        return offsets, np.ascontiguousarray(flat, SKETCH_DTYPE)
    at = np.repeat(first - offsets[:-1], lengths) + np.arange(offsets[-1], dtype=np.int64)
    return offsets, np.ascontiguousarray(hashes[at], SKETCH_DTYPE)
