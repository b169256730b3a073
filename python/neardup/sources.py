"""Documents in any form -> texts and ids, with one rule for ids.

A list or iterable of strings or dicts, a pandas Series or DataFrame, a polars DataFrame, a pyarrow
Table or RecordBatch, a Hugging Face ``datasets.Dataset``: each becomes the texts to fingerprint
(or the fields dicts a hasher with ``fields`` reads), their ids (the ``id_field`` column or field;
by default the ``id`` one when there is one, as on the command line; otherwise row numbers or a
pandas index) and, for a keep function or a second reading, the document at a row. The corpus-wide
calls (``dedup``, ``tune``, ``DedupIndex.build``, deduplication against an index) take their
documents from here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .chunks import CHUNK_SIZE, iter_docs, refuse_mapping
from .columns import is_missing, missing_text
from .hasher import Simhasher
from .pipeline import Keep
from .validate import check_threads

__all__ = ["check_corpus_arguments"]

#: Characters of non-ASCII texts joined to count their UTF-8 bytes at once.
_JOINED = 1 << 16


def _wide_bytes(texts: list[str]) -> int:
    """The UTF-8 bytes of ``texts`` beyond one a character."""
    joined = "".join(texts)
    return len(joined.encode("utf-8", "surrogatepass")) - len(joined)


class _Texts:
    """Yields the text (or fields dict) of each document, noting its length and bytes."""

    def __init__(
        self, items: Iterable[Any], text_field: str | None, id_field: str | None, fields: bool
    ) -> None:
        self.items, self.text_field, self.id_field, self.fields = (
            items,
            text_field,
            id_field,
            fields,
        )
        self.lengths: list[int] = []
        self.nbytes = 0
        self.ids: list[Any] | None = [] if id_field is not None else None

    def __iter__(self) -> Iterator[Any]:
        for block in self.text_blocks(CHUNK_SIZE):
            yield from block

    def text_blocks(self, size: int) -> Iterator[list[Any]]:
        """The texts in lists of ``size`` (the last one shorter). A list's run of ``str`` is
        taken as it is, its lengths and bytes counted a run at a time."""
        if isinstance(self.items, list):
            items = self.items
            for at in range(0, len(items), size):
                block = items[at : at + size]
                if self.ids is None and set(map(type, block)) == {str}:
                    self._count(block)
                    yield block
                else:
                    yield [self._text(at + i, item) for i, item in enumerate(block)]
            return
        block = []
        for i, item in enumerate(iter_docs(self.items)):
            block.append(self._text(i, item))
            if len(block) == size:
                yield block
                block = []
        if block:
            yield block

    def _count(self, texts: list[str]) -> None:
        """Notes the lengths and UTF-8 bytes of ``texts``."""
        lengths = list(map(len, texts))
        self.lengths.extend(lengths)
        # An ASCII character is a byte: the others' bytes are counted on their texts, joined a
        # few at a time (a call each would cost more than the bytes of short texts; all joined,
        # long ones would be copied into one large string, and encoded into another, for a count).
        extra, group, size = 0, [], 0
        for text in itertools.filterfalse(str.isascii, texts):
            group.append(text)
            size += len(text)
            if size >= _JOINED:
                extra += _wide_bytes(group)
                group, size = [], 0
        extra += _wide_bytes(group)
        self.nbytes += sum(lengths) + extra

    def _text(self, i: int, item: Any) -> Any:
        """The text (or fields dict) of document ``i``, its id, length and bytes noted."""
        if isinstance(item, Mapping) and not self.fields:
            field = self.text_field or "text"
            if field not in item:
                raise KeyError(
                    f"docs[{i}] has no field {field!r} (pass text_field= to name the text)"
                )
            text = item[field]
            if is_missing(text):
                raise missing_text(f"docs[{i}][{field!r}]", text)
            if not isinstance(text, str):
                raise TypeError(f"docs[{i}][{field!r}] is {type(text).__name__}, expected str")
        else:
            text = item
        if i == 0 and self.id_field is None and isinstance(item, Mapping) and "id" in item:
            # The ids rule of the command too: the "id" field when the first document has one.
            self.id_field, self.ids = "id", []
        if self.ids is not None:
            if not isinstance(item, Mapping) or self.id_field not in item:
                raise KeyError(
                    f"docs[{i}] has no field {self.id_field!r} (the id; id_field= names another)"
                )
            self.ids.append(item[self.id_field])
        if isinstance(text, str):
            self.lengths.append(len(text))
            self.nbytes += (
                len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
            )
        elif isinstance(text, Mapping):
            values = [v for v in text.values() if isinstance(v, str)]
            self.lengths.append(sum(map(len, values)))
            self.nbytes += sum(len(v.encode("utf-8", "surrogatepass")) for v in values)
        else:
            self.lengths.append(0)
        return text


def check_corpus_arguments(
    docs: Any, hasher: Simhasher | None, threads: int | None
) -> tuple[Simhasher, int | None]:
    """The arguments every corpus-wide call shares, checked: (the hasher or the default one, threads)."""
    if hasher is None:
        hasher = Simhasher()
    elif not isinstance(hasher, Simhasher):
        raise TypeError(f"hasher must be a neardup.Simhasher, got {type(hasher).__name__}")
    if threads is not None:
        threads = check_threads(threads)
    if isinstance(docs, (str, bytes)):
        raise TypeError(
            "docs must be a list or an iterable of documents, not a single str: wrap it in a list"
        )
    refuse_mapping(docs)
    return hasher, threads


def _documents(
    docs: Any,
    text_field: str | None,
    id_field: str | None,
    hasher: Simhasher,
    keep: Keep,
) -> tuple[_Texts, Any, Callable[[int], Any] | None]:
    """(texts to fingerprint, ids or None, row -> document for a keep function)."""
    refuse_mapping(docs)
    module = type(docs).__module__ or ""
    name = type(docs).__name__
    fields = hasher.fields is not None
    if fields and text_field is not None:
        raise ValueError(
            "text_field names one text; with hasher.fields set, the fields are read from each dict"
        )

    def check_columns(available: list[Any]) -> None:
        """A KeyError naming a missing text or id column and the columns there are."""
        for wanted, option in (
            (None if fields else text_field or "text", "text_field="),
            (id_field, "id_field="),
        ):
            if wanted is not None and wanted not in available:
                raise KeyError(
                    f"no column {wanted!r} ({option}) in the {name}; its columns: {', '.join(map(str, available))}"
                )

    if module.startswith("polars") and name == "LazyFrame":
        raise TypeError(
            "docs is a polars LazyFrame: collect it first, neardup.dedup(lazy.collect())"
        )
    if name in ("DataFrame", "Table", "RecordBatch") and module.startswith(
        ("pandas", "polars", "pyarrow")
    ):
        columns = list(docs.column_names if module.startswith("pyarrow") else docs.columns)
        if id_field is None and "id" in columns:
            id_field = "id"  # the ids rule of the command too: the "id" column when there is one
        check_columns(columns)
    if module.startswith("pandas") and name == "DataFrame":
        col = docs[text_field or "text"] if not fields else docs[list(hasher.fields or {})]
        items = col.to_dict("records") if fields else col
        ids = docs[id_field].to_numpy() if id_field is not None else docs.index.to_numpy()
        return _Texts(items, None, None, fields), ids, lambda row: docs.iloc[row].to_dict()
    if module.startswith("pandas") and name == "Series":
        return _Texts(docs, None, None, fields), docs.index.to_numpy(), lambda row: docs.iloc[row]
    if module.startswith("polars") and name == "DataFrame":
        if fields:
            items = docs.select(list(hasher.fields or {})).iter_rows(named=True)
        else:
            items = docs.get_column(text_field or "text").to_arrow()
        ids = docs.get_column(id_field).to_numpy() if id_field is not None else None
        return _Texts(items, None, None, fields), ids, lambda row: docs.row(row, named=True)
    if module.startswith("pyarrow") and name in ("Table", "RecordBatch"):
        if fields:
            items = docs.select(
                [f for f in (hasher.fields or {}) if f in docs.column_names]
            ).to_pylist()
        else:
            items = docs.column(text_field or "text")
        ids = docs.column(id_field).to_numpy(zero_copy_only=False) if id_field is not None else None
        return _Texts(items, None, None, fields), ids, lambda row: docs.slice(row, 1).to_pylist()[0]
    if module.startswith("datasets") and name == "Dataset":
        if id_field is None and "id" in docs.column_names:
            id_field = "id"
        check_columns(list(docs.column_names))
        plain = docs.with_format(None)  # a keep function sees dicts, whatever the Dataset's format
        return (
            _dataset_documents(docs, text_field, hasher),
            _dataset_ids(docs, id_field),
            lambda row: plain[row],
        )
    if callable(keep) and not hasattr(docs, "__getitem__"):
        docs = list(docs)
    doc_at = (lambda row: docs[row]) if hasattr(docs, "__getitem__") else None
    return _Texts(docs, text_field, id_field, fields), None, doc_at


def _dataset_documents(ds: Any, column: str | None, hasher: Simhasher) -> _Texts:
    """The texts of a Hugging Face ``datasets.Dataset``, read from its Arrow table a batch at a
    time (in the Dataset's row order, a ``select`` or ``shuffle`` included), never as one list."""
    if hasher.fields is not None:
        wanted = [f for f in hasher.fields if f in ds.column_names]
    else:
        wanted = [column or "text"]

    def batches() -> Iterator[Any]:
        view = ds.select_columns(wanted).with_format("arrow")
        for batch in view.iter(batch_size=CHUNK_SIZE):
            if hasher.fields is not None:
                yield from batch.to_pylist()
            else:
                yield from iter_docs(batch.column(wanted[0]))

    return _Texts(batches(), None, None, hasher.fields is not None)


def _dataset_ids(ds: Any, id_field: str | None) -> Any:
    """The ``id_field`` column of a ``datasets.Dataset`` as an array, or None for row numbers."""
    if id_field is None:
        return None
    table = ds.select_columns([id_field]).with_format("arrow")[:]
    return table.column(id_field).to_numpy(zero_copy_only=False)
