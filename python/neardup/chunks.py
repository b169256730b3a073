"""Documents in chunks: any iterable, numpy array, pandas Series or Arrow array, cut into lists
the core takes one call at a time."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

#: Documents per call into the core: large enough to amortize the call, small enough that a
#: progress bar moves and Ctrl-C is handled between chunks.
CHUNK_SIZE = 16_384


def refuse_mapping(docs: Any, name: str = "docs") -> None:
    """A TypeError for a mapping given as a corpus: iterating it would take its keys for the
    documents. A Hugging Face ``DatasetDict`` (what ``datasets.load_dataset`` returns) is told to
    pick a split."""
    if not isinstance(docs, Mapping):
        return
    kind = type(docs).__name__
    if (type(docs).__module__ or "").startswith("datasets") and "DatasetDict" in kind:
        splits = list(docs)
        pick = f"{name}[{splits[0]!r}]" if splits else f"{name}[SPLIT]"
        raise TypeError(f"{name} is a datasets.{kind} of splits {splits}: pick one, e.g. {pick}")
    raise TypeError(
        f"{name} must be an iterable of documents, not a {kind} (a mapping: its keys would be "
        f"taken for the documents): pass a list of texts or of dicts, e.g. "
        f"list({name}.values()), or wrap one document in a list"
    )


def count_docs(docs: Any) -> int | None:
    if isinstance(docs, (str, bytes, bytearray)):
        raise TypeError(
            f"docs must be an iterable of documents, not a single {type(docs).__name__}: "
            f"wrap one text in a list, or use fingerprint()"
        )
    refuse_mapping(docs)
    try:
        return len(docs)
    except TypeError:
        return None


def iter_docs(docs: Any) -> Iterator[Any]:
    """Documents as Python objects, whatever container holds them."""
    module = type(docs).__module__ or ""
    if module.startswith("pyarrow"):
        chunks = docs.chunks if hasattr(docs, "chunks") else [docs]
        for chunk in chunks:
            for offset in range(0, len(chunk), CHUNK_SIZE):
                yield from chunk.slice(offset, CHUNK_SIZE).to_pylist()
        return
    if isinstance(docs, np.ndarray):
        if docs.ndim != 1:
            raise TypeError(f"docs must be a one-dimensional array, got {docs.ndim} dimensions")
        if docs.dtype.kind not in "OUS":
            raise TypeError(f"docs must be an array of str, got dtype {docs.dtype}")
        yield from docs.tolist()
        return
    if module.startswith("pandas") and hasattr(docs, "tolist"):
        yield from docs.tolist()
        return
    yield from docs


def in_chunks(docs: Any, size: int, name: str) -> Iterator[tuple[int, list[Any]]]:
    count_docs(docs)
    blocks = getattr(docs, "text_blocks", None)
    if blocks is not None:  # a source that cuts its documents itself (neardup.sources)
        start = 0
        for chunk in blocks(size):
            yield start, chunk
            start += len(chunk)
        return
    if isinstance(docs, list):
        for start in range(0, len(docs), size):
            yield start, docs[start : start + size]
        return
    iterator = iter_docs(docs)
    start = 0
    while True:
        chunk = list(itertools.islice(iterator, size))
        if not chunk:
            return
        yield start, chunk
        start += len(chunk)
