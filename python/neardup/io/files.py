"""A folder or a glob of files, each read by the format its name says, as one corpus.

Which files, and in which order: :mod:`.listing`. A file whose name says no format neardup
reads is never left out quietly: it stops the job (``--on-error stop``), or it is listed among
the skipped (``--on-error skip``, or a ``--format`` that selects the files of one format).

The documents of every file form one corpus: a .txt file is one document (its id its path), a
JSONL, CSV, TSV or Parquet file one a record (its id the record's id field, or its number in
the whole corpus from 0). Written back to a folder, the corpus mirrors the input: each file
under its own relative path, in its own format, holding its kept records (a .txt file is
copied when it is kept); files of one format can be written to one file of it instead
(:mod:`.joined`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..digest import Digest
from ..errors import InputError
from .base import FORMATS, Chunk, FingerprintWriter, Input
from .compression import compression_of
from .joined import JOINABLE, Joined
from .listing import READ_NAMES, is_glob, listing, read_as
from .outputs import TableWriter, hex_fingerprints
from .txt import TxtInput

__all__ = ["FilesInput", "open_files"]

#: A position of a document in a corpus of files: the file's number above these bits, its own
#: position (line, row or file number) below.
_SHIFT = 40
_LOCAL = (1 << _SHIFT) - 1


class FilesInput(Input):
    """Several files read as one corpus (see the module): ``parts`` are ``(relative path or
    None, input)``, an input of .txt files (a :class:`TxtInput`) covering one run of them.
    Positions are the file's number above bit 40, its own position below; errors name each
    file and its line or row."""

    def __init__(self, path: str, root: str, parts: list[tuple[str | None, Input]], **options: Any):
        super().__init__(path, format="folder", **options)
        self.root = root
        self.parts = parts
        for _, part in parts:
            part.errors = self.errors  # one list: each file's errors, in the corpus's summary
        # Documents each part gave on its last pass (an upper bound, for slicing keep and texts).
        self._counts: list[int | None] = [None] * len(parts)

    # -- the corpus -------------------------------------------------------------------------

    @property
    def id_field(self) -> str | None:  # type: ignore[override]
        """The id field of the files that have one (a .txt file's is its path), else None: the
        documents are numbered through the corpus."""
        fields = [part.id_field for _, part in getattr(self, "parts", [])]
        return next((f for f in fields if f is not None), None)

    @id_field.setter
    def id_field(self, value: str | None) -> None:
        pass  # each file resolves its own

    @property
    def size(self) -> int | None:
        sizes = [part.size for _, part in self.parts]
        return None if None in sizes else sum(s for s in sizes if s is not None)

    @property  # type: ignore[override]
    def bytes_read(self) -> int:
        return sum(part.bytes_read for _, part in getattr(self, "parts", []))

    @bytes_read.setter
    def bytes_read(self, value: int) -> None:
        for _, part in getattr(self, "parts", []):
            part.bytes_read = value

    def _part(self, position: int) -> tuple[Input, int]:
        return self.parts[position >> _SHIFT][1], position & _LOCAL

    def error_at(self, position: int, reason: str) -> InputError:
        part, local = self._part(position)
        return part.error_at(local, reason)

    def skip(self, position: int, reason: str) -> None:
        part, local = self._part(position)
        part.skip(local, reason)

    def skipped(self, position: int) -> bool:
        part, local = self._part(position)
        return part.skipped(local)

    def forget_errors(self) -> None:
        for _, part in self.parts:
            part.forget_errors()
        super().forget_errors()

    def close(self) -> None:
        for _, part in self.parts:
            part.close()

    # -- reading ----------------------------------------------------------------------------

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        for i, (_, part) in enumerate(self.parts):
            base = i << _SHIFT
            for position, doc, doc_id, record in part._records(again, raw):
                yield base | position, doc, doc_id, record

    def chunks(self, raw: bool = False) -> Iterator[Chunk]:
        for i, (_, part) in enumerate(self.parts):
            base = i << _SHIFT
            self._counts[i] = 0
            for chunk in part.chunks(raw=raw):
                chunk.positions = [base | p for p in chunk.positions]
                self._counts[i] = (self._counts[i] or 0) + len(chunk.positions)
                yield chunk

    def _fingerprint_chunks(
        self,
        hasher: Any,
        threads: int | None,
        slow_path: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch_now: Callable[[], tuple[int, int] | None],
        seen: Any,
    ) -> Iterator[tuple[Chunk, Digest]]:
        """Each file on its own fast path where it has one, else chunk by chunk in Python."""
        for i, (_, part) in enumerate(self.parts):
            base = i << _SHIFT
            self._counts[i] = 0

            def local_slow(chunk: Chunk, base: int = base) -> tuple[Chunk, Digest]:
                chunk.positions = [base | p for p in chunk.positions]
                kept, digest = slow_path(chunk)
                kept.positions = [p & _LOCAL for p in kept.positions]
                return kept, digest

            blocks = part.fingerprint_chunks(hasher, threads, local_slow, sketch_now, seen)
            if blocks is None:
                blocks = (local_slow(chunk) for chunk in part.chunks())
            for chunk, digest in blocks:
                chunk.positions = [base | p for p in chunk.positions]
                self._counts[i] = (self._counts[i] or 0) + len(chunk.positions)
                yield chunk, digest

    def named_ids(self, first_row: int, chunk_ids: list[Any]) -> list[Any]:
        """The ids :meth:`replay` gives are named already (a number where a file has none)."""
        return list(chunk_ids)

    def joinable(self) -> str | None:
        """The format every file is read in, when one output file can hold them all (see
        :mod:`.joined`); None for .txt files (one document each) or several formats."""
        formats = {part.format for _, part in self.parts}
        fmt = formats.pop() if len(formats) == 1 else None
        return fmt if fmt in JOINABLE else None

    def replay(self, keep=None, output=None, output_compression=None, ids=False, texts=frozenset()):  # type: ignore[no-untyped-def]
        """Each file in turn, its kept records written to its own path under the folder
        ``output``; or, ``output`` being a file (or ``-``), all to it (:meth:`joinable`)."""
        joined = None
        if output is not None and (output == "-" or not os.path.isdir(output)):
            fmt = self.joinable()
            if fmt is None:
                raise ValueError(f"{self.name}: its files cannot be written as one file")
            joined = Joined(output, self.name, fmt, output_compression)
        done = False
        try:
            yield from self._replay(keep, output, joined, ids, texts)
            done = True
        finally:
            if joined is not None:
                joined.close(done)

    def _replay(
        self, keep: Any, output: str | None, joined: Joined | None, ids: bool, texts: Any
    ) -> Iterator[tuple[int, list[Any], dict[int, str]]]:
        wanted = np.unique(np.fromiter(texts, np.int64, len(texts)))
        offset = 0
        for i, (relpath, part) in enumerate(self.parts):
            bound = self._counts[i]
            end = None if bound is None else offset + bound
            here = wanted[
                np.searchsorted(wanted, offset) : len(wanted)
                if end is None
                else np.searchsorted(wanted, end)
            ]
            target, compression = None, None
            if joined is not None:
                target = joined.part(i)
            elif output is not None:
                target = output if relpath is None else os.path.join(output, relpath)
                os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                compression = None if relpath is None else compression_of(relpath)
            part_keep = None if keep is None else keep[offset:end]
            count = 0
            for first, chunk_ids, chunk_texts in part.replay(
                keep=part_keep,
                output=target,
                output_compression=compression,
                ids=ids,
                texts=frozenset((here - offset).tolist()),
            ):
                count = first + len(chunk_ids)
                named = (
                    part.named_ids(first, chunk_ids)
                    if part.id_field is not None
                    else list(range(offset + first, offset + count))
                )
                yield offset + first, named, {offset + r: t for r, t in chunk_texts.items()}
            if joined is not None and target is not None:
                joined.append(target, part.name)
            self._counts[i] = count
            offset += count

    def fingerprint_writer(self, tmp: str, output: str, column: str) -> FingerprintWriter:
        """(write one chunk with its fingerprints, close): a table of each document's file,
        its line or row there (empty for a .txt file, a document whole) and its fingerprint."""
        table = TableWriter(tmp, output, ["file", "position", column])

        def write_table(chunk: Chunk, fps: np.ndarray) -> None:
            files: list[str] = []
            positions: list[int | None] = []
            for position in chunk.positions:
                relpath, part = self.parts[position >> _SHIFT]
                local = position & _LOCAL
                if relpath is None:  # .txt files: the document's own path, no line
                    files.append(part.files()[local - 1])  # type: ignore[attr-defined]
                    positions.append(None)
                else:
                    files.append(relpath)
                    positions.append(local)
            table.write(
                {
                    "file": files,
                    "position": positions,
                    column: fps if table.format == "parquet" else hex_fingerprints(fps),
                }
            )

        return write_table, table.close


def open_files(
    path: str,
    wanted: str | None,
    open_one: Callable[..., Input],
    **options: Any,
) -> Input:
    """The input of a folder or glob: a :class:`TxtInput` when it holds .txt files only (read
    as one document a file), else a :class:`FilesInput`. Files it does not read are refused
    (``on_error="stop"`` and no ``wanted`` format) or listed among its errors."""
    if wanted is not None and wanted not in FORMATS:
        raise InputError(path, f"unknown format {wanted!r}; expected one of {', '.join(FORMATS)}")
    if not os.path.isdir(path) and not glob.glob(path, recursive=True):
        raise InputError(
            path,
            "no file or folder matches this glob" if is_glob(path) else "no such file or folder",
        )
    root, files = listing(path)
    read: list[tuple[str, str]] = []
    left_out: list[InputError] = []
    for relpath in files:
        fmt, reason = read_as(relpath, wanted)
        if fmt is None:
            left_out.append(InputError(os.path.join(root, relpath), reason))
        else:
            read.append((relpath, fmt))
    if left_out and wanted is None and options.get("on_error") != "skip":
        names = ", ".join(e.path for e in left_out[:5])
        more = f" and {len(left_out) - 5:,} more" if len(left_out) > 5 else ""
        raise InputError(
            path,
            f"would leave out {len(left_out):,} file{'s' if len(left_out) != 1 else ''} in no "
            f"format neardup reads: {names}{more} (neardup reads {READ_NAMES}); --format FORMAT "
            "reads only the files of one format, --on-error skip reads the others and lists "
            "these as skipped",
        )
    if not read:
        what = f"{wanted} files" if wanted is not None else f"files neardup reads ({READ_NAMES})"
        raise InputError(path, f"no {what}")
    parts: list[tuple[str | None, Input]] = []
    for relpath, fmt in read:
        if fmt == "txt" and parts and parts[-1][0] is None:
            parts[-1][1].files().append(relpath)  # type: ignore[attr-defined]
        elif fmt == "txt":
            parts.append((None, TxtInput(path, root=root, files=[relpath], **options)))
        else:
            parts.append((relpath, open_one(os.path.join(root, relpath), fmt, **options)))
    if len(parts) == 1 and parts[0][0] is None:
        single = parts[0][1]
        single.left_out = left_out
        single.errors.extend(left_out)
        return single
    corpus = FilesInput(path, root, parts, **options)
    corpus.left_out = left_out
    corpus.errors.extend(left_out)
    return corpus
