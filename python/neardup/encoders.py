"""The seeds' other encoders: a sparse top-N document encoder, simhash of dense vectors by random
hyperplanes, and a minhash-style cluster key.

* :class:`SparseEncoder` (seed 001): each token hashed to ``size`` bits, +1/-1 column sums, and
  the ``active`` largest sums as the active bits of a sparse binary code.
* :class:`VectorSimhash` (seed 003): the sign of the dot product with 64 random Gaussian
  hyperplanes, so that embeddings get fingerprints that :class:`~neardup.SimhashIndex`,
  :func:`~neardup.find_all` and :func:`~neardup.cluster` take as they are.
* :func:`minhash_key` and :func:`group_by_key` (seed 004): the XOR of the ``restrictiveness``
  smallest distinct feature hashes, a cluster key that needs no other document.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from . import _core
from .chunks import CHUNK_SIZE, in_chunks, refuse_mapping
from .columns import call_with_columns
from .fingerprints import as_fingerprints
from .hasher import Document, Simhasher
from .validate import check_threads, check_unicode, integer

__all__ = [
    "SparseEncoder",
    "VectorSimhash",
    "group_by_key",
    "minhash_key",
    "minhash_key_many",
]


def _tokens(tokens: Any, name: str = "tokens") -> list[str]:
    """A list of str, with a clear error for anything else."""
    if isinstance(tokens, (str, bytes, bytearray)):
        raise TypeError(
            f"{name} must be a list of str, not a single {type(tokens).__name__}: "
            f"split the text into tokens first, e.g. text.split()"
        )
    if isinstance(tokens, Mapping) or not isinstance(tokens, Iterable):
        raise TypeError(f"{name} must be a list of str, got {type(tokens).__name__}")
    items = tokens if isinstance(tokens, list) else list(tokens)
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is {type(t).__name__}; expected str")
    return items


def _token_list(tokens: Any, name: str) -> Any:
    """A token list as the core takes it, without looking at each token (the core checks them)."""
    if isinstance(tokens, list):
        return tokens
    if isinstance(tokens, (str, bytes, bytearray, Mapping)) or not isinstance(tokens, Iterable):
        return _tokens(tokens, name)  # raises the TypeError that says what to pass
    return list(tokens)


def _no_surrogates(items: list[str], name: str) -> None:
    for i, t in enumerate(items):
        check_unicode(t, f"{name}[{i}]")


# -- sparse encoder -------------------------------------------------------------------------------


class SparseEncoder:
    """A simhash document encoder with a sparse output (seed 001): of ``size`` bits, the
    ``active`` bits with the largest column sums are set.

    Each token is hashed to ``size`` bits, a 0 bit counts -1 and a 1 bit +1 (times the token's
    weight), the rows are summed column by column, and the ``active`` largest sums become the
    active bits. Among equal sums the lower bit index wins, so the output is deterministic and
    always has exactly ``active`` bits (an empty token list activates bits ``0 .. active-1``).

    The hash of a token is extendable to any length: FNV-1a 64 of its UTF-8 seeds a SplitMix64
    stream, and bits ``64j .. 64j+63`` are output ``j`` of that stream. FNV-1a alone cannot be
    stretched past 64 bits without correlated words (continuing it over a counter mostly changes
    the low bits); SplitMix64 spreads every bit of the FNV-1a hash over every output bit, and any
    word is computed directly.

    Args:
        size: bits in the encoding, 1 to 2**20.
        active: bits set, 1 to ``size``.
        token_similarity: add each character of each token as well (after the token), so that
            tokens spelled alike get overlapping codes.
        weights: optional weight per token, ``{"apple": 3, "the": 0.5}``; tokens not in it weigh
            1, and a token's characters weigh what the token does.

    Example:
        >>> enc = SparseEncoder(size=2048, active=40)
        >>> a = enc.encode("the quick brown fox jumps over the lazy dog".split())
        >>> b = enc.encode("the quick brown fox jumped over the lazy dog".split())
        >>> len(a), len(np.intersect1d(a, b)) > 20
        (40, True)
    """

    def __init__(
        self,
        size: int = 2048,
        active: int = 40,
        token_similarity: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        size = integer(size, "size")
        active = integer(active, "active")
        if not isinstance(token_similarity, (bool, np.bool_)):
            raise TypeError(
                f"token_similarity must be a bool, got {type(token_similarity).__name__}"
            )
        pairs: list[tuple[str, float]] | None = None
        if weights is not None:
            if not isinstance(weights, Mapping):
                raise TypeError(
                    f"weights must be a dict of token to weight, got {type(weights).__name__}"
                )
            pairs = []
            for token, w in weights.items():
                if not isinstance(token, str):
                    raise TypeError(f"weights keys must be str tokens, got {type(token).__name__}")
                if isinstance(w, bool) or not isinstance(
                    w, (numbers.Real, np.integer, np.floating)
                ):
                    raise TypeError(
                        f"the weight of {token!r} must be a number, got {type(w).__name__}"
                    )
                if not math.isfinite(float(w)):
                    raise ValueError(f"the weight of {token!r} must be finite, got {w!r}")
                pairs.append((token, float(w)))
            _no_surrogates([t for t, _ in pairs], "weights")
        self._inner = _core.Sparse(size, active, bool(token_similarity), pairs)
        self.size = size
        self.active = active
        self.token_similarity = bool(token_similarity)
        self.weights = dict(weights) if weights is not None else None

    def __repr__(self) -> str:
        weights = "" if self.weights is None else f", weights=<{len(self.weights)} tokens>"
        return (
            f"SparseEncoder(size={self.size}, active={self.active}, "
            f"token_similarity={self.token_similarity}{weights})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (SparseEncoder, (self.size, self.active, self.token_similarity, self.weights))

    def _call(self, method: Any, tokens: Any, name: str, *args: Any) -> Any:
        """Calls the core on a token list (or lists); what it cannot take is named on failure,
        so that the common case pays for no check per token in Python."""
        try:
            return method(tokens, *args)
        except TypeError:
            if name == "tokens":
                _tokens(tokens, name)
            else:
                for i, doc in enumerate(tokens):
                    _tokens(doc, f"{name}[{i}]")
            raise
        except UnicodeEncodeError:
            lists = [tokens] if name == "tokens" else tokens
            for i, doc in enumerate(lists):
                _no_surrogates(doc, name if name == "tokens" else f"{name}[{i}]")
            raise

    def token_hash(self, token: str) -> np.ndarray:
        """The ``size`` hash bits of one token as a ``bool`` array, bit i at index i."""
        if not isinstance(token, str):
            raise TypeError(f"token must be a str, got {type(token).__name__}")
        _no_surrogates([token], "token")
        words = _core.extended_hash(token, -(-self.size // 64))
        return np.unpackbits(words.view(np.uint8), bitorder="little")[: self.size].astype(bool)

    def sums(self, tokens: Iterable[str]) -> np.ndarray:
        """The ``size`` column sums of a token list (``float64``; whole numbers without weights)."""
        return self._call(self._inner.sums, _token_list(tokens, "tokens"), "tokens")

    def sums_of_hashes(self, hashes: Any, weights: Any = None) -> np.ndarray:
        """The column sums of hash rows given by hand: ``hashes`` is an array of shape
        ``(rows, size)`` of 0/1 (bit i of a row at column i), summed +w where a bit is 1 and -w
        where it is 0, with ``weights`` one per row (1 by default).

        This is the summation step of :meth:`encode` on hashes of your choosing, such as the
        9-bit hand-worked example of seed 001.
        """
        rows = np.asarray(hashes)
        if rows.ndim != 2 or rows.shape[1] != self.size:
            raise ValueError(f"hashes must have shape (rows, size={self.size}), got {rows.shape}")
        if rows.dtype.kind not in "biu" or (rows.size and not np.isin(rows, (0, 1)).all()):
            raise ValueError("hashes must hold only 0 and 1 (or bools)")
        words = -(-self.size // 64)
        padded = np.zeros((rows.shape[0], words * 64), dtype=np.uint8)
        padded[:, : self.size] = rows
        packed = (
            np.packbits(padded, axis=1, bitorder="little").view("<u8").astype(np.uint64).ravel()
        )
        w = None
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (rows.shape[0],):
                raise ValueError(
                    f"weights must have one number per row: {rows.shape[0]} rows, shape {w.shape}"
                )
        return self._inner.sums_of_words(np.ascontiguousarray(packed), w)

    def select(self, sums: Any) -> np.ndarray:
        """The indices (``int64``, ascending) of the ``active`` largest of ``size`` sums; among
        equal sums the lower index wins."""
        array = np.asarray(sums)
        if array.dtype.kind not in "iuf" or array.ndim != 1:
            raise ValueError(
                f"sums must be a one-dimensional array of numbers, got {array.dtype} of shape {array.shape}"
            )
        return self._inner.select(np.ascontiguousarray(array, dtype=np.float64))

    def encode(self, tokens: Iterable[str]) -> np.ndarray:
        """The active bits of a token list: ``active`` indices (``int64``), ascending."""
        return self._call(self._inner.encode, _token_list(tokens, "tokens"), "tokens")

    def encode_dense(self, tokens: Iterable[str]) -> np.ndarray:
        """The encoding of a token list as a ``bool`` array of ``size`` bits."""
        out = np.zeros(self.size, dtype=bool)
        out[self.encode(tokens)] = True
        return out

    def encode_many(
        self, docs: Iterable[Iterable[str]], *, threads: int | None = None
    ) -> np.ndarray:
        """The active bits of many token lists, on all cores: an ``int64`` array of shape
        ``(len(docs), active)``, row i for ``docs[i]``."""
        if isinstance(docs, (str, bytes)):
            raise TypeError("docs must be a list of token lists, not a single str")
        refuse_mapping(docs)
        lists = [_token_list(doc, f"docs[{i}]") for i, doc in enumerate(docs)]
        flat = self._call(self._inner.encode_many, lists, "docs", check_threads(threads))
        return flat.reshape(len(lists), self.active)


# -- simhash of dense vectors ---------------------------------------------------------------------


class VectorSimhash:
    """Simhash of dense vectors by random hyperplanes (Charikar 2002; seed 003).

    ``bits`` hyperplanes through the origin have normals of independent standard normal
    components, drawn reproducibly from ``seed``; bit i of a vector's fingerprint is 1 iff its dot
    product with normal i is positive. Two vectors at angle θ differ in each bit with probability
    θ/π, so the Hamming distance of their fingerprints estimates their angle, and embeddings can
    be deduplicated with :class:`~neardup.SimhashIndex`, :func:`~neardup.find_all` and
    :func:`~neardup.cluster` like text fingerprints.

    The normals are the same on every platform for a given ``(dim, seed)`` (xoshiro256** seeded
    by SplitMix64, Marsaglia's polar method with a portable logarithm), and the first b normals
    do not depend on ``bits`` >= b. A zero vector has fingerprint 0.

    Args:
        dim: the vectors' dimension, 1 to 2**20.
        bits: fingerprint bits (hyperplanes), 1 to 64; with fewer than 64 the high bits are 0.
        seed: any int in 0 .. 2**64-1.

    Example:
        >>> vs = VectorSimhash(dim=3, seed=1)
        >>> a, b = vs.fingerprint([1.0, 2.0, 3.0]), vs.fingerprint([1.0, 2.1, 3.0])
        >>> from neardup import hamming
        >>> hamming(a, b) < 10
        True
    """

    def __init__(self, dim: int, bits: int = 64, seed: int = 0) -> None:
        dim = integer(dim, "dim")
        bits = integer(bits, "bits")
        seed = integer(seed, "seed")
        if not 0 <= seed < 1 << 64:
            raise ValueError(f"seed must be in 0..2**64-1, got {seed}")
        self._inner = _core.Hyperplanes(dim, bits, seed)
        self.dim = dim
        self.bits = bits
        self.seed = seed

    def __repr__(self) -> str:
        return f"VectorSimhash(dim={self.dim}, bits={self.bits}, seed={self.seed})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (VectorSimhash, (self.dim, self.bits, self.seed))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VectorSimhash):
            return NotImplemented
        return (self.dim, self.bits, self.seed) == (other.dim, other.bits, other.seed)

    def __hash__(self) -> int:
        return hash((self.dim, self.bits, self.seed))

    @property
    def hyperplanes(self) -> np.ndarray:
        """The normals as a ``float64`` array of shape ``(bits, dim)``, row i for bit i."""
        return self._inner.normals().reshape(self.bits, self.dim)

    def _matrix(self, matrix: Any, name: str) -> np.ndarray:
        array = matrix if isinstance(matrix, np.ndarray) else np.asarray(matrix)
        if array.dtype.kind not in "fiu" or array.dtype.kind == "f" and array.dtype.itemsize > 8:
            raise TypeError(
                f"{name} must hold real numbers (float32, float64 or ints), got dtype {array.dtype}"
            )
        dtype = np.float32 if array.dtype == np.float32 else np.float64
        return np.ascontiguousarray(array, dtype=dtype)

    def fingerprint(self, vector: Any) -> int:
        """The fingerprint of one vector of ``dim`` finite numbers, as an int."""
        array = self._matrix(vector, "vector")
        if array.ndim != 1 or array.shape[0] != self.dim:
            raise ValueError(
                f"vector must be one-dimensional with dim={self.dim} numbers, got shape {array.shape}"
            )
        return int(self.fingerprint_many(array.reshape(1, -1))[0])

    def fingerprint_many(self, matrix: Any, *, threads: int | None = None) -> np.ndarray:
        """Fingerprints of the rows of an ``(n, dim)`` matrix as a ``uint64`` array, on all
        cores with the GIL released. float32 and float64 matrices are read in place (C order);
        other real arrays are converted to float64."""
        array = self._matrix(matrix, "matrix")
        if array.ndim != 2 or array.shape[1] != self.dim:
            raise ValueError(f"matrix must have shape (n, dim={self.dim}), got {array.shape}")
        if array.dtype == np.float32:
            return self._inner.fingerprint_many_f32(array, check_threads(threads))
        return self._inner.fingerprint_many_f64(array, check_threads(threads))


# -- minhash cluster keys -------------------------------------------------------------------------

#: The features of :func:`minhash_key` when no hasher is given: word 4-shingles of the normalized
#: text. Seed 004 found 3-grams good on lyrics; on the Debian corpus, at the default
#: restrictiveness 3, 4-shingles scored best (F1 0.525 against 0.321 for 3-shingles; the table
#: is benches/results/minhash_quality.md, from benches/minhash_quality.py).
DEFAULT_MINHASH_NGRAM = 4
_DEFAULT_HASHER: Simhasher | None = None


def _restrictiveness(r: Any) -> int:
    r = integer(r, "restrictiveness")
    if not 1 <= r <= 1024:
        raise ValueError(f"restrictiveness must be in 1..=1024, got {r}")
    return r


def _hasher(hasher: Any) -> Simhasher:
    global _DEFAULT_HASHER
    if hasher is None:
        if _DEFAULT_HASHER is None:
            _DEFAULT_HASHER = Simhasher(ngram=DEFAULT_MINHASH_NGRAM)
        return _DEFAULT_HASHER
    if not isinstance(hasher, Simhasher):
        raise TypeError(f"hasher must be a neardup.Simhasher, got {type(hasher).__name__}")
    return hasher


def minhash_key(
    text_or_features: Document | Iterable[str],
    restrictiveness: int = 3,
    hasher: Simhasher | None = None,
) -> int:
    """A minhash-style cluster key (seed 004): the XOR of the ``restrictiveness`` smallest
    distinct FNV-1a 64 feature hashes (of all of them if there are fewer; 0 for none).

    Two documents whose feature sets have Jaccard similarity J get the same key with probability
    C(|A∩B|, r) / C(|A∪B|, r), about J**r for sets much larger than r: a key is a cluster that
    needs no other document, stable when unrelated documents come and go.

    Args:
        text_or_features: a text (``str`` or UTF-8 ``bytes``; a dict document with
            ``hasher.fields``), cut into features by ``hasher``; or a list of features (``str``),
            used as they are.
        restrictiveness: r, 1 to 1024; larger keys need more shared features to match.
        hasher: the :class:`Simhasher` whose features make the set of a text (its weighting is
            not used); by default word 4-shingles, ``Simhasher(ngram=4)``.

    Example:
        >>> minhash_key(["a", "b", "c"], restrictiveness=3) == minhash_key(["c", "b", "a", "a"])
        True
    """
    r = _restrictiveness(restrictiveness)
    h = _hasher(hasher)
    if isinstance(text_or_features, (str, bytes, bytearray, memoryview, Mapping)):
        return int(_keys_of(h, [text_or_features], r, None, "text_or_features")[0])
    features = _tokens(text_or_features, "text_or_features")
    try:
        hashes = _core.fnv1a_64_many(features)
    except UnicodeEncodeError:
        _no_surrogates(features, "text_or_features")
        raise
    return int(_core.minhash_key(hashes, r))


def minhash_key_many(
    docs: Iterable[Document],
    restrictiveness: int = 3,
    hasher: Simhasher | None = None,
    *,
    threads: int | None = None,
) -> np.ndarray:
    """:func:`minhash_key` of many documents as a ``uint64`` array, computed on all cores.

    ``docs`` is a list or any iterable of texts (or dict documents), as for
    :meth:`Simhasher.fingerprint_many`.
    """
    r = _restrictiveness(restrictiveness)
    h = _hasher(hasher)
    parts = [
        _keys_of(h, chunk, r, threads, "docs", start)
        for start, chunk in in_chunks(docs, CHUNK_SIZE, "docs")
    ]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def _keys_of(
    h: Simhasher, chunk: list[Any], r: int, threads: Any, name: str, start: int = 0
) -> np.ndarray:
    function = _core.minhash_keys_tokens if h.tokenizer is not None else _core.minhash_keys
    return call_with_columns(h, function, chunk, start, name, r, check_threads(threads))


def group_by_key(keys: Any) -> np.ndarray:
    """Cluster labels (``int64``) of keys: rows with equal keys share a label, the smallest row
    holding that key, as :func:`~neardup.cluster` labels its clusters.

    Example:
        >>> group_by_key(np.array([7, 3, 7, 9], dtype=np.uint64)).tolist()
        [0, 1, 0, 3]
    """
    return _core.group_by_key(as_fingerprints(keys, "keys"))
