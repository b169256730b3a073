"""Simhasher: the configuration that turns documents into 64-bit fingerprints."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, TypedDict

import numpy as np

from . import _core
from .chunks import CHUNK_SIZE, count_docs, in_chunks
from .columns import DocumentColumns, _call, _method, _Unfitted
from .digest import Digest
from .normalize import UnicodeForm, normalizer, outside_ascii
from .stopwords import _sorted_english, _stopword_list
from .tokenizers import Tokenizer, _tokenizer
from .validate import check_threads

Document = str | bytes | Mapping[str, Any]
#: What a feature is made of: word shingles or character n-grams.
Tokens = Literal["word", "char"]
#: How much each feature weighs in the tallies.
Weighting = Literal["tf", "binary", "idf"]


class SimhasherOptions(TypedDict, total=False):
    """The keyword arguments of :class:`Simhasher`, for functions that pass them on."""

    tokens: Tokens
    ngram: int
    weighting: Weighting
    unicode_form: UnicodeForm | None
    casefold: bool
    stopwords: str | Iterable[str] | None
    fields: Mapping[str, float] | None
    tokenizer: str | Tokenizer | None


#: The defaults, chosen by near-duplicate F1 on the Debian corpus (see README, "Choosing the
#: defaults"). Changing any of them changes every default fingerprint: a breaking change.
DEFAULT_TOKENS: Tokens = "word"
DEFAULT_NGRAM = 1
DEFAULT_WEIGHTING: Weighting = "tf"
DEFAULT_UNICODE_FORM: UnicodeForm = "NFKC"


class Simhasher(DocumentColumns):
    """The settings that turn a document into a 64-bit simhash fingerprint.

    A document's text is normalized (Unicode NFKC and case folding by default), cut into tokens
    (words, with each CJK ideograph, kana and Hangul syllable a token of its own), and turned into
    features: shingles of ``ngram`` words, or ``ngram`` characters with ``tokens="char"``. Each
    feature is hashed with FNV-1a 64 and the hashes are summed bit by bit, +weight where a bit is 1
    and -weight where it is 0; bit i of the fingerprint is 1 where sum i is positive.

    Args:
        tokens: ``"word"`` (word shingles) or ``"char"`` (character n-grams).
        ngram: words per shingle, or characters per n-gram; at least 1.
        weighting: ``"tf"`` (every occurrence counts), ``"binary"`` (each distinct feature
            once), or ``"idf"`` (every occurrence weighs its inverse document frequency; call
            :meth:`fit` on a corpus first).
        unicode_form: Unicode normalization, ``"NFKC"``, ``"NFC"``, ``"NFKD"``, ``"NFD"`` or
            ``None``.
        casefold: fold case before building features.
        stopwords: keep only word shingles holding at least one stopword (a document with none
            keeps all its shingles): ``"english"`` for the built-in list, or your own words.
        fields: for documents given as dicts, the weight of each field, such as
            ``{"title": 2, "body": 1}``; fields missing from a document or ``None`` are empty.
        tokenizer: cut the normalized text into word tokens in Python instead of the built-in
            tokenizer: ``"jieba"`` for Chinese word segmentation (``pip install neardup[zh]``),
            or any function from a str to a list of str. Tokens holding no letter, number or
            mark (spaces, punctuation) are dropped; shingles, hashing and tallies are those of
            the built-in path, in the core. Needs ``tokens="word"``.

    Example:
        >>> hasher = Simhasher(ngram=2)
        >>> hasher.features("The cat sat, the cat ran.")
        ['the cat', 'cat sat', 'sat the', 'the cat', 'cat ran']
        >>> fp = hasher.fingerprint("The cat sat, the cat ran.")
    """

    def __init__(
        self,
        *,
        tokens: Tokens = DEFAULT_TOKENS,
        ngram: int = DEFAULT_NGRAM,
        weighting: Weighting = DEFAULT_WEIGHTING,
        unicode_form: UnicodeForm | None = DEFAULT_UNICODE_FORM,
        casefold: bool = True,
        stopwords: str | Iterable[str] | None = None,
        fields: Mapping[str, float] | None = None,
        tokenizer: str | Tokenizer | None = None,
    ) -> None:
        if not isinstance(tokens, str):
            raise TypeError(f'tokens must be "word" or "char", got {tokens!r}')
        if isinstance(ngram, bool) or not isinstance(ngram, (int, np.integer)):
            raise TypeError(f"ngram must be an int, got {type(ngram).__name__}")
        if not isinstance(weighting, str):
            raise TypeError(f'weighting must be "tf", "binary" or "idf", got {weighting!r}')
        self._normalize = normalizer(unicode_form, casefold)
        self._normalize_outside_ascii = outside_ascii(self._normalize)
        self.tokens: Tokens = tokens
        self.ngram = int(ngram)
        self.weighting: Weighting = weighting
        self.unicode_form: UnicodeForm | None = unicode_form
        self.casefold = casefold
        self.stopwords = _stopword_list(stopwords, self._normalize)
        self.fields = _field_weights(fields)
        self.tokenizer = tokenizer
        self._tokenize = _tokenizer(tokenizer, tokens)
        self._idf: tuple[int, np.ndarray, np.ndarray] | None = None
        self._inner = self._build()
        self._frozen = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SETTINGS and getattr(self, "_frozen", False):
            raise AttributeError(
                f"a Simhasher's settings are frozen: hasher.replace({name}=...) makes a hasher "
                f"with another {name}"
            )
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in _SETTINGS:
            raise AttributeError(f"a Simhasher's settings are frozen: {name} cannot be deleted")
        object.__delattr__(self, name)

    def replace(self, **changes: Any) -> Simhasher:
        """A new hasher with these settings changed and the others as here (the settings of a
        hasher are frozen). An idf hasher keeps its fitted frequencies while the features stay
        the same (only ``weighting`` changes); otherwise it is fitted anew.

        Example:
            >>> Simhasher().replace(casefold=False).casefold
            False
        """
        unknown = sorted(set(changes) - set(_SETTINGS))
        if unknown:
            raise TypeError(f"replace() got unknown settings: {', '.join(unknown)}")
        settings = {**self._settings(), **changes}
        english = self.stopwords is not None and self.stopwords == _sorted_english(self._normalize)
        if "stopwords" not in changes and english:
            settings["stopwords"] = "english"
        hasher = Simhasher(**settings)
        if self._idf is not None and set(changes) <= {"weighting"}:
            object.__setattr__(hasher, "_idf", self._idf)
            object.__setattr__(hasher, "_inner", hasher._build())
        return hasher

    def _build(self, weighting: Weighting | None = None) -> Any:
        """The core hasher of these settings (under another weighting, if given)."""
        weighting = weighting or self.weighting
        if weighting == "idf" and self._idf is None:
            return _Unfitted()
        return _core.Hasher(
            tokens=self.tokens,
            ngram=self.ngram,
            weighting=weighting,
            stopwords=list(self.stopwords) if self.stopwords is not None else None,
            field_weights=list(self.fields.values()) if self.fields else [1.0],
            idf=self._idf if weighting == "idf" else None,
        )

    # -- settings -----------------------------------------------------------------------------

    def _settings(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "ngram": self.ngram,
            "weighting": self.weighting,
            "unicode_form": self.unicode_form,
            "casefold": self.casefold,
            "stopwords": self.stopwords,
            "fields": self.fields,
            "tokenizer": self.tokenizer,
        }

    def __repr__(self) -> str:
        parts = []
        for name, value in self._settings().items():
            if name == "stopwords" and value is not None:
                value = (
                    "english"
                    if value == _sorted_english(self._normalize)
                    else f"<{len(value)} words>"
                )
                parts.append(f"stopwords={value!r}" if value == "english" else f"stopwords={value}")
                continue
            if name == "tokenizer" and value is None:
                continue
            if name == "tokenizer" and callable(value):
                value = getattr(value, "__qualname__", None) or repr(value)
                parts.append(f"tokenizer=<{value}>")
                continue
            parts.append(f"{name}={value!r}")
        if self.weighting == "idf":
            parts.append(f"fitted_on={self._idf[0]} documents" if self._idf else "fitted=False")
        return f"Simhasher({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Simhasher):
            return NotImplemented
        if self._settings() != other._settings():
            return False
        if (self._idf is None) != (other._idf is None):
            return False
        if self._idf is None or other._idf is None:
            return True
        return (
            self._idf[0] == other._idf[0]
            and np.array_equal(self._idf[1], other._idf[1])
            and np.array_equal(self._idf[2], other._idf[2])
        )

    __hash__ = None  # type: ignore[assignment]  # fit() changes a hasher: not hashable

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self._settings(), "idf": self._idf}

    def __setstate__(self, state: dict[str, Any]) -> None:
        settings = dict(state["settings"])
        stopwords = settings.pop("stopwords")
        self.__init__(**settings)  # type: ignore[misc]
        object.__setattr__(self, "stopwords", stopwords)
        self._idf = state["idf"]
        self._inner = self._build()

    # -- fitting ------------------------------------------------------------------------------

    def fit(self, corpus: Iterable[Document], *, threads: int | None = None) -> Simhasher:
        """Learns document frequencies for ``weighting="idf"`` from a corpus; returns ``self``.

        A feature's weight is ``ln((1 + N) / (1 + df)) + 1`` (rounded to a multiple of 1/1024),
        where N is the number of documents and df the number holding the feature; features not
        seen in the corpus weigh as if df were 0.
        """
        if self.weighting != "idf":
            raise ValueError(
                f'fit() learns idf weights: it needs weighting="idf", not {self.weighting!r}'
            )
        counter = self._build("tf")
        documents = 0
        keys_all: list[np.ndarray] = []
        dfs_all: list[np.ndarray] = []
        for start, chunk in in_chunks(corpus, CHUNK_SIZE, "corpus"):
            columns = self._columns(chunk, start, "corpus")
            keys, dfs = _call(
                _method(counter, "document_frequencies", self.tokenizer),
                columns,
                start,
                "corpus",
                threads,
            )
            keys_all.append(keys)
            dfs_all.append(dfs)
            documents += len(chunk)
        if keys_all:
            keys = np.concatenate(keys_all)
            dfs = np.concatenate(dfs_all)
            unique, inverse = np.unique(keys, return_inverse=True)
            summed = np.zeros(len(unique), dtype=np.uint64)
            np.add.at(summed, inverse, dfs)
        else:
            unique, summed = np.zeros(0, np.uint64), np.zeros(0, np.uint64)
        self._idf = (documents, unique, summed)
        self._inner = self._build()
        return self

    # -- one document -------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """The text as the feature builder sees it (normalized under these settings)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._normalize(text)

    def features(self, doc: Document) -> list[str]:
        """The features of one document, exactly as they are hashed, in summation order.

        Under ``weighting="binary"`` each distinct feature appears once (first occurrence).
        For a dict document the features of each field follow one another in field order.
        """
        return [feature for feature, _ in self.feature_weights(doc)]

    def feature_weights(self, doc: Document) -> list[tuple[str, float]]:
        """The features of one document with the weight each one adds, in summation order.

        ``simhash_features(features, weights)`` of these equals :meth:`fingerprint`.
        """
        columns = self._columns([doc], 0, "doc")
        out: list[tuple[str, float]] = []
        for field, column in enumerate(columns):
            out.extend(
                _call(
                    _method(self._inner, "weighted_features", self.tokenizer),
                    column[0],
                    0,
                    "doc",
                    field,
                )
            )
        return out

    def fingerprint(self, doc: Document) -> int:
        """The 64-bit fingerprint of one document (a str, UTF-8 bytes, or a dict with ``fields``),
        as a Python ``int`` (``fingerprint_many`` gives a ``numpy.uint64`` array)."""
        columns = self._columns([doc], 0, "doc")
        return int(
            _call(_method(self._inner, "fingerprint_many", self.tokenizer), columns, 0, "doc")[0]
        )

    # -- many documents -----------------------------------------------------------------------

    def fingerprint_many(
        self,
        docs: Iterable[Document],
        *,
        threads: int | None = None,
        chunk_size: int = CHUNK_SIZE,
    ) -> np.ndarray:
        """Fingerprints of many documents as a ``numpy.uint64`` array, on all cores.

        Args:
            docs: a list or any iterable of documents, a numpy array, a pandas Series or a
                pyarrow string array. A bare ``str`` is refused: wrap one text in a list.
            threads: worker threads; ``None`` uses every core. The result is the same for any
                number of threads.
            chunk_size: documents handed to the core per call.
        """
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
        threads = check_threads(threads)
        total = count_docs(docs)
        out = np.empty(total if total is not None else 0, dtype=np.uint64)
        parts: list[np.ndarray] = []

        def store(start: int, fps: np.ndarray) -> None:
            if total is not None:
                out[start : start + len(fps)] = fps
            else:
                parts.append(fps)

        # While the core fingerprints one chunk on all cores (the GIL released), this thread
        # normalizes the next one: one helper thread keeps the core busy.
        pool: ThreadPoolExecutor | None = None
        pending: list[tuple[int, Future[np.ndarray]]] = []
        method = _method(self._inner, "fingerprint_many", self.tokenizer)
        folding = self.fields is None and self._tokenize is None
        if folding:
            method = functools.partial(method, **self._fold())
        try:
            for start, chunk in in_chunks(docs, chunk_size, "docs"):
                columns = (
                    self._folding_column(chunk, start, "docs")
                    if folding
                    else self._columns(chunk, start, "docs")
                )
                if pool is None and len(chunk) == chunk_size and total != chunk_size:
                    pool = ThreadPoolExecutor(1, thread_name_prefix="neardup")
                if pool is None:
                    store(start, _call(method, columns, start, "docs", threads))
                    continue
                pending.append((start, pool.submit(_call, method, columns, start, "docs", threads)))
                while len(pending) > 1:
                    done_start, future = pending.pop(0)
                    store(done_start, future.result())
            for done_start, future in pending:
                store(done_start, future.result())
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        if total is None:
            return np.concatenate(parts) if parts else out
        return out

    def jsonl_block(
        self,
        data: bytes,
        text_field: str,
        id_field: str | None,
        sketch: tuple[int, int] | None,
        threads: int | None,
        wanted: np.ndarray | None = None,
        seen: _core.KeySet | None = None,
    ) -> tuple[Any, ...]:
        """The core's JSONL fast path (:mod:`neardup.io.jsonl`) over one block of lines: (kinds,
        fingerprints, lengths, line starts, content keys, sketches); where ``wanted`` is given (a
        second read), the lines it flags alone, only sketched. A line whose text ``seen`` holds
        takes the fingerprint recorded there and no sketch (see :class:`neardup.pipeline.FirstPass`)."""
        return _core.jsonl_fingerprints(
            self._inner,
            data,
            text_field,
            id_field,
            self.casefold,
            sketch,
            threads,
            wanted=wanted,
            seen=seen,
        )

    def string_block(
        self,
        column: Any,
        sketch: tuple[int, int] | None,
        threads: int | None,
        seen: _core.KeySet | None = None,
    ) -> tuple[Any, ...]:
        """The core's fast path over an Arrow string or large string array, read where it lies
        in its buffers: (kinds, fingerprints, lengths, content keys, sketches), kind 1 for a text
        digested there, 2 for one Python must read (not ASCII, or not UTF-8; a null is an empty
        text here). A text whose key ``seen`` holds takes the fingerprint recorded there and no
        sketch."""
        offsets, data = string_buffers(column)
        return _core.string_fingerprints(
            self._inner, offsets, data, self.casefold, sketch, threads, seen=seen
        )

    def _digest(
        self,
        chunk: list[Any],
        start: int,
        name: str,
        threads: int | None,
        sketch: tuple[int, int] | None,
    ) -> Digest:
        """:func:`digest_many`, by the positional name against.py still calls."""
        return digest_many(self, chunk, threads=threads, sketch=sketch, start=start, name=name)

    # -- documents to columns of normalized text ----------------------------------------------


def string_buffers(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of an Arrow string or large string array as they lie in its buffers
    (no copy of the text): text i is ``data[offsets[i]:offsets[i + 1]]``, a null empty."""
    _, offsets_buffer, data_buffer = column.buffers()
    wide = str(column.type) == "large_string"
    offsets = np.frombuffer(offsets_buffer, np.int64 if wide else np.int32)
    offsets = offsets[column.offset : column.offset + len(column) + 1].astype(np.int64)
    data = (
        np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    )
    return offsets, data


def digest_many(
    hasher: Simhasher,
    docs: list[Any],
    *,
    threads: int | None = None,
    sketch: tuple[int, int] | None = None,
    start: int = 0,
    name: str = "docs",
    seen: _core.KeySet | None = None,
    into: _core.HashBuffer | None = None,
) -> Digest:
    """The first pass of dedup over a chunk of documents (see :mod:`neardup.digest`): their
    fingerprints, content keys and, with ``sketch=(shingle, size)``, bottom-``size`` shingle
    sketches, in one call into the core where it can. Document i is named ``name[start + i]``
    in errors. A text (of one field) that ``seen`` holds takes the fingerprint recorded there and
    no sketch: it is a copy of one digested before (see :class:`neardup.pipeline.FirstPass`).

    With ``into`` (and ``sketch``, without a Python tokenizer), the core appends the sketches
    there, where they are kept, each text's at its first occurrence only (a copy of a text of
    ``seen`` or of one earlier in ``docs`` has an empty sketch): the digest's sketches are then
    ranges of a read-only view of what was appended (``into`` cannot grow while it lives)."""
    if into is not None and (sketch is None or hasher._tokenize is not None):
        raise ValueError("into= needs a sketch and the core's tokens")
    if hasher._tokenize is None:
        folding = hasher.fields is None
        columns = (
            hasher._folding_column(docs, start, name)
            if folding
            else hasher._text_columns(docs, start, name)
        )
        fold = hasher._fold() if folding else {}
        digest = functools.partial(
            hasher._inner.digest_many, sketch=sketch, seen=seen, into=into, **fold
        )
        before = len(into) if into is not None else 0
        fps, keys, sketches = _call(digest, columns, start, name, threads)
        if into is not None and sketches is not None:
            offsets = sketches[0]
            sketches = (offsets, into.view(before, before + int(offsets[-1])))
        return Digest.of(fps, keys, sketches)
    # A Python tokenizer: the fingerprints from its tokens; keys and sketches from the text.
    columns = hasher._text_columns(docs, start, name)
    fps = _call(
        hasher._inner.fingerprint_tokens_many,
        hasher._token_columns(columns, start, name),
        start,
        name,
        threads,
    )
    texts = ["\n".join(doc) for doc in zip(*columns)] if len(columns) > 1 else columns[0]
    shingle, size = sketch if sketch is not None else (1, 1)
    offsets, hashes, keys = _core.shingle_sketches(texts, shingle, size, threads)
    return Digest.of(fps, keys, (offsets, hashes) if sketch is not None else None)


#: The settings of a Simhasher, frozen once it is made (see Simhasher.replace).
_SETTINGS = (
    "tokens",
    "ngram",
    "weighting",
    "unicode_form",
    "casefold",
    "stopwords",
    "fields",
    "tokenizer",
)


def _field_weights(fields: Mapping[str, float] | None) -> dict[str, float] | None:
    if fields is None:
        return None
    if not isinstance(fields, Mapping) or not fields:
        raise TypeError(
            'fields must be a non-empty dict of field name to weight, such as {"title": 2, "body": 1}'
        )
    out: dict[str, float] = {}
    for name, weight in fields.items():
        if not isinstance(name, str):
            raise TypeError(f"field names must be str, got {type(name).__name__}")
        if isinstance(weight, bool) or not isinstance(
            weight, (int, float, np.integer, np.floating)
        ):
            raise TypeError(
                f"the weight of field {name!r} must be a number, got {type(weight).__name__}"
            )
        if not (float(weight) > 0 and np.isfinite(weight)):
            raise ValueError(f"the weight of field {name!r} must be positive, got {weight!r}")
        out[name] = float(weight)
    return out
