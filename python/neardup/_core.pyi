"""The compiled core of neardup (Rust). Users call the public API in ``neardup``; these are its parts."""

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__",
    "DEFAULT_EXPECTED_SIZE",
    "MAX_K",
    "MAX_THREADS",
    "SHORT_TEXT_SHINGLES",
    "SHORT_TEXT_RUN_CAP",
    "SKETCH_CHECK_BIT",
    "SKETCH_HASH_BITS",
    "PART_KEY_LEAD_BITS",
    "DedupIndex",
    "Hasher",
    "HashBuffer",
    "Hyperplanes",
    "Index",
    "KeySet",
    "StarCandidates",
    "Plan",
    "Sparse",
    "cluster",
    "cluster_pairs",
    "compat_windows_many",
    "extended_hash",
    "find_all",
    "group_by_key",
    "md5_64_many",
    "minhash_key",
    "minhash_keys",
    "minhash_keys_tokens",
    "compact_jaccard",
    "compact_short_sets",
    "compact_sketches",
    "exact_sets",
    "near_jaccard",
    "neighbourhood",
    "search_cost",
    "shingle_sketches",
    "short_text_pairs",
    "search_bit_order",
    "rarity_counts",
    "merged_counts",
    "hashes_between",
    "frequent_runs",
    "prefix_lists",
    "RarityOrder",
    "Repeats",
    "REPEATS_MOST_BITS",
    "repeat_bits",
    "repeat_slots",
    "repeated_words",
    "split_run_pairs",
    "run_pairs",
    "local_pairs",
    "routed_pairs",
    "pair_blocks",
    "PREFIX_EXTRA",
    "part_keys",
    "part_pairs",
    "graph_stars",
    "sketch_jaccard",
    "sketch_jaccard_zip",
    "sketch_jaccard_parts",
    "IndexChangedError",
    "IndexFormatError",
    "NeardupError",
    "TooManyPairsError",
    "feature_hash",
    "feature_hash_many",
    "fmix64",
    "fnv1a_64",
    "fnv1a_64_many",
    "force_scalar",
    "hamming_one_to_many",
    "hamming_pairwise",
    "jsonl_fingerprints",
    "string_fingerprints",
    "newlines",
    "scalar_forced",
    "tallies_float",
    "tallies_int",
    "to_normalize",
]

__version__: str
#: The largest Hamming distance a plan or an index searches.
MAX_K: int
#: The most worker threads a call takes.
MAX_THREADS: int
#: The corpus size a plan assumes when none is given.
DEFAULT_EXPECTED_SIZE: int

class NeardupError(Exception):
    """Base class of neardup's own errors."""

class IndexFormatError(NeardupError):
    """A file that is not a valid neardup index: truncated, corrupted, foreign or of a newer version."""

class IndexChangedError(IndexFormatError):
    """The file under a memory-mapped index was changed in place since it was loaded."""

class TooManyPairsError(NeardupError):
    """More pairs than the limit a call was given (max_pairs, --max-pairs), raised before they are
    allocated. ``count`` is their number, or a lower bound of it where ``at_least`` is True (the
    search stopped soon after the limit rather than count them all)."""

    count: int
    limit: int
    at_least: bool

def to_normalize(texts: list[str], unicode_form: str | None, casefold: bool) -> list[int]:
    """The positions of the texts that must be normalized in Python before the core takes them;
    the others the core normalizes itself, folding with ``fold_ascii=casefold``, ``fold_wide``
    for NFKC and NFKD, ``fold_map=True`` and ``fold_form=unicode_form``."""

def fnv1a_64(data: str | bytes | bytearray | memoryview) -> int:
    """FNV-1a 64 of the bytes (a str as UTF-8)."""

def fnv1a_64_many(items: Sequence[str | bytes]) -> npt.NDArray[np.uint64]:
    """FNV-1a 64 of each item, as a uint64 array."""

def fmix64(x: int) -> int:
    """MurmurHash3's 64-bit finalizer, a bijection of 64-bit integers."""

def feature_hash(data: str | bytes | bytearray | memoryview) -> int:
    """fmix64 of the FNV-1a 64 of the bytes (a str as UTF-8): a feature's hash as tallied."""

def feature_hash_many(items: Sequence[str | bytes]) -> npt.NDArray[np.uint64]:
    """feature_hash of each item, as a uint64 array."""

def tallies_int(
    hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.int64] | None = None
) -> list[int]:
    """The 64 tallies Σ ±w (w = 1 without weights), exact."""

def tallies_float(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float64]) -> list[float]:
    """The 64 tallies Σ ±w in float64, summed in the order given; weights must be finite."""

def force_scalar(on: bool) -> None:
    """Holds the core's vector kernels (SSE2 token scan, AVX dot products) on their portable paths
    (``True``) or lets them use what the CPU offers (``False``, the default), for the whole process.
    Every result is the same either way: the switch is for testing that it is."""

def scalar_forced() -> bool:
    """Whether force_scalar holds the vector kernels on their portable paths."""

def newlines(data: bytes) -> int:
    """The newline bytes (``\\n``) of ``data``: ``data.count(b"\\n")``, at memory speed."""

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
    def weighted_features_tokens(self, tokens: list[str], field: int) -> list[tuple[str, float]]:
        """The features of one field of a document given as pre-split tokens, with their weights."""
    def fingerprint_tokens_many(
        self, fields: list[list[list[str]]], threads: int | None = None
    ) -> npt.NDArray[np.uint64]:
        """Fingerprints of documents given field by field as pre-split tokens: ``fields[f][d]`` is a
        list of tokens."""
    def document_frequencies_tokens(
        self, fields: list[list[list[str]]], threads: int | None = None
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """Document frequencies of feature hashes of documents given as pre-split tokens."""
    def fingerprint_many(
        self,
        fields: list[list[str]],
        threads: int | None = None,
        fold_ascii: bool = False,
        fold_wide: bool = False,
        fold_map: bool = False,
        fold_form: str | None = None,
    ) -> npt.NDArray[np.uint64]:
        """Fingerprints of documents given field by field: ``fields[f][d]``. With ``fold_ascii``
        the ASCII capitals of one-field documents are folded to lower case first, with
        ``fold_wide`` their wide characters to ASCII (what NFKC makes of them), and with
        ``fold_map`` the characters the core takes under ``fold_form`` and case folding
        (``fold_ascii``) to what that normalization makes of them."""
    def document_frequencies(
        self, fields: list[list[str]], threads: int | None = None
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """Document frequencies of feature hashes: (sorted keys, counts)."""
    def digest_many(
        self,
        fields: list[list[str]],
        threads: int | None = None,
        fold_ascii: bool = False,
        sketch: tuple[int, int] | None = None,
        seen: KeySet | None = None,
        fold_wide: bool = False,
        fold_map: bool = False,
        fold_form: str | None = None,
        into: HashBuffer | None = None,
    ) -> tuple[
        npt.NDArray[np.uint64],
        npt.NDArray[np.uint64],
        tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]] | None,
    ]:
        """Fingerprints, content keys (XXH3-128 of the normalized text, as 64-bit words, two a
        key) and, with sketch=(ngram, size), shingle sketches as (offsets, hashes). A text of one
        field whose key ``seen`` holds takes the fingerprint recorded there and no sketch. With
        ``into``, the sketches are appended there instead, each text's at its first occurrence
        only (a copy of a text of ``seen`` or of one earlier in ``fields`` has an empty one): the
        offsets count from where ``into`` ended, and the hashes are empty."""

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
    def __reduce__(self) -> tuple[object, tuple[list[int], int]]:
        """Pickles as Plan.nested(levels, k)."""
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

    def __new__(
        cls, k: int, plan: Plan | None = None, expected_size: int | None = None
    ) -> Index: ...
    @property
    def k(self) -> int: ...
    @property
    def plan(self) -> Plan: ...
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def mapped(self) -> bool: ...
    def check_file(self) -> None: ...
    def contains(self, id: int) -> bool: ...
    def add(
        self, fingerprints: npt.NDArray[np.uint64], ids: npt.NDArray[np.int64] | None = None
    ) -> None: ...
    def remove(self, ids: npt.NDArray[np.int64]) -> None: ...
    def compact(self) -> None: ...
    def _set_limits(self, limits: tuple[int, int] | None) -> None: ...
    def query(self, fingerprint: int) -> list[tuple[int, int]]: ...
    def query_many(
        self,
        fingerprints: npt.NDArray[np.uint64],
        threads: int | None = None,
        max_pairs: int | None = 100_000_000,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]]: ...
    def save(self, path: str | os.PathLike[str]) -> None: ...
    @staticmethod
    def load(path: str | os.PathLike[str], mmap: bool = True) -> Index: ...

def find_all(
    fingerprints: npt.NDArray[np.uint64],
    k: int,
    plan: Plan | None = None,
    threads: int | None = None,
    max_pairs: int | None = 100_000_000,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """Every pair (i < j) within k, each once; more than max_pairs raise TooManyPairsError."""

def search_cost(fingerprints: npt.NDArray[np.uint64], k: int, plan: Plan | None = None) -> int:
    """The candidate comparisons find_all would make at k, estimated from the data."""

def neighbourhood(
    distinct: npt.NDArray[np.uint64],
    weights: npt.NDArray[np.uint64],
    k: int,
    per_distance: int = 3,
    threads: int | None = None,
) -> tuple[
    npt.NDArray[np.uint8],
    npt.NDArray[np.uint64],
    tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]],
]:
    """Per value its nearest other's distance (255 beyond k), weighted pairs per distance, samples."""

def cluster(
    fingerprints: npt.NDArray[np.uint64],
    k: int,
    plan: Plan | None = None,
    threads: int | None = None,
) -> npt.NDArray[np.int64]:
    """Connected components of the pairs within k; a cluster's label is its smallest row. No pair is stored."""

def string_fingerprints(
    hasher: Hasher,
    offsets: npt.NDArray[np.int64],
    data: npt.NDArray[np.uint8],
    casefold: bool,
    sketch: tuple[int, int] | None = None,
    threads: int | None = None,
    seen: KeySet | None = None,
) -> tuple[
    npt.NDArray[np.uint8],
    npt.NDArray[np.uint64],
    npt.NDArray[np.uint32],
    npt.NDArray[np.uint64],
    tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]] | None,
]: ...
def jsonl_fingerprints(
    hasher: Hasher,
    block: bytes,
    text_field: str,
    id_field: str | None,
    casefold: bool,
    sketch: tuple[int, int] | None = None,
    threads: int | None = None,
    wanted: npt.NDArray[np.bool_] | None = None,
    seen: KeySet | None = None,
) -> tuple[
    npt.NDArray[np.uint8],
    npt.NDArray[np.uint64],
    npt.NDArray[np.uint32],
    npt.NDArray[np.uint64],
    npt.NDArray[np.uint64],
    tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]] | None,
]:
    """Per line of a block of JSONL: kind (0 blank, 1 fingerprinted, 2 for Python), fingerprint,
    length; where each line starts (one more: the block's length + 1); the content key of each
    line fingerprinted here; with sketch=(ngram, size) the (offsets, hashes) of its sketch. With
    wanted (a flag a line: a second read, for the sketches), only the flagged lines are read, and
    only sketched (fingerprint and key 0). A line whose text's key ``seen`` holds takes the
    fingerprint recorded there and no sketch."""

def cluster_pairs(
    n: int, i: npt.NDArray[np.int64], j: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Connected components of n rows linked by the pairs (i[p], j[p]); labels are smallest rows."""

def shingle_sketches(
    texts: list[str], ngram: int, size: int, threads: int | None = None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Bottom-size sketches of the word ngram-shingles of normalized texts: (offsets, hashes,
    content keys)."""

#: The most word shingles of a short text (verified against other short texts beyond k).
SHORT_TEXT_SHINGLES: int
SHORT_TEXT_RUN_CAP: int
SKETCH_CHECK_BIT: int
SKETCH_HASH_BITS: int
PART_KEY_LEAD_BITS: int

@final
class StarCandidates:
    """The candidate structure of a corpus: its texts (equal content key and fingerprint), grouped
    by fingerprint, the groups within k of each other and, given ``short = (rows, starts, ends,
    hashes)`` (some rows' shingle sets) and the ``threshold`` of the stars, the short texts'
    prefix hashes."""

    def __new__(
        cls,
        fingerprints: npt.NDArray[np.uint64],
        keys: npt.NDArray[np.uint64],
        k: int,
        plan: Plan | None = None,
        threads: int | None = None,
        max_pairs: int | None = 100_000_000,
        short: tuple[
            npt.NDArray[np.int64],
            npt.NDArray[np.uint64],
            npt.NDArray[np.uint64],
            npt.NDArray[np.uint64],
        ]
        | None = None,
        threshold: float | None = None,
        prefixes: tuple[
            npt.NDArray[np.int64],
            npt.NDArray[np.uint64],
            npt.NDArray[np.uint64],
            npt.NDArray[np.uint64],
            npt.NDArray[np.uint32],
            npt.NDArray[np.uint32],
        ]
        | None = None,
        band: float = 0.0,
        size: int = 1024,
    ) -> StarCandidates: ...
    @property
    def prefix_pairs(self) -> int:
        """The candidate pairs of the prefix runs (a pair in several runs counts in each)."""
    @property
    def pairs_listed(self) -> int:
        """The pairs the prefix runs put before a center in the last stars() call, each once;
        those the length and positional filters let through are compared."""
    @property
    def skipped_pairs(self) -> int:
        """Candidate pairs of short texts not compared: those of a group sharing a prefix that
        could not be split further, was over the cap and was not one shingle set."""
    @property
    def pair_count(self) -> int:
        """The pairs of distinct fingerprints within k (what max_pairs bounds)."""
    def rows(self) -> npt.NDArray[np.int64]:
        """The rows whose sketches stars() may read."""
    def stars(
        self,
        order: npt.NDArray[np.int64],
        threshold: float | None = None,
        starts: npt.NDArray[np.uint64] | None = None,
        ends: npt.NDArray[np.uint64] | None = None,
        hashes: npt.NDArray[np.uint64] | None = None,
        size: int = 1024,
        band: float = 0.0,
        exact: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]
        | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.int64], int]:
        """Star clusters in keep order: (the row kept in each row's place, their Jaccard, the
        pairs of rows decided on an estimate within ``band`` of the threshold, as (row a, row b,
        1 if near else 0) flattened, the candidate pairs compared); such a pair's Jaccard in ``exact = (rows a, rows b,
        Jaccards)`` decides it when given."""
    def patch_jaccards(
        self,
        kept: npt.NDArray[np.int64],
        jaccard: npt.NDArray[np.float32],
        exact: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]],
    ) -> npt.NDArray[np.float32]:
        """``jaccard`` with the exact Jaccard of each removed row whose pair is in ``exact``
        (pairs decided on estimates that the exact Jaccards decide alike)."""

@final
class HashBuffer:
    """Sketch hashes gathered chunk by chunk, handed to numpy whole without a copy."""

    def __new__(cls) -> HashBuffer: ...
    def extend(self, hashes: npt.NDArray[np.uint64]) -> None: ...
    def extend_ranges(
        self,
        hashes: npt.NDArray[np.uint64],
        starts: npt.NDArray[np.uint64],
        ends: npt.NDArray[np.uint64],
    ) -> None:
        """Appends hashes[starts[d]:ends[d]] for each d, in order."""
    def take(self) -> npt.NDArray[np.uint64]: ...
    def view(self, start: int, end: int) -> npt.NDArray[np.uint64]:
        """Hashes start..end as a read-only array over the buffer itself (not a copy): while it,
        or an array made from it, is alive, the buffer refuses to grow or be taken."""
    def __len__(self) -> int: ...

@final
class KeySet:
    """The content keys seen so far in a first pass, with their texts' fingerprints."""

    def __new__(cls) -> KeySet: ...
    def first_seen(
        self, keys: npt.NDArray[np.uint64], fingerprints: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.bool_]:
        """For each key, whether it is seen for the first time (then recorded with its row's
        fingerprint)."""
    def __len__(self) -> int: ...

def short_text_pairs(
    rows: npt.NDArray[np.int64],
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
    threshold: float,
    size: int = 1024,
    max_pairs: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Every pair of short texts (at most SHORT_TEXT_SHINGLES shingles) at Jaccard >= threshold,
    whatever their fingerprints: (row a, row b, Jaccard), a < b; row rows[i]'s shingle set is
    hashes[starts[i]:ends[i]]. More than max_pairs candidate pairs raises TooManyPairsError."""

def sketch_jaccard(
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
    i: npt.NDArray[np.int64],
    j: npt.NDArray[np.int64],
    size: int,
    threads: int | None = None,
) -> npt.NDArray[np.float64]:
    """Jaccard similarity of the sketches of each pair of rows (row d: hashes[starts[d]:ends[d]])."""

def sketch_jaccard_zip(
    starts_a: npt.NDArray[np.uint64],
    ends_a: npt.NDArray[np.uint64],
    hashes_a: npt.NDArray[np.uint64],
    starts_b: npt.NDArray[np.uint64],
    ends_b: npt.NDArray[np.uint64],
    hashes_b: npt.NDArray[np.uint64],
    size: int,
    threads: int | None = None,
) -> npt.NDArray[np.float64]:
    """Jaccard similarity of pair p's sketches, hashes_a[starts_a[p]:ends_a[p]] and
    hashes_b[starts_b[p]:ends_b[p]] (two buffers, read where they lie)."""

def sketch_jaccard_parts(
    parts: Sequence[tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint64]]],
    i: npt.NDArray[np.int64],
    j: npt.NDArray[np.int64],
    size: int,
    at_least: float = 0.0,
    cut_at_least: float = 0.0,
    threads: int | None = None,
) -> npt.NDArray[np.float64]:
    """Jaccard similarity of the sketches of each pair of rows, the rows those of ``parts``
    (starts, ends, hashes) one after another; -1 for a pair below ``at_least`` (below
    ``cut_at_least`` when a sketch is cut at ``size``). The sketches must be sorted and distinct,
    as digest files hold them: only their ranges are checked, not their order (a check reads a
    few hashes of each sketch, where checking the order would read every sketch whole)."""

@final
class Sparse:
    """The compiled half of ``neardup.SparseEncoder``: extendable token hashes, column sums, top-N."""

    def __new__(
        cls,
        size: int,
        active: int,
        token_similarity: bool,
        weights: list[tuple[str, float]] | None = None,
    ) -> Sparse: ...
    @property
    def size(self) -> int: ...
    @property
    def active(self) -> int: ...
    def sums(self, tokens: list[str]) -> npt.NDArray[np.float64]:
        """Column sums of one token list."""
    def select(self, sums: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """The indices of the `active` largest sums, ascending; ties to the lower index."""
    def encode(self, tokens: list[str]) -> npt.NDArray[np.int64]:
        """The active bits of one token list."""
    def encode_many(
        self, docs: list[list[str]], threads: int | None = None
    ) -> npt.NDArray[np.int64]:
        """The active bits of many token lists, flat: `active` per list."""
    def sums_of_words(
        self, rows: npt.NDArray[np.uint64], weights: npt.NDArray[np.float64] | None = None
    ) -> npt.NDArray[np.float64]:
        """Column sums of hash rows given as 64-bit words, row after row."""

def extended_hash(data: str | bytes | bytearray | memoryview, words: int) -> npt.NDArray[np.uint64]:
    """The first `words` words of the extendable hash (FNV-1a 64, then SplitMix64) of the data."""

@final
class Hyperplanes:
    """The compiled half of ``neardup.VectorSimhash``: seeded Gaussian normals and sign bits."""

    def __new__(cls, dim: int, bits: int, seed: int) -> Hyperplanes: ...
    @property
    def dim(self) -> int: ...
    @property
    def bits(self) -> int: ...
    def normals(self) -> npt.NDArray[np.float64]:
        """The normals, row after row (`bits` rows of `dim`)."""
    def fingerprint_many_f64(
        self, matrix: npt.NDArray[np.float64], threads: int | None = None
    ) -> npt.NDArray[np.uint64]:
        """Fingerprints of the rows of a C-contiguous float64 matrix."""
    def fingerprint_many_f32(
        self, matrix: npt.NDArray[np.float32], threads: int | None = None
    ) -> npt.NDArray[np.uint64]:
        """Fingerprints of the rows of a C-contiguous float32 matrix."""

def minhash_key(hashes: npt.NDArray[np.uint64], restrictiveness: int) -> int:
    """The XOR of the `restrictiveness` smallest distinct hashes."""

def minhash_keys(
    hasher: Hasher, fields: list[list[str]], restrictiveness: int, threads: int | None = None
) -> npt.NDArray[np.uint64]:
    """Minhash keys of documents given field by field (`fields[f][d]`), features by `hasher`."""

def minhash_keys_tokens(
    hasher: Hasher, fields: list[list[list[str]]], restrictiveness: int, threads: int | None = None
) -> npt.NDArray[np.uint64]:
    """Minhash keys of documents given field by field as pre-split tokens."""

def group_by_key(keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Labels of equal keys: the smallest row holding each key."""

def md5_64_many(items: Sequence[str | bytes]) -> npt.NDArray[np.uint64]:
    """The `simhash` package's feature hash (last 8 bytes of MD5, big-endian) of each item."""

def compat_windows_many(texts: list[str], threads: int | None = None) -> npt.NDArray[np.uint64]:
    """The `simhash` package's default fingerprints of cleaned (lowercased, filtered) texts."""

@final
class DedupIndex:
    """A dedup index file: per document its id, fingerprint, content key and compact sketch."""

    @staticmethod
    def empty(
        sketch_words: int,
        sketch_bits: int,
        shingle: int,
        k: int,
        threshold: float,
        string_ids: bool,
        meta: bytes,
        prefixes: tuple[float, float, int, npt.NDArray[np.uint64], npt.NDArray[np.uint32]]
        | None = None,
        exact: bool = False,
    ) -> DedupIndex:
        """An empty index in memory with these settings; with ``prefixes = (threshold, band,
        size, table hashes, table counts)``, one that keeps prefix postings; with ``exact``,
        one that keeps each document's exact set."""
    @property
    def prefix_settings(self) -> tuple[float, float, int] | None:
        """``(threshold, band, size)`` of the prefix postings, or None."""
    def prefix_table(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
        """The stored rarity table of the prefix lists: (hashes, counts)."""
    @property
    def postings(self) -> int:
        """How many prefix postings the index holds."""
    def new_postings(
        self,
        keys: npt.NDArray[np.uint64],
        lists: tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.uint32]],
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
        """The prefix postings of new documents at this index's cut: (hashes, rows from 0)."""
    def save_appended(
        self,
        path: str | os.PathLike[str],
        fps: npt.NDArray[np.uint64],
        keys: npt.NDArray[np.uint64],
        lens: npt.NDArray[np.uint32],
        words: npt.NDArray[np.uint32],
        ids: npt.NDArray[np.int64] | list[bytes],
        lists: tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.uint32]]
        | None = None,
        sets: tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]] | None = None,
        set_rows: npt.NDArray[np.uint32] | None = None,
    ) -> None:
        """Writes this index followed by new documents (with their prefix lists, for an index
        with postings, and their exact sets ``(lengths, values)``, for an exact index: theirs,
        or those of more rows and ``set_rows``, the new documents' rows among them) to path,
        atomically."""
    def save_streamed(
        self,
        path: str | os.PathLike[str],
        n_new: int,
        new_id_bytes: int,
        fill: Callable[[str], Iterable[npt.NDArray[Any]]],
        postings: list[tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32], int]] | None = None,
        new_set_values: int = 0,
    ) -> None:
        """Writes this index followed by ``n_new`` documents to path, atomically, an array of
        them at a time: ``fill(section)`` gives each section's arrays, in file order ("fps",
        "keys", "lens", "words", "ids", "id_bytes", and for an exact index "set_lens" and
        "set_values", ``new_set_values`` of them); ``postings``, their prefix postings in
        sorted runs ``(hashes, rows, base)``."""
    @staticmethod
    def load(path: str | os.PathLike[str], mmap: bool = True) -> DedupIndex: ...
    def __len__(self) -> int: ...
    @property
    def sketch_words(self) -> int: ...
    @property
    def sketch_bits(self) -> int: ...
    @property
    def shingle(self) -> int: ...
    @property
    def k(self) -> int: ...
    @property
    def threshold(self) -> float: ...
    @property
    def string_ids(self) -> bool: ...
    @property
    def exact(self) -> bool: ...
    def exact_set(self, row: int) -> npt.NDArray[np.uint32] | None:
        """Document ``row``'s exact set (a copy), or None when the index keeps none."""
    @property
    def meta(self) -> bytes: ...
    @property
    def mapped(self) -> bool: ...
    def check_file(self) -> None: ...
    def fingerprints(self) -> npt.NDArray[np.uint64]: ...
    def keys(self) -> npt.NDArray[np.uint64]: ...
    def sketch(self, row: int) -> tuple[int, npt.NDArray[np.uint32]]: ...
    def ids_of(self, rows: list[int]) -> list[Any]: ...
    def dedup(
        self,
        fps: npt.NDArray[np.uint64],
        keys: npt.NDArray[np.uint64],
        lens: npt.NDArray[np.uint32],
        words: npt.NDArray[np.uint32],
        k: int,
        threshold: float,
        threads: int | None = None,
        max_pairs: int | None = None,
        lists: tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.uint32]]
        | None = None,
        band: float = 0.0,
        sets: tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32], int]:
        """Deduplicates a batch against the index and itself: (new row kept in each row's place
        or -1, index row it duplicates or -1, Jaccard, the batch's candidate pairs not
        compared). With ``max_pairs``, TooManyPairsError for a search estimated past the work
        limit or finding more than ``max_pairs`` candidate pairs. Given the batch's prefix
        ``lists``, the candidates are those of prefix filtering."""

def exact_sets(
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The exact sets of documents given by their whole shingle sets (document d's is
    ``hashes[starts[d]:ends[d]]``, sorted and distinct): (lengths, values), each set its shingle
    hashes cut to 32 bits, checks left out, ascending and distinct."""

def near_jaccard(
    lens_a: npt.NDArray[np.uint32],
    words_a: npt.NDArray[np.uint32],
    lens_b: npt.NDArray[np.uint32],
    words_b: npt.NDArray[np.uint32],
    sketch_words: int,
    sketch_bits: int,
    threshold: float,
    sets_a: tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]] | None = None,
    sets_b: tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]] | None = None,
) -> npt.NDArray[np.float64]:
    """The Jaccard of pairs as a dedup index decides them: row p of a with row p of b, on their
    exact sets (``(lengths, values)``, in an exact index) or compact sketches; 0 for a pair
    below ``threshold``."""

def compact_sketches(
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
    sketch_words: int,
    sketch_bits: int,
    threads: int | None = None,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The compact sketches of documents given by their whole shingle sets (document d's is
    ``hashes[starts[d]:ends[d]]``, sorted and distinct): (lengths, ``sketch_words`` words per
    document). A length is the document's number of shingles, held in its words, or 2^32 - 1 for
    ``32 sketch_words / sketch_bits`` bins of ``sketch_bits`` bits."""

def compact_short_sets(
    fps: npt.NDArray[np.uint64],
    lens: npt.NDArray[np.uint32],
    words: npt.NDArray[np.uint32],
    sketch_words: int,
    sketch_bits: int,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
    """The short texts among compact sketches, as a batch deduplicated against a dedup index
    takes them: per document its set's length (0: not short) and the sets one after the other."""

def compact_jaccard(
    lens_a: npt.NDArray[np.uint32],
    words_a: npt.NDArray[np.uint32],
    lens_b: npt.NDArray[np.uint32],
    words_b: npt.NDArray[np.uint32],
    sketch_words: int,
    sketch_bits: int,
) -> npt.NDArray[np.float64]:
    """The Jaccard of row p of the compact sketches a with row p of b, for every p: exact when
    both hold their shingles, else the b-bit estimate."""

# The kernels a cluster runs apart (neardup.kernels).

def search_bit_order(values: npt.NDArray[np.uint64], plan: Plan) -> bytes:
    """The bit order a search of these values uses with plan (64 source bits, highest first)."""

def rarity_counts(
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
    budget: int = ...,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
    """How many sketches hold each shingle hash, counted sketch after sketch until budget hashes:
    (hashes, counts), by hash."""

def merged_counts(
    hashes_a: npt.NDArray[np.uint64],
    counts_a: npt.NDArray[np.uint32],
    hashes_b: npt.NDArray[np.uint64],
    counts_b: npt.NDArray[np.uint32],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
    """Two tables of counts by hash (hashes increasing) added up into one by hash, each count
    held at 2**32 - 1."""

def hashes_between(hashes: npt.NDArray[np.uint64], low: int, high: int) -> npt.NDArray[np.uint64]:
    """The values of hashes in [low, high), in their order."""

def frequent_runs(
    sorted: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
    """The values a sorted array holds at least twice, and how many times each (held at
    2**32 - 1)."""

@final
class RarityOrder:
    """The rarity order of a table of frequent hashes (hashes, counts), built once for the
    prefix_lists of many chunks; with ``repeats`` (or ``repeated``, the words of their table of
    repeated slots in pieces, as repeated_words gives them, put together here), the hashes the
    table leaves out that more than one text may hold count 1. With ``every_text``, the table
    (or the marks) was made on every text whose lists the order cuts: a hash that counts 0 is
    held by one text alone, and prefix_lists counts those a list begins with."""

    def __new__(
        cls,
        hashes: npt.NDArray[np.uint64],
        counts: npt.NDArray[np.uint32],
        repeats: Repeats | None = None,
        repeated: list[npt.NDArray[np.uint64]] | None = None,
        every_text: bool = False,
    ) -> RarityOrder: ...
    def __len__(self) -> int: ...

@final
class Repeats:
    """Which shingle hashes more than one text may hold, marked on every text's sketch: two bit
    tables sized for sketches holding ``hashes`` hashes in all."""

    def __new__(cls, hashes: int) -> Repeats: ...
    def add(
        self,
        starts: npt.NDArray[np.uint64],
        ends: npt.NDArray[np.uint64],
        hashes: npt.NDArray[np.uint64],
    ) -> None: ...
    @property
    def bits(self) -> int: ...
    def share(self) -> float: ...

REPEATS_MOST_BITS: int

def repeat_bits(hashes: int) -> int:
    """The bits of a slot number of the Repeats tables for sketches holding hashes hashes."""

def repeat_slots(
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
    bits: int,
) -> npt.NDArray[np.uint32]:
    """The slots of the sketches' shingle hashes, sorted, each at most twice: a share of the
    texts' part of the Repeats marks."""

def repeated_words(
    slots: npt.NDArray[np.uint32], first_word: int, words: int
) -> npt.NDArray[np.uint64]:
    """The words words from first_word on of the table of repeated slots that slots mark (every
    share's repeat_slots in that range): a slot given twice is repeated."""

def prefix_lists(
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
    table: RarityOrder | tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]],
    threshold: float,
    size: int = 1024,
    band: float = 0.0,
) -> tuple[
    npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.uint32], npt.NDArray[np.uint32]
]:
    """Each sketch's prefix list in the order of the frequent hashes table (a RarityOrder, or
    (hashes, counts)): (lengths, hashes, sizes, alone), ``alone[d]`` the first hashes of list d
    that no other text holds (0 unless the order was made with ``every_text``)."""

PREFIX_EXTRA: int

def split_run_pairs(
    keys: npt.NDArray[np.uint64],
    texts: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.uint64],
    ends: npt.NDArray[np.uint64],
    hashes: npt.NDArray[np.uint64],
    sizes: npt.NDArray[np.uint32],
    threshold: float,
    size: int = 1024,
    band: float = 0.0,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """The candidate pairs of prefix runs over the cap, split: (a, b, skipped)."""

def run_pairs(
    hashes: npt.NDArray[np.uint64], nodes: npt.NDArray[np.int64], cap: int
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    int,
    npt.NDArray[np.uint64],
    npt.NDArray[np.int64],
]:
    """The candidate pairs of one task's prefix rows (node nodes[i] holds hashes[i]): (a, b,
    listed, over_hashes, over_nodes): each pair once, a < b, sorted; the pairs of the runs of
    at most ``cap`` nodes, a pair once a hash; the rows of the larger runs."""

def routed_pairs(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], starts: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The partition that checks each pair (a[p], b[p]) of global rows (starts: each partition's
    first row): that of a[p] or b[p], as a bit of the pair's hash says; count rows (a < 0) go to
    partition 0."""

def pair_blocks(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], starts: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A task's pairs (a[p], b[p]) of global rows (either way round, repeats possible), each
    once as a < b, ordered by the partitions of their rows (starts: each partition's first row),
    then by (a, b): (a, b, blocks), blocks the (lo, hi, i, j) of each two partitions one after
    the other (pairs lo:hi join a row of partition i and one of partition j)."""

def local_pairs(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """Pairs over the nodes they name: (nodes, at_a, at_b), each distinct pair once."""

def part_keys(
    values: npt.NDArray[np.uint64], plan: Plan, order: Sequence[int] | None = None
) -> tuple[npt.NDArray[np.uint32], int]:
    """The part keys of each value (the plan's lead groups each, value after value), and the
    number of lead groups."""

def part_pairs(
    keys: npt.NDArray[np.uint32],
    values: npt.NDArray[np.uint64],
    k: int,
    plan: Plan,
    order: Sequence[int] | None = None,
    max_pairs: int | None = None,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], int]:
    """(a, b, count): the pairs within k the parts of these rows report (values, a < b); past
    max_pairs, no pairs and their exact count."""

def graph_stars(
    order: npt.NDArray[np.int64],
    a: npt.NDArray[np.uint32],
    b: npt.NDArray[np.uint32],
    jaccard: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The stars of a graph of verified pairs: (the node kept in each node's place, Jaccard)."""
