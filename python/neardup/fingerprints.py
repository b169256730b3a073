"""Fingerprints from features or feature hashes, and Hamming distances."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from .hasher import Simhasher, SimhasherOptions
from .validate import check_unicode, integer, integers

if TYPE_CHECKING:
    from typing_extensions import Unpack

Fingerprints = Sequence[int] | np.ndarray

_MAX = (1 << 64) - 1


def fnv1a_64(data: str | bytes) -> int:
    """FNV-1a 64 of ``data`` (a ``str`` is hashed as its UTF-8 bytes).

    >>> hex(fnv1a_64("foobar"))
    '0x85944171f73967e8'
    """
    if not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"data must be str or bytes, got {type(data).__name__}")
    if isinstance(data, str):
        check_unicode(data, "data")
    return _core.fnv1a_64(data)


def fmix64(x: int) -> int:
    """MurmurHash3's 64-bit finalizer: a fixed bijection of 64-bit integers that spreads every
    input bit over the whole output. Applied to each FNV-1a 64 feature hash (:func:`feature_hash`).

    >>> hex(fmix64(1))
    '0xb456bcfc34c2cb2c'
    """
    x = integer(x, "x")
    if not 0 <= x <= _MAX:
        raise ValueError(f"x must be in 0..=2**64-1, got {x}")
    return _core.fmix64(x)


def feature_hash(data: str | bytes) -> int:
    """The hash of one feature as the fingerprints tally it: ``fmix64(fnv1a_64(data))``.

    >>> feature_hash("the") == fmix64(fnv1a_64("the"))
    True
    """
    if not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"data must be str or bytes, got {type(data).__name__}")
    if isinstance(data, str):
        check_unicode(data, "data")
    return _core.feature_hash(data)


def simhash_hashes(
    hashes: Iterable[int] | np.ndarray,
    weights: Iterable[float] | np.ndarray | None = None,
    bits: int = 64,
) -> int:
    """The simhash of given 64-bit feature hashes: bit i is 1 where Σ ±weight is positive.

    A feature adds its weight (1 without ``weights``) to tally i where bit i of its hash is 1 and
    subtracts it where the bit is 0. With ``bits`` < 64 only the low ``bits`` bits are used, so a
    small hand-worked example is exact:

    >>> bin(simhash_hashes([0b100101, 0b101011], weights=[4, 5], bits=6))
    '0b101011'
    """
    tallies = simhash_tallies(hashes, weights, bits)
    return sum(1 << i for i, t in enumerate(tallies) if t > 0)


def simhash_tallies(
    hashes: Iterable[int] | np.ndarray,
    weights: Iterable[float] | np.ndarray | None = None,
    bits: int = 64,
) -> np.ndarray:
    """The ``bits`` signed tallies behind :func:`simhash_hashes`, tally i at index i.

    Integer weights (or none) give an ``int64`` array (``object`` if a sum outgrows int64);
    float weights give ``float64`` sums in the order given.
    """
    if isinstance(bits, bool) or not isinstance(bits, numbers.Integral):
        raise TypeError(f"bits must be an int, got {type(bits).__name__}")
    if not 1 <= bits <= 64:
        raise ValueError(f"bits must be in 1..=64, got {bits}")
    array = as_fingerprints(hashes, "hashes")
    if weights is None:
        tallies: list[Any] = _core.tallies_int(array, None)
    else:
        w = np.asarray(list(weights) if not isinstance(weights, np.ndarray) else weights)
        if w.ndim != 1 or len(w) != len(array):
            raise ValueError(
                f"weights must have one number per hash: {len(array)} hashes, shape {w.shape}"
            )
        if w.dtype.kind in "iu" or (
            w.dtype.kind == "O"
            and all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in w)
        ):
            try:
                w = w.astype(np.int64, casting="unsafe" if w.dtype.kind == "O" else "same_kind")
            except (OverflowError, TypeError):
                raise ValueError("integer weights must fit in 64 signed bits") from None
            if w.dtype.kind == "u" or (
                len(w) and (np.asarray(weights, dtype=object) != w.astype(object)).any()
            ):
                raise ValueError("integer weights must fit in 64 signed bits")
            tallies = _core.tallies_int(array, np.ascontiguousarray(w))
        elif w.dtype.kind == "f" or (
            w.dtype.kind == "O"
            and all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in w)
        ):
            tallies = _core.tallies_float(array, np.ascontiguousarray(w, dtype=np.float64))
        else:
            raise TypeError(f"weights must be numbers, got dtype {w.dtype}")
    tallies = tallies[:bits]
    if tallies and isinstance(tallies[0], float):
        return np.array(tallies, dtype=np.float64)
    if all(-(1 << 63) <= t < (1 << 63) for t in tallies):
        return np.array(tallies, dtype=np.int64)
    return np.array(tallies, dtype=object)


def simhash_features(
    features: Iterable[str | bytes],
    weights: Iterable[float] | np.ndarray | None = None,
) -> int:
    """The simhash of features: :func:`feature_hash` of each (a ``str`` as UTF-8), then the
    tallies.

    >>> simhash_features(["the cat sat", "cat sat on"]) == simhash_hashes(
    ...     [feature_hash("the cat sat"), feature_hash("cat sat on")])
    True
    """
    if isinstance(features, (str, bytes, bytearray)):
        raise TypeError(
            "features must be a list of str or bytes, not a single one: wrap it in a list"
        )
    items = list(features)
    for i, f in enumerate(items):
        if not isinstance(f, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"features[{i}] is {type(f).__name__}; expected str or bytes")
        if isinstance(f, str):
            check_unicode(f, f"features[{i}]")
    return simhash_hashes(_core.feature_hash_many(items), weights)


_DEFAULT: Simhasher | None = None


def simhash(text: str | bytes, **options: Unpack[SimhasherOptions]) -> int:
    """The fingerprint of one text under the default settings, or ``Simhasher(**options)``, as a
    Python ``int``.

    >>> simhash("The quick brown fox") == Simhasher().fingerprint("the quick brown fox")
    True
    """
    global _DEFAULT
    if options:
        return Simhasher(**options).fingerprint(text)
    if _DEFAULT is None:
        _DEFAULT = Simhasher()
    return _DEFAULT.fingerprint(text)


def hamming(a: int, b: int) -> int:
    """The number of bits in which two fingerprints differ.

    >>> hamming(0b1011, 0b0110)
    3
    """
    return (_as_fingerprint(a, "a") ^ _as_fingerprint(b, "b")).bit_count()


def hamming_many(a: int | Fingerprints, b: Fingerprints) -> np.ndarray:
    """Distances as a ``uint8`` array: from one fingerprint to many, or element-wise.

    ``a`` is one fingerprint or an array as long as ``b``; either side may be the single one.
    """
    a_scalar = _is_scalar(a)
    b_scalar = _is_scalar(b)
    if a_scalar and b_scalar:
        raise TypeError("hamming_many needs at least one array; use hamming() for two fingerprints")
    if a_scalar:
        return _core.hamming_one_to_many(_as_fingerprint(a, "a"), as_fingerprints(b, "b"))
    if b_scalar:
        return _core.hamming_one_to_many(_as_fingerprint(b, "b"), as_fingerprints(a, "a"))
    left, right = as_fingerprints(a, "a"), as_fingerprints(b, "b")
    if len(left) != len(right):
        raise ValueError(
            f"element-wise distances need arrays of one length, got {len(left)} and {len(right)}"
        )
    return _core.hamming_pairwise(left, right)


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (numbers.Integral, np.integer)) or (
        isinstance(x, np.ndarray) and x.ndim == 0
    )


def _as_fingerprint(x: Any, name: str) -> int:
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be a 64-bit fingerprint (int), got {type(x).__name__}")
    value = int(x)
    if not 0 <= value <= _MAX:
        raise ValueError(f"{name} must be in 0..2**64-1, got {value}")
    return value


def as_fingerprints(x: Any, name: str = "fingerprints") -> np.ndarray:
    """A contiguous one-dimensional ``uint64`` array, copying only when it must.

    Signed integer arrays are accepted when no value is negative; floats, bools, strings and
    negative values are refused with a message saying what was found.
    """
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be an array of 64-bit fingerprints, got {type(x).__name__}")
    if not isinstance(x, np.ndarray):
        items = integers(x, name, 0, _MAX, "must be in 0..2**64-1")
        return np.array(items, dtype=np.uint64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {x.shape}")
    if x.dtype == np.uint64:
        return np.ascontiguousarray(x)
    if x.dtype.kind == "u":
        return x.astype(np.uint64)
    if x.dtype.kind == "i":
        if len(x) and x.min() < 0:
            raise ValueError(
                f"{name} holds negative values ({int(x.min())}): fingerprints are unsigned; if they "
                f"were stored as int64 bit patterns, pass {name}.view(numpy.uint64)"
            )
        return x.astype(np.uint64)
    if x.dtype.kind == "O":
        return as_fingerprints(x.tolist(), name)
    raise TypeError(f"{name} must be an array of unsigned 64-bit integers, got dtype {x.dtype}")
