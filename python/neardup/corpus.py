"""A corpus read through :mod:`neardup.io`: the first pass (fingerprints and the digests
verification needs, on the core's JSONL fast path where it can), re-sketching, and a progress bar."""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import click
import numpy as np

from . import _core
from .digest import Digest
from .hasher import Simhasher, digest_many
from .io import (
    Chunk,
    Input,
)
from .pipeline import FirstPass
from .validate import lone_surrogate
from .verify import SKETCH_SIZE, Sketches


class Progress:
    """A progress bar on stderr over an input's bytes, shown only on a terminal."""

    def __init__(self, inp: Input, label: str, quiet: bool) -> None:
        self.inp = inp
        size = inp.size if not quiet and sys.stderr.isatty() else None
        self._bar: Any = (
            click.progressbar(length=size, label=label, file=sys.stderr, width=30) if size else None
        )
        self.shown = self._bar is not None
        self._done = 0
        if self._bar is not None:
            self._bar.__enter__()

    def update(self) -> None:
        if self._bar is not None:
            now = self.inp.bytes_read
            if now > self._done:
                self._bar.update(now - self._done)
                self._done = now

    def close(self) -> None:
        """Ends the bar: at 100% when the pass got to its end (the bytes counted can fall short
        of the size, with skipped records or a compressed input's trailer), where it stopped
        when an error or Ctrl-C ended it (close runs in a ``finally``)."""
        if self._bar is not None:
            self.update()
            if (
                sys.exc_info()[0] is None
                and self._bar.length is not None
                and self._bar.pos < self._bar.length
            ):
                self._bar.update(self._bar.length - self._bar.pos)
            self._bar.__exit__(None, None, None)
            self._bar = None


def _texts_of(doc: Any) -> list[str]:
    return [doc] if isinstance(doc, str) else [v for v in doc.values() if isinstance(v, str)]


def _fingerprint_chunk(
    inp: Input,
    hasher: Simhasher,
    chunk: Chunk,
    threads: int | None,
    sketch: tuple[int, int] | None = None,
    seen: _core.KeySet | None = None,
) -> tuple[Chunk, Digest]:
    """The digests of a chunk (see :mod:`neardup.digest`; ``seen``: see
    :attr:`FirstPass.seen`); a document the hasher refuses (a lone surrogate from a JSON
    escape) is reported at its line, or skipped."""
    try:
        return chunk, digest_many(hasher, chunk.docs, threads=threads, sketch=sketch, seen=seen)
    except MemoryError as err:
        if getattr(err, "item", None) is None and len(chunk.positions) == 1:
            # Python's own (normalizing the text): of the chunk's one record.
            raise inp.memory_error_at(err, chunk.positions[0]) from None
        raise inp.memory_error(err, chunk.positions.__getitem__) from None
    except ValueError:
        bad = []
        for i, doc in enumerate(chunk.docs):
            for text in _texts_of(doc):
                wrong = lone_surrogate(text)
                if wrong is not None:
                    inp.skip(chunk.positions[i], f"text {wrong}")
                    bad.append(i)
                    break
        if not bad:
            raise
        good = np.setdiff1d(np.arange(len(chunk.docs)), bad)
        kept = Chunk(
            docs=[chunk.docs[i] for i in good],
            positions=[chunk.positions[i] for i in good],
            lengths=[chunk.lengths[i] for i in good] if chunk.lengths else [],
            raw=[chunk.raw[i] for i in good] if len(chunk.raw) == len(chunk.docs) else chunk.raw,
            nbytes=sum(len(t.encode()) for i in good for t in _texts_of(chunk.docs[i])),
        )
        return kept, digest_many(hasher, kept.docs, threads=threads, sketch=sketch, seen=seen)


def fingerprint_with_progress(
    inp: Input, hasher: Simhasher, threads: int | None, hidden: bool, **options: Any
) -> tuple[np.ndarray, np.ndarray, int]:
    """`fingerprint_pass` with a progress bar (hidden with --quiet or --json, or off a terminal)."""
    progress = Progress(inp, "fingerprinting", hidden)
    try:
        return fingerprint_pass(inp, hasher, threads, progress, **options)
    finally:
        progress.close()


def fingerprint_pass(
    inp: Input,
    hasher: Simhasher,
    threads: int | None,
    progress: Progress,
    on_chunk: Callable[[Chunk, np.ndarray], None] | None = None,
    raw: bool = False,
    lengths: bool = False,
    first: FirstPass | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Reads the input once: (fingerprints, text lengths if asked, text bytes). JSONL is read
    and fingerprinted by the core where it can (see Input.fingerprint_chunks); otherwise
    the core fingerprints one chunk on every core while this thread parses the next. Only the
    fingerprints (8 bytes a document) and, for --keep longest, the lengths (4 more) are kept;
    given ``first``, every digest goes to it (content keys, and sketches within its budget)."""
    if hasher.weighting == "idf":
        if inp.path == "-":
            raise click.UsageError(
                "--weighting idf reads the input twice and cannot read stdin: give a file"
            )
        hasher.fit(doc for chunk in inp.chunks() for doc in chunk.docs)
        inp.forget_errors()
    first = first if first is not None else FirstPass(hasher, None, threads)
    len_parts: list[np.ndarray] = []
    nbytes = 0

    def finish(chunk: Chunk, digest: Digest) -> None:
        nonlocal nbytes
        first.add(digest, chunk.positions)
        if lengths:
            len_parts.append(np.asarray(chunk.lengths, dtype=np.uint32))
        nbytes += chunk.nbytes
        if on_chunk is not None:
            on_chunk(chunk, digest.fingerprints)

    fast = None if raw or on_chunk is not None else inp.fingerprint_chunks
    blocks = (
        fast(
            hasher,
            threads,
            lambda chunk: _fingerprint_chunk(
                inp, hasher, chunk, threads, first.sketch_spec(), first.seen
            ),
            first.sketch_spec,
            first.seen,
        )
        if fast is not None
        else None
    )
    if blocks is not None:
        for chunk, digest in blocks:
            finish(chunk, digest)
            progress.update()
    else:
        _python_pass(inp, hasher, threads, progress, finish, raw, first.sketch_spec, first.seen)
    progress.update()
    first.finish()
    inp.errors.sort(key=lambda e: (e.path, e.line or 0))
    return (
        first.fingerprints,
        (np.concatenate(len_parts) if len_parts else np.zeros(0, np.uint32)),
        nbytes,
    )


def _python_pass(
    inp: Input,
    hasher: Simhasher,
    threads: int | None,
    progress: Progress,
    finish: Callable[[Chunk, Digest], None],
    raw: bool,
    sketch_now: Callable[[], tuple[int, int] | None],
    seen: _core.KeySet | None,
) -> None:
    """The first pass read by Python: the core digests one chunk on every core while this
    thread parses the next."""
    pending: Future[tuple[Chunk, Digest]] | None = None
    with ThreadPoolExecutor(1, thread_name_prefix="neardup") as pool:
        try:
            for chunk in inp.chunks(raw=raw):
                future = pool.submit(
                    _fingerprint_chunk, inp, hasher, chunk, threads, sketch_now(), seen
                )
                if pending is not None:
                    finish(*pending.result())
                pending = future
                progress.update()
            if pending is not None:
                finish(*pending.result())
                pending = None
        except BaseException:
            if pending is not None:
                pending.cancel()
            raise


def resketcher(
    inp: Input,
    hasher: Simhasher,
    shingle: int,
    threads: int | None,
    hidden: bool,
    first: FirstPass | None = None,
    size: int = SKETCH_SIZE,
) -> Callable[[np.ndarray], Sketches]:
    """Reads again, and sketches, the documents of given rows: for a corpus whose first-pass
    sketches passed their budget (only the sketches of these rows are kept), or, with ``size``
    ``WHOLE``, for the exact shingle sets of pairs whose estimate lies near the threshold. JSONL
    is read by the core, line by line where the first pass found the rows; other inputs by
    Python."""

    def resketch(rows: np.ndarray) -> Sketches:
        sketches = Sketches(hasher, shingle, size=size, threads=threads)
        if not len(rows):
            return sketches
        progress = Progress(inp, f"sketching {len(rows):,} candidate documents", hidden)
        inp.bytes_read = 0
        try:
            positions = first.positions if first is not None else None
            fast = getattr(inp, "sketch_lines", None)
            if (
                positions is not None
                and fast is not None
                and fast(hasher, positions[rows], rows, sketches, threads, progress.update)
            ):
                return sketches
            for _, _, chunk_texts in inp.replay(texts=frozenset(rows.tolist())):
                got = sorted(chunk_texts)
                sketches.add(got, [chunk_texts[r] for r in got])
                progress.update()
        finally:
            progress.close()
        return sketches

    return resketch


def ids_of(inp: Input, rows: np.ndarray) -> dict[int, Any]:
    """The ids of some rows, from one more read of the input."""
    want, found = set(rows.tolist()), {}
    inp.bytes_read = 0
    for first_row, chunk_ids, _ in inp.replay(ids=True):
        for r, v in enumerate(inp.named_ids(first_row, chunk_ids), first_row):
            if r in want:
                found[r] = v
    return found
