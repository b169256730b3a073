"""neardup.dask.local_cluster: its worker processes' allocator keeps large blocks in its heap,
where Dask's own setting maps each afresh (docs/cluster.md, "The workers' allocator")."""

from __future__ import annotations

import resource

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster

import neardup.dask as ndd
from neardup.dask.cluster import WORKER_MALLOC, worker_environ

#: A block of 24 MiB: over glibc's fixed threshold of 128 KiB, under the workers' 32 MiB.
BLOCK = 24 << 20


def refault_count(rounds: int = 4) -> int:
    """The page faults of writing a fresh block of ``BLOCK`` bytes, ``rounds`` times, each block
    freed before the next is made (after one round to warm the heap)."""
    np.ones(BLOCK, np.uint8)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        block = np.empty(BLOCK, np.uint8)
        block.fill(1)
        del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def worker_faults(cluster: LocalCluster) -> int:
    with Client(cluster) as client:
        (faults,) = client.run(refault_count).values()
    return faults


def test_the_workers_of_local_cluster_reuse_freed_blocks_where_dask_s_own_map_them_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fresh_environment() -> None:
        # A nanny leaves its settings in this process's environment, where the next one
        # would read them before the configuration.
        for name in WORKER_MALLOC:
            monkeypatch.delenv(name, raising=False)

    settings = dict(host="127.0.0.1", dashboard_address=None, memory_limit="1GiB")
    fresh_environment()
    with LocalCluster(n_workers=1, threads_per_worker=1, **settings) as stock:
        stock_faults = worker_faults(stock)
    fresh_environment()
    with ndd.local_cluster(1, **settings) as ours:
        our_faults = worker_faults(ours)
    # Dask's setting: each block's pages are mapped and zeroed again (4 KiB or 2 MiB at a
    # fault, by the kernel's huge page setting): at least 12 faults a round.
    assert stock_faults >= 4 * 12
    # Freed blocks stay in the heap: their pages are written again without a fault.
    assert our_faults < stock_faults / 4


def test_worker_environ_replaces_only_dask_s_own_trim_threshold() -> None:
    dask_default = dask.config.get("distributed.nanny.pre-spawn-environ")
    assert dask_default["MALLOC_TRIM_THRESHOLD_"] == 65536
    got = worker_environ(dask_default)
    assert got["MALLOC_TRIM_THRESHOLD_"] == WORKER_MALLOC["MALLOC_TRIM_THRESHOLD_"] == 1 << 25
    assert got["MALLOC_MMAP_THRESHOLD_"] == 1 << 25
    assert got["OMP_NUM_THREADS"] == dask_default["OMP_NUM_THREADS"]
    # A user's own values stay.
    assert worker_environ({"MALLOC_TRIM_THRESHOLD_": "1000000"}) == {
        "MALLOC_TRIM_THRESHOLD_": "1000000"
    }
    assert worker_environ({"MALLOC_MMAP_THRESHOLD_": 4096}) == {
        "MALLOC_MMAP_THRESHOLD_": 4096,
        "MALLOC_TRIM_THRESHOLD_": 1 << 25,
    }


@pytest.mark.parametrize("user", [{}, {"MALLOC_TRIM_THRESHOLD_": "1000000"}])
def test_local_cluster_leaves_the_configuration_as_it_was(user: dict[str, str]) -> None:
    key = "distributed.nanny.pre-spawn-environ"
    with dask.config.set({f"{key}.{name}": value for name, value in user.items()}):
        before = dict(dask.config.get(key))
        with ndd.local_cluster(1, processes=False, dashboard_address=None):
            pass
        assert dict(dask.config.get(key)) == before
