"""How a hasher turns documents into the columns of text (or tokens) the core takes, and calls
the core on them: one column a field, the text normalized where the core cannot do it."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from . import _core
from .validate import check_unicode


class DocumentColumns:
    """The document-to-columns half of :class:`neardup.Simhasher` (its settings are the
    hasher's)."""

    fields: dict[str, float] | None
    unicode_form: str | None
    casefold: bool
    _normalize: Callable[[str], str]
    _normalize_outside_ascii: Callable[[str], str]
    _tokenize: Callable[[str], Iterable[str]] | None
    _inner: Any

    def _build(self, weighting: Any = None) -> Any:
        raise NotImplementedError

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
        """The texts of one-field documents for the core's folding path (:meth:`_fold`): a
        ``str`` the core normalizes itself goes as it is (an ASCII text, whose capitals it folds
        with ``casefold``, or one of CJK ideographs, kana, Hangul syllables, Latin, Greek and
        Cyrillic letters, punctuation, symbols and full-width forms, as ``_core.to_normalize``
        decides on its bytes); any other document is
        normalized here, its non-ASCII runs only (:func:`~neardup.normalize.outside_ascii`)."""
        try:
            # Python knows an ASCII str without reading it: the core reads the others (all of
            # them when they are most).
            ascii_ = list(map(str.isascii, chunk))
            count = sum(ascii_)
            if count == len(ascii_):
                return [chunk if isinstance(chunk, list) else list(chunk)]
            others: Sequence[int] = range(len(ascii_))
            texts = chunk
            if count * 2 > len(ascii_):
                others = list(itertools.compress(others, map(operator.not_, ascii_)))
                texts = list(map(chunk.__getitem__, others))
            rest = _core.to_normalize(texts, self.unicode_form, self.casefold)
        except (TypeError, UnicodeEncodeError):
            return self._text_columns(chunk, start, name)
        column = chunk if isinstance(chunk, list) and not rest else list(chunk)
        normalize = self._normalize_outside_ascii
        for j in rest:
            column[others[j]] = normalize(texts[j])
        return [column]

    def _fold(self) -> dict[str, Any]:
        """The core's folding of the texts of :meth:`_folding_column`: ASCII capitals with
        ``casefold``, full-width forms and wide spaces to ASCII under NFKC and NFKD, and the
        other characters the core takes (Latin, Greek and Cyrillic letters, punctuation and
        symbols) to what this normalization makes of them."""
        return {
            "fold_ascii": self.casefold,
            "fold_wide": self.unicode_form in ("NFKC", "NFKD"),
            "fold_map": True,
            "fold_form": self.unicode_form,
        }

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
        if is_missing(doc):
            raise missing_text(label, doc)
        if isinstance(doc, Mapping):
            raise TypeError(
                f"{label} is a dict: pass fields={{...}} to Simhasher to weigh its fields"
            )
        raise TypeError(f"{label} is {type(doc).__name__}; expected str or bytes")


def is_missing(value: Any) -> bool:
    """None, or a float NaN (how pandas marks a missing text)."""
    return value is None or (isinstance(value, float) and value != value)


def missing_text(label: str, value: Any) -> TypeError:
    """The error of a missing text, saying how to skip such documents."""
    return TypeError(
        f"{label} is missing ({'None' if value is None else 'NaN'}), not a text: skip the "
        'documents without one first, e.g. df.dropna(subset=["text"]) for a DataFrame '
        "(on the command line, --on-error skip)"
    )


def call_with_columns(
    hasher: DocumentColumns, function: Any, chunk: list[Any], start: int, name: str, *args: Any
) -> Any:
    """``function(core, columns, *args)``: a core function of features (such as the minhash keys)
    on a chunk of documents, as ``hasher`` lays them out. ``core`` is a core hasher with the
    hasher's features, whatever its weighting (an idf hasher need not be fitted); ``columns`` one
    list per field of normalized texts, or with a tokenizer of their tokens. Document i is named
    ``name[start + i]`` in errors."""
    core = hasher._build("tf") if isinstance(hasher._inner, _Unfitted) else hasher._inner
    columns = hasher._columns(chunk, start, name)
    return _call(lambda cols, *a: function(core, cols, *a), columns, start, name, *args)


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


class _Unfitted:
    """Stands in for the core hasher of an idf Simhasher before fit()."""

    def __getattr__(self, name: str) -> Any:
        raise ValueError('weighting="idf" needs document frequencies: call fit(corpus) first')
