"""A drop-in face for users of the ``simhash`` package from PyPI (1e0n's pure-Python simhash).

``Simhash`` and ``SimhashIndex`` take the same arguments and give the same fingerprints and the
same near-duplicate sets as ``simhash`` 2.x, computed by neardup's core: MD5 feature hashes and
tallies in Rust, and the near-duplicate search in :class:`neardup.SimhashIndex`. Change
``from simhash import Simhash, SimhashIndex`` to ``from neardup.compat import Simhash,
SimhashIndex``.

The package's default features of a text are the windows of 4 characters of the lowercased text
with every character its ``reg`` does not match removed; each feature is hashed with MD5 and the
last ``f / 8`` bytes of the digest are its hash, read big-endian. Bit i of a fingerprint is 1 iff
the features with bit i set weigh more than half of all the weight.

Differences: ``f`` goes up to 64 (the package also allows 128 and more); ``k`` of the index goes
up to 16; ``SimhashIndex.bucket_size()`` is not provided (there are no buckets); a bad argument
raises ``TypeError``/``ValueError`` where the package raises ``Exception`` or ``AssertionError``.
With float weights, a tally within rounding error of its threshold may round the other way.
"""

from __future__ import annotations

import logging
import numbers
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import _core
from .fingerprints import simhash_hashes
from .index import SimhashIndex as _Index
from .validate import MAX_K

__all__ = ["Simhash", "SimhashIndex", "simhash_many"]

#: The package's default: runs of word characters and CJK ideographs.
DEFAULT_REG = r"[\w\u4e00-\u9fcc]+"

HashFunc = Callable[[bytes], bytes | int]


def _check_f(f: Any) -> int:
    if isinstance(f, bool) or not isinstance(f, numbers.Integral):
        raise TypeError(f"f must be an int, got {type(f).__name__}")
    f = int(f)
    if f % 8:
        raise ValueError("f must be a multiple of 8")
    if not 8 <= f <= 64:
        raise ValueError(f"f must be 8 to 64 bits in neardup.compat, got {f}")
    return int(f)


def _clean(content: str, reg: Any) -> str:
    """The package's text cleaning: lowercase, then keep only what ``reg`` matches."""
    return "".join(re.findall(reg, content.lower()))


def _slide(content: str, width: int = 4) -> list[str]:
    return [content[i : i + width] for i in range(max(len(content) - width + 1, 1))]


def simhash_many(
    texts: Iterable[str], f: int = 64, reg: Any = DEFAULT_REG, *, threads: int | None = None
) -> np.ndarray:
    """``Simhash(text, f, reg).value`` of many texts as a ``uint64`` array, on all cores.

    Example:
        >>> int(simhash_many(["How are you? I am fine."])[0]) == Simhash("How are you? I am fine.").value
        True
    """
    f = _check_f(f)
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a list of str, not a single str")
    cleaned = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}; expected str")
        cleaned.append(_clean(text, reg))
    fps = _windows(cleaned, threads)
    return fps & np.uint64((1 << f) - 1) if f < 64 else fps


def _windows(cleaned: list[str], threads: int | None = None) -> np.ndarray:
    try:
        return _core.compat_windows_many(cleaned, threads)
    except UnicodeEncodeError:
        # The package hashes what str.encode("utf-8") gives, which refuses lone surrogates too.
        for text in cleaned:
            text.encode("utf-8")
        raise


class Simhash:
    """A fingerprint, as ``simhash.Simhash`` computes it.

    Args:
        value: a text (its default features are computed), an iterable of features (``str``, or
            ``(str, weight)`` pairs, or a dict of feature to weight), an int (the fingerprint
            itself) or another ``Simhash``.
        f: fingerprint bits, a multiple of 8 up to 64.
        reg: the regex of what counts as a character of a text (default: word characters and
            CJK ideographs).
        hashfunc: the feature hash, from UTF-8 bytes to bytes (the last ``f / 8`` are used,
            big-endian) or to an int; default MD5, computed in the core.
        log: a logger (kept for compatibility).
    """

    #: The package's tuning of its numpy sums (features per batch, and the weight above which a
    #: feature is summed alone), kept so that code setting them runs unchanged: the core's
    #: tallies are exact whatever they are, so they change no fingerprint.
    large_weight_cutoff = 50
    batch_size = 200

    def __init__(
        self,
        value: Any,
        f: int = 64,
        reg: Any = DEFAULT_REG,
        hashfunc: HashFunc | None = None,
        log: Any = None,
    ) -> None:
        self.f = _check_f(f)
        self.f_bytes = self.f // 8
        self.reg = reg
        self.value: int | None = None
        self.hashfunc = hashfunc
        self.hashfunc_returns_int = hashfunc is not None and isinstance(
            hashfunc(b"test"), numbers.Integral
        )
        self.log = logging.getLogger("simhash") if log is None else log
        if isinstance(value, Simhash):
            self.value = value.value
        elif isinstance(value, str):
            self.build_by_text(value)
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            self.value = int(value)
        elif isinstance(value, Iterable) and not isinstance(value, (bytes, bytearray)):
            self.build_by_features(value)
        else:
            raise TypeError(f"Bad parameter with type {type(value)}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Simhash):
            return NotImplemented
        return self.value == other.value

    __hash__ = None  # type: ignore[assignment]  # as in the package: compared by value, not hashable

    def __repr__(self) -> str:
        return f"Simhash(0x{self.value or 0:0{self.f_bytes * 2}x}, f={self.f})"

    @property
    def _mask(self) -> int:
        return (1 << self.f) - 1

    def _tokenize(self, content: str) -> list[str]:
        return _slide(_clean(content, self.reg))

    def build_by_text(self, content: str) -> None:
        """Sets the value from a text's default features."""
        if self.hashfunc is None:
            self.value = int(_windows([_clean(content, self.reg)])[0]) & self._mask
            return
        counts: dict[str, int] = {}
        for feature in self._tokenize(content):
            counts[feature] = counts.get(feature, 0) + 1
        self.build_by_features(counts)

    def _hashes(self, features: list[str]) -> list[int]:
        if self.hashfunc is None:
            return [int(h) & self._mask for h in _core.md5_64_many(features)]
        out = []
        for feature in features:
            h = self.hashfunc(feature.encode("utf-8"))
            if self.hashfunc_returns_int:
                out.append(int(h) & self._mask)
            else:
                out.append(int.from_bytes(bytes(h)[-self.f_bytes :], "big"))
        return out

    def build_by_features(self, features: Any) -> None:
        """Sets the value from features: ``str`` (weight 1), ``(str, weight)`` pairs or a dict
        of feature to weight.

        As in the package, a bare ``str`` after a pair weighs what that pair did, and an int
        weight of 0 or less counts towards the total weight but sets no bit.
        """
        if isinstance(features, dict):
            features = features.items()
        names: list[str] = []
        weights: list[Any] = []
        w: Any = 1
        for item in features:
            if isinstance(item, str):
                name = item
            else:
                try:
                    name, w = item
                except (TypeError, ValueError):
                    raise TypeError(
                        f"features must be str or (str, weight) pairs, got {item!r}"
                    ) from None
                if not isinstance(name, str):
                    raise TypeError(f"a feature must be a str, got {type(name).__name__}")
                if isinstance(w, bool):
                    w = int(w)
                if not isinstance(w, (numbers.Integral, numbers.Real)):
                    raise TypeError(
                        f"the weight of feature {name!r} must be a number, got {type(w).__name__}"
                    )
            names.append(name)
            weights.append(w)
        if not names:
            self.value = 0
            return
        hashes = self._hashes(names)
        # The package adds an int weight w <= 0 to the total weight only, so its feature pulls
        # every bit towards 0 by -w: the same as a feature with all bits set of weight -w in the
        # tally rule sum(+-w) > 0.
        all_bits = self._mask
        for i, weight in enumerate(weights):
            if isinstance(weight, numbers.Integral) and weight <= 0:
                hashes[i], weights[i] = all_bits, -int(weight)
        if all(isinstance(x, numbers.Integral) for x in weights):
            weights = [int(x) for x in weights]
        else:
            weights = [float(x) for x in weights]
        self.value = simhash_hashes(hashes, weights, bits=self.f)

    def distance(self, another: Simhash) -> int:
        """The Hamming distance of the two fingerprints' ``f`` low bits."""
        if self.f != another.f:
            raise ValueError(f"distance between fingerprints of {self.f} and {another.f} bits")
        return ((int(self.value or 0) ^ int(another.value or 0)) & self._mask).bit_count()


class SimhashIndex:
    """The near-duplicates of a fingerprint among many, as ``simhash.SimhashIndex`` finds them:
    every entry within Hamming distance ``k``, found by :class:`neardup.SimhashIndex`.

    Args:
        objs: ``(obj_id, Simhash)`` pairs; ids come back as ``str``, as in the package.
        f: fingerprint bits, a multiple of 8 up to 64.
        k: the largest distance, 0 to 16.
        log: a logger (kept for compatibility).
    """

    def __init__(
        self, objs: Iterable[tuple[Any, Simhash]], f: int = 64, k: int = 2, log: Any = None
    ) -> None:
        self.f = _check_f(f)
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(f"k must be an int, got {type(k).__name__}")
        if not 0 <= k <= MAX_K:
            raise ValueError(f"k must be in 0..={MAX_K} in neardup.compat, got {k}")
        self.k: int = int(k)
        self.log = logging.getLogger("simhash") if log is None else log
        self._index: _Index = _Index(k=self.k)
        self._rows: dict[tuple[int, str], int] = {}
        self._ids: dict[int, str] = {}
        self._next: int = 0
        objs = list(objs)
        self.log.info("Initializing %s data.", len(objs))
        fps, rows = [], []
        for obj_id, simhash in objs:
            row = self._new_row(obj_id, simhash)
            if row is not None:
                fps.append(self._value(simhash))
                rows.append(row)
        if fps:
            self._index.add(np.array(fps, dtype=np.uint64), np.array(rows, dtype=np.int64))

    def _check(self, simhash: Simhash) -> None:
        if not isinstance(simhash, Simhash):
            raise TypeError(
                f"simhash must be a neardup.compat.Simhash, got {type(simhash).__name__}"
            )
        if simhash.f != self.f:
            raise ValueError(
                f"the index holds {self.f}-bit fingerprints, got one of {simhash.f} bits"
            )

    def _value(self, simhash: Simhash) -> int:
        return int(simhash.value or 0) & ((1 << self.f) - 1)

    def _new_row(self, obj_id: Any, simhash: Simhash) -> int | None:
        """A row for a new (fingerprint, id) entry, or None if the entry is already there."""
        self._check(simhash)
        key = (int(simhash.value or 0), str(obj_id))
        if key in self._rows:
            return None
        row = self._next
        self._next += 1
        self._rows[key] = row
        self._ids[row] = key[1]
        return row

    def get_near_dups(self, simhash: Simhash) -> list[str]:
        """The ids (``str``) of every entry within ``k`` of ``simhash``, each once."""
        self._check(simhash)
        return list({self._ids[row] for row, _ in self._index.query(self._value(simhash))})

    def add(self, obj_id: Any, simhash: Simhash) -> None:
        """Adds an entry; adding the same (id, fingerprint) twice keeps one."""
        row = self._new_row(obj_id, simhash)
        if row is not None:
            self._index.add([self._value(simhash)], [row])

    def delete(self, obj_id: Any, simhash: Simhash) -> None:
        """Removes the entry (id, fingerprint) if it is there."""
        self._check(simhash)
        row = self._rows.pop((int(simhash.value or 0), str(obj_id)), None)
        if row is not None:
            del self._ids[row]
            self._index.remove([row])

    @property
    def offsets(self) -> list[int]:
        """The package's block offsets (kept for compatibility; the index plans its own)."""
        return [self.f // (self.k + 1) * i for i in range(self.k + 1)]

    def get_keys(self, simhash: Simhash) -> Iterable[str]:
        """The package's bucket keys of a fingerprint (kept for compatibility)."""
        offsets = self.offsets
        for i, offset in enumerate(offsets):
            end = self.f if i == len(offsets) - 1 else offsets[i + 1]
            yield f"{int(simhash.value or 0) >> offset & ((1 << (end - offset)) - 1):x}:{i:x}"

    def __len__(self) -> int:
        return len(self._rows)
