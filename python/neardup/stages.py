"""The pipeline of a dedup, described once: its stages in order, what a row is at each, the key
rows meet on before it (the exchange a distributed executor makes there), the public kernels of
:mod:`neardup.kernels` that do its work, and how each executor groups the stages into steps.

Every executor runs this list. On one machine (:func:`neardup.dedup`, ``neardup dedup``) the
stages are fused into fewer steps, in memory: the first pass digests and groups copies as it
reads; the star sweep verifies a pair only when its kept side is taken and its other side is
still free, so verification, components and stars are one step there, and most candidate pairs
are never compared. On Dask (:mod:`neardup.dask`) each stage is a map over partitions after a
shuffle on the stage's key, nothing per document reaches the client, and the stars and the
outputs are one step (the per-row results are joined back while the stars are taken). A new
engine (Ray Data, Spark) is the same list over the same kernels; docs/cluster.md shows one.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DASK", "LOCAL", "STAGES", "Stage", "Step", "stage_names"]


class Stage(NamedTuple):
    """One stage of a dedup."""

    #: The stage's name, in logs, stats (``seconds_<step>``) and the docs.
    name: str
    #: What a row of its input is.
    rows: str
    #: The key its rows meet on, the exchange before it (None: each partition where it lies).
    key: str | None
    #: What it makes.
    makes: str
    #: The functions of :mod:`neardup.kernels` it runs.
    kernels: tuple[str, ...]


class Step(NamedTuple):
    """Stages an executor runs as one step, reported (log, progress, stats) under ``name``."""

    name: str
    stages: tuple[str, ...]


STAGES: tuple[Stage, ...] = (
    Stage(
        "digest",
        "a document",
        None,
        "each document's fingerprint, content key and bottom-k sketch of its word shingles",
        ("digest_batch",),
    ),
    Stage(
        "copies",
        "a document's digest",
        "content key",
        "each row's text (the first row of its normalized text) and its rank in keep order",
        (),
    ),
    Stage(
        "candidates",
        "a text",
        "prefix hash (prefix candidates); table key and a short text's prefix hash "
        "(fingerprint candidates)",
        "candidate pairs: texts sharing one of the rarest hashes of their sketches, or "
        "fingerprints within k",
        (
            "rarity_counts",
            "frequent_hashes",
            "prefix_keys",
            "split_runs",
            "pairs_in_runs",
            "short_text_keys",
            "search_plan",
            "bit_order",
            "table_keys",
            "key_groups",
            "pairs_in_groups",
        ),
    ),
    Stage(
        "verify",
        "a candidate pair",
        "the partition of one of its texts",
        "verified pairs and their Jaccard, exact for a pair whose estimate lies near the threshold",
        (
            "sketch_bytes",
            "take_sketches",
            "verify_pairs",
            "verify_rows",
            "pairs_in_band",
            "shingle_sets",
        ),
    ),
    Stage(
        "components",
        "a verified pair",
        "text (the smallest label spreads along the pairs)",
        "the connected component of each text with a verified pair",
        (),
    ),
    Stage(
        "stars",
        "a text of a component and the component's verified pairs",
        "component",
        "greedy stars in keep order: each text's kept text and their Jaccard",
        ("graph_stars",),
    ),
    Stage(
        "outputs",
        "a document",
        "input partition (each row's text joined back)",
        "the kept flag and the evidence of every document, the kept documents written",
        (),
    ),
)

#: The steps of :func:`neardup.dedup` and ``neardup dedup`` on one machine.
LOCAL: tuple[Step, ...] = (
    Step("digest", ("digest", "copies")),
    Step("candidates", ("candidates",)),
    Step("stars", ("verify", "components", "stars")),
    Step("outputs", ("outputs",)),
)

#: The steps of :func:`neardup.dask.dedup`.
DASK: tuple[Step, ...] = (
    Step("digest", ("digest",)),
    Step("copies", ("copies",)),
    Step("candidates", ("candidates",)),
    Step("verify", ("verify",)),
    Step("components", ("components",)),
    Step("stars", ("stars", "outputs")),
)


def stage_names() -> tuple[str, ...]:
    """The stages' names, in order."""
    return tuple(stage.name for stage in STAGES)
