"""Simhasher: the configuration that turns documents into 64-bit fingerprints."""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, TypedDict

import numpy as np

from . import _core
from .digest import Digest
from .normalize import UnicodeForm, normalizer
from .stopwords import ENGLISH
from .validate import check_threads, check_unicode

Document = str | bytes | Mapping[str, Any]
Tokenizer = Callable[[str], Iterable[str]]
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

#: Documents per call into the core: large enough to amortize the call, small enough that a
#: progress bar moves and Ctrl-C is handled between chunks.
CHUNK_SIZE = 16_384


class Simhasher:
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
        for start, chunk in _chunks(corpus, CHUNK_SIZE, "corpus"):
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
        total = _length(docs)
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
            method = functools.partial(method, fold_ascii=self.casefold)
        try:
            for start, chunk in _chunks(docs, chunk_size, "docs"):
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
    ) -> tuple[Any, ...]:
        """The core's JSONL fast path (:mod:`neardup.io.jsonl`) over one block of lines: (kinds,
        fingerprints, lengths, line starts, content keys, sketches), the lines in ``wanted``
        alone where given."""
        args = [self._inner, data, text_field, id_field, self.casefold, sketch, threads]
        return _core.jsonl_fingerprints(*args, *([] if wanted is None else [wanted]))

    def _digest(
        self,
        chunk: list[Any],
        start: int,
        name: str,
        threads: int | None,
        sketch: tuple[int, int] | None,
    ) -> Digest:
        """Fingerprints, content keys and (with ``sketch=(ngram, size)``) shingle sketches of a
        chunk of documents, in one call into the core where it can."""
        if self._tokenize is None:
            folding = self.fields is None
            columns = (
                self._folding_column(chunk, start, name)
                if folding
                else self._text_columns(chunk, start, name)
            )
            got = _call(
                self._inner.digest_many,
                columns,
                start,
                name,
                threads,
                folding and self.casefold,
                sketch,
            )
            return Digest.of(*got)
        # A Python tokenizer: the fingerprints from its tokens; keys and sketches from the text.
        columns = self._text_columns(chunk, start, name)
        fps = _call(
            self._inner.fingerprint_tokens_many,
            self._token_columns(columns, start, name),
            start,
            name,
            threads,
        )
        texts = ["\n".join(doc) for doc in zip(*columns)] if len(columns) > 1 else columns[0]
        ngram, size = sketch if sketch is not None else (1, 1)
        offsets, hashes, keys = _core.shingle_sketches(texts, ngram, size, threads)
        return Digest.of(fps, keys, (offsets, hashes) if sketch is not None else None)

    # -- documents to columns of normalized text ----------------------------------------------

    def _feature_core(self) -> Any:
        """A core hasher with these features, whatever the weighting (for feature sets)."""
        return self._build("tf") if isinstance(self._inner, _Unfitted) else self._inner

    def _columns(self, chunk: list[Any], start: int, name: str) -> Any:
        """One list per field of normalized texts, or with a tokenizer of their tokens."""
        columns = self._text_columns(chunk, start, name)
        return columns if self._tokenize is None else self._token_columns(columns, start, name)

    def _token_columns(
        self, columns: list[list[str]], start: int, name: str
    ) -> list[list[list[str]]]:
        """The tokenizer's tokens of columns of normalized texts."""
        return [
            [self._tokens(text, f"{name}[{start + i}]") for i, text in enumerate(column)]
            for column in columns
        ]

    def _tokens(self, text: str, label: str) -> list[str]:
        """The tokenizer's tokens of one normalized text, checked."""
        assert self._tokenize is not None
        tokens = self._tokenize(text)
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
            raise TypeError(
                f"the tokenizer must return a list of str, got {type(tokens).__name__} for {label}"
            )
        tokens = tokens if isinstance(tokens, list) else list(tokens)
        for j, token in enumerate(tokens):
            if not isinstance(token, str):
                raise TypeError(
                    f"the tokenizer returned {type(token).__name__} as token {j} of {label}; expected str"
                )
        return tokens

    def _folding_column(self, chunk: list[Any], start: int, name: str) -> list[list[str]]:
        """The texts of one-field documents for the core's folding path: an ASCII ``str`` goes as
        it is (every Unicode form leaves ASCII alone, and with ``casefold`` the core folds its
        capitals on all cores), any other document is normalized here."""
        isascii, normalize = str.isascii, self._normalize
        try:
            return [[doc if isascii(doc) else normalize(doc) for doc in chunk]]
        except TypeError:
            return self._text_columns(chunk, start, name)

    def _text_columns(self, chunk: list[Any], start: int, name: str) -> list[list[str]]:
        """One list of normalized texts per field, checking every document."""
        if self.fields is None:
            try:
                column = [self._normalize(doc) for doc in chunk]
            except TypeError:
                column = [self._text(doc, f"{name}[{start + i}]") for i, doc in enumerate(chunk)]
            return [column]
        columns: list[list[str]] = [[] for _ in self.fields]
        for i, doc in enumerate(chunk):
            if not isinstance(doc, Mapping):
                raise TypeError(
                    f"{name}[{start + i}] is {type(doc).__name__}: with fields= set, each document "
                    f"is a dict with keys among {list(self.fields)}"
                )
            for column, field in zip(columns, self.fields):
                value = doc.get(field)
                label = f"{name}[{start + i}][{field!r}]"
                column.append("" if value is None else self._text(value, label))
        return columns

    def _text(self, doc: Any, label: str) -> str:
        """One document's text, normalized; ``label`` names it in errors."""
        if isinstance(doc, str):
            return self._normalize(doc)
        if isinstance(doc, (bytes, bytearray, memoryview)):
            try:
                return self._normalize(bytes(doc).decode("utf-8"))
            except UnicodeDecodeError as err:
                raise ValueError(
                    f"{label} is not valid UTF-8: byte {err.start} ({bytes(doc)[err.start : err.start + 1]!r}) "
                    f"cannot start or continue a character"
                ) from None
        if doc is None:
            raise TypeError(f"{label} is None; expected str or bytes")
        if isinstance(doc, Mapping):
            raise TypeError(
                f"{label} is a dict: pass fields={{...}} to Simhasher to weigh its fields"
            )
        raise TypeError(f"{label} is {type(doc).__name__}; expected str or bytes")


def _method(inner: Any, name: str, tokenizer: Any) -> Any:
    """The core method for texts, or its twin for pre-split tokens when there is a tokenizer."""
    if tokenizer is None:
        return getattr(inner, name)
    twins = {
        "fingerprint_many": "fingerprint_tokens_many",
        "document_frequencies": "document_frequencies_tokens",
        "weighted_features": "weighted_features_tokens",
    }
    return getattr(inner, twins[name])


def _tokenizer(tokenizer: Any, tokens: str) -> Tokenizer | None:
    """The tokenizing function of a ``tokenizer=`` setting."""
    if tokenizer is None:
        return None
    if tokens != "word":
        raise ValueError(
            f'tokenizer= cuts text into word tokens: it needs tokens="word", not {tokens!r}'
        )
    if isinstance(tokenizer, str):
        if tokenizer != "jieba":
            raise ValueError(
                f'tokenizer must be "jieba" or a function from str to a list of str, got {tokenizer!r}'
            )
        return _jieba()
    if not callable(tokenizer):
        raise TypeError(
            f'tokenizer must be "jieba" or a function from str to a list of str, got {type(tokenizer).__name__}'
        )
    return tokenizer


def _jieba() -> Tokenizer:
    """jieba's word segmentation (accurate mode), imported on first use."""
    try:
        with warnings.catch_warnings():
            # jieba 0.42 imports pkg_resources, which newer setuptools deprecate on import.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)  # its regexes' escapes, on newer Pythons
            import jieba  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError(
            "tokenizer=\"jieba\" needs the jieba package: pip install 'neardup[zh]'"
        ) from None
    lcut: Tokenizer = jieba.lcut
    return lcut


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


class _Unfitted:
    """Stands in for the core hasher of an idf Simhasher before fit()."""

    def __getattr__(self, name: str) -> Any:
        raise ValueError('weighting="idf" needs document frequencies: call fit(corpus) first')


def _stopword_list(stopwords: Any, normalize: Any) -> tuple[str, ...] | None:
    if stopwords is None or stopwords is False:
        return None
    if stopwords is True or (isinstance(stopwords, str) and stopwords == "english"):
        return _sorted_english(normalize)
    if isinstance(stopwords, str):
        raise ValueError(f'stopwords must be "english" or a list of words, got {stopwords!r}')
    words = list(stopwords)
    for w in words:
        if not isinstance(w, str):
            raise TypeError(f"stopwords must be strings, got {type(w).__name__}")
    return tuple(sorted({normalize(w) for w in words}))


def _sorted_english(normalize: Any) -> tuple[str, ...]:
    return tuple(sorted({normalize(w) for w in ENGLISH}))


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


def _call(method: Any, columns: Any, start: int, name: str, *args: Any) -> Any:
    """Calls the core on columns of texts; a text the core cannot take as UTF-8 is named."""
    try:
        return method(columns, *args)
    except UnicodeEncodeError:
        _raise_unencodable(columns, start, name)
        raise


def _raise_unencodable(columns: list[list[str]] | list[str], start: int, name: str) -> None:
    """Lone surrogates cannot cross into the core as UTF-8: say which document holds one."""
    if isinstance(columns, str):
        flat: Any = [[columns]]
    else:
        flat = [columns] if columns and isinstance(columns[0], str) else columns
    if flat and flat[0] and isinstance(flat[0][0], list):
        # Pre-split tokens (a tokenizer): one token list per document.
        flat = [[" ".join(tokens) for tokens in column] for column in flat]
    for column in flat:
        for i, text in enumerate(column):
            check_unicode(text, f"{name}[{start + i}]")


def _length(docs: Any) -> int | None:
    if isinstance(docs, (str, bytes, bytearray)):
        raise TypeError(
            f"docs must be an iterable of documents, not a single {type(docs).__name__}: "
            f"wrap one text in a list, or use fingerprint()"
        )
    if isinstance(docs, Mapping):
        raise TypeError(
            "docs must be an iterable of documents, not a dict: wrap one document in a list"
        )
    try:
        return len(docs)
    except TypeError:
        return None


def _iter_docs(docs: Any) -> Iterator[Any]:
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


def _chunks(docs: Any, size: int, name: str) -> Iterator[tuple[int, list[Any]]]:
    _length(docs)
    if isinstance(docs, list):
        for start in range(0, len(docs), size):
            yield start, docs[start : start + size]
        return
    iterator = _iter_docs(docs)
    start = 0
    while True:
        chunk = list(itertools.islice(iterator, size))
        if not chunk:
            return
        yield start, chunk
        start += len(chunk)
