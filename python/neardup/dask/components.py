"""Step 5 of a Dask dedup: the connected components of the verified pairs, in one task when
they fit one partition, else by rounds of label propagation (each node takes its neighbours'
smallest label, then its label's label) until no label changes."""

from __future__ import annotations

from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import _core

from .frames import _frame
from .spill import computed, spill


def _lookup_part(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows shuffled by ``key``: the label rows (kind 0: a node's label) pass; each other row
    (kind 1: a neighbour's or its label's node) takes the label of its key."""
    own = rows["kind"].to_numpy() == 0
    keys = rows["key"].to_numpy(np.int64)
    labelled, labels = keys[own], rows["lab"].to_numpy(np.int64)[own]
    sort = np.argsort(labelled)
    asked = keys[~own]
    at = np.searchsorted(labelled, asked, sorter=sort)
    if len(asked) and (at.max() >= len(labelled) or (labelled[sort[at]] != asked).any()):
        raise RuntimeError("a node of a verified pair has no label")
    lab = rows["lab"].to_numpy(np.int64).copy()
    lab[~own] = labels[sort[at]]
    return pd.DataFrame({"who": rows["who"].to_numpy(np.int64), "lab": lab, "kind": rows["kind"]})


def _lowest_part(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows shuffled by node (``who``): each node's smallest label, and whether it is lower than
    its label before (its kind 0 row)."""
    who = rows["who"].to_numpy(np.int64)
    lab = rows["lab"].to_numpy(np.int64)
    old = np.where(rows["kind"].to_numpy() == 0, lab, np.iinfo(np.int64).max)
    frame = pd.DataFrame({"node": who, "label": lab, "old": old})
    got = frame.groupby("node", sort=False).agg(label=("label", "min"), old=("old", "min"))
    return pd.DataFrame(
        {
            "node": got.index.to_numpy(np.int64),
            "label": got["label"].to_numpy(np.int64),
            "changed": got["label"].to_numpy(np.int64) < got["old"].to_numpy(np.int64),
        }
    )


_LABEL_ROW = _frame(key=np.int64, who=np.int64, lab=np.int64, kind=np.int8)


def _label_rows(labels: pd.DataFrame) -> pd.DataFrame:
    """A node's label (kind 0, by node) and its question for its label's label (kind 1, by
    label)."""
    node, label = labels["node"].to_numpy(np.int64), labels["label"].to_numpy(np.int64)
    n = len(node)
    return pd.DataFrame(
        {
            "key": np.concatenate([node, label]),
            "who": np.concatenate([node, node]),
            "lab": np.concatenate([label, np.full(n, -1, np.int64)]),
            "kind": np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)]),
        }
    )


def _pair_rows(edges: pd.DataFrame) -> pd.DataFrame:
    """Both ends of each pair ask for the other's label (kind 1, by the other)."""
    a, b = edges["a"].to_numpy(np.int64), edges["b"].to_numpy(np.int64)
    return pd.DataFrame(
        {
            "key": np.concatenate([b, a]),
            "who": np.concatenate([a, b]),
            "lab": np.full(2 * len(a), -1, np.int64),
            "kind": np.ones(2 * len(a), np.int8),
        }
    )


def _local_labels(edges: pd.DataFrame) -> pd.DataFrame:
    """Each node of these pairs with the smallest node of its component among them."""
    a, b = edges["a"].to_numpy(np.int64), edges["b"].to_numpy(np.int64)
    nodes, at = np.unique(np.concatenate([a, b]), return_inverse=True)
    at = at.reshape(-1).astype(np.int64)
    local = _core.cluster_pairs(len(nodes), at[: len(a)], at[len(a) :])
    return pd.DataFrame({"who": nodes, "lab": nodes[local], "kind": np.zeros(len(nodes), np.int8)})


def _components(edges: Any, partitions: int, folder: str) -> tuple[Any, int]:
    """(node, label) for each node of a pair: the smallest node of its connected component,
    found by rounds of two shuffles on the workers: each node asks its neighbours for their
    labels and its label for its label's (pointer jumping), then takes the smallest, until no
    label changes (none with one partition: the components are found in one task). Returns the
    labels and the number of rounds."""
    meta = _frame(node=np.int64, label=np.int64, changed=bool)
    if partitions == 1:
        # The pairs in one task: their components found there at once, no round.
        whole = edges.repartition(npartitions=1).map_partitions(
            _local_labels, meta=_frame(who=np.int64, lab=np.int64, kind=np.int8)
        )
        labels, _ = spill(
            whole[["who", "lab"]].rename(columns={"who": "node", "lab": "label"}),
            folder,
            "labels",
        )
        return labels, 0
    asks, _ = spill(edges.map_partitions(_pair_rows, meta=_LABEL_ROW), folder, "asks")
    # To start with, each node takes the smallest node of its component among the pairs of each
    # partition (most components lie whole in one).
    first = edges.map_partitions(
        _local_labels, meta=_frame(who=np.int64, lab=np.int64, kind=np.int8)
    )
    labels, _ = spill(
        first.shuffle(on="who", npartitions=partitions).map_partitions(_lowest_part, meta=meta),
        folder,
        "labels0",
    )
    rounds = 0
    while True:
        rounds += 1
        rows = dd.concat([labels.map_partitions(_label_rows, meta=_LABEL_ROW), asks])
        looked = rows.shuffle(on="key", npartitions=partitions).map_partitions(
            _lookup_part, meta=_frame(who=np.int64, lab=np.int64, kind=np.int8)
        )
        new, _ = spill(
            looked.shuffle(on="who", npartitions=partitions).map_partitions(
                _lowest_part, meta=meta
            ),
            folder,
            f"labels{rounds}",
        )
        changed = int(computed(new["changed"].sum()))
        labels = new
        if not changed:
            return labels[["node", "label"]], rounds
