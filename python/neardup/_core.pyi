"""The compiled core of neardup (Rust). Users call the public API in ``neardup``; these are its parts."""

import os
from typing import final

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__",
    "Hasher",
    "Index",
    "Plan",
    "cluster",
    "find_all",
    "IndexFormatError",
    "NeardupError",
    "fnv1a_64",
    "fnv1a_64_many",
    "hamming_one_to_many",
    "hamming_pairwise",
    "tallies_float",
    "tallies_int",
]

__version__: str

class NeardupError(Exception):
    """Base class of neardup's own errors."""

class IndexFormatError(NeardupError):
    """A file that is not a valid neardup index: truncated, corrupted, foreign or of a newer version."""

def fnv1a_64(data: str | bytes | bytearray | memoryview) -> int:
    """FNV-1a 64 of the bytes (a str as UTF-8)."""

def fnv1a_64_many(items: list[str | bytes]) -> npt.NDArray[np.uint64]:
    """FNV-1a 64 of each item, as a uint64 array."""

def tallies_int(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.int64] | None = None) -> list[int]:
    """The 64 tallies Σ ±w (w = 1 without weights), exact."""

def tallies_float(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float64]) -> list[float]:
    """The 64 tallies Σ ±w in float64, summed in the order given; weights must be finite."""

def hamming_one_to_many(query: int, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Distances from one fingerprint to each of many."""

def hamming_pairwise(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Element-wise distances of two equally long arrays."""

@final
class Hasher:
    """Features, weights and fingerprints of normalized text (the compiled half of Simhasher)."""

    def __new__(
        cls,
        *,
        tokens: str,
        ngram: int,
        weighting: str,
        stopwords: list[str] | None,
        field_weights: list[float],
        idf: tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]] | None = None,
    ) -> Hasher: ...
    def features(self, text: str) -> list[str]:
        """The features of one normalized text, exactly as hashed."""
    def weighted_features(self, text: str, field: int) -> list[tuple[str, float]]:
        """The features of one field of a document with the weight each adds, in summation order."""
    def fingerprint_many(self, fields: list[list[str]], threads: int | None = None) -> npt.NDArray[np.uint64]:
        """Fingerprints of documents given field by field: ``fields[f][d]``."""
    def document_frequencies(
        self, fields: list[list[str]], threads: int | None = None
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """Document frequencies of feature hashes: (sorted keys, counts)."""

@final
class Plan:
    """A block layout of the permuted-table index (see neardup.Plan for the user-facing face)."""

    @staticmethod
    def blocks(blocks: int, k: int) -> Plan:
        """`blocks` blocks as even as 64 bits allow, C(blocks, k) tables."""
    @staticmethod
    def nested(levels: list[int], k: int) -> Plan:
        """Nested splitting: the blocks of each level split the bits left by the level before."""
    @staticmethod
    def choose(k: int, n: int, memory: int | None = None, batch: bool = False) -> Plan:
        """The plan of least expected work for n fingerprints within a memory budget."""
    @property
    def k(self) -> int: ...
    @property
    def levels(self) -> list[int]: ...
    @property
    def tables(self) -> list[tuple[int, int, list[int]]]:
        """Per table: (prefix bits, prefix mask, bit permutation)."""
    def expected_candidates(self, n: float) -> float:
        """Expected candidates per query over n random fingerprints, all tables together."""
    @property
    def bytes_per_fingerprint(self) -> int: ...
    def permute(self, table: int, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """The fingerprints as table `table` stores them."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Index:
    """Permuted sorted tables, an id map, an insert buffer and tombstones, behind one lock."""

    def __new__(cls, k: int, plan: Plan | None = None, expected_size: int | None = None) -> Index: ...
    @property
    def k(self) -> int: ...
    @property
    def plan(self) -> Plan: ...
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...
    def contains(self, id: int) -> bool: ...
    def add(self, fingerprints: npt.NDArray[np.uint64], ids: npt.NDArray[np.int64] | None = None) -> None: ...
    def remove(self, ids: npt.NDArray[np.int64]) -> None: ...
    def compact(self) -> None: ...
    def _set_limits(self, limits: tuple[int, int] | None) -> None: ...
    def query(self, fingerprint: int) -> list[tuple[int, int]]: ...
    def query_many(
        self, fingerprints: npt.NDArray[np.uint64], threads: int | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]]: ...
    def save(self, path: str | os.PathLike[str]) -> None: ...
    @staticmethod
    def load(path: str | os.PathLike[str], mmap: bool = True) -> Index: ...

def find_all(
    fingerprints: npt.NDArray[np.uint64], k: int, plan: Plan | None = None, threads: int | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """Every pair (i < j) within k, each once."""

def cluster(
    fingerprints: npt.NDArray[np.uint64], k: int, plan: Plan | None = None, threads: int | None = None
) -> npt.NDArray[np.int64]:
    """Connected components of the pairs within k; a cluster's label is its smallest row."""
