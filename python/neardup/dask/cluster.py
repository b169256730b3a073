"""The cluster a Dask dedup runs on: :func:`local_cluster` makes one on this machine,
:func:`halt` ends its workers at once, :func:`_client` finds the distributed client, if any,
and :func:`_wait` waits there for a persisted result."""

from __future__ import annotations

import contextlib
from typing import Any

from ..validate import integer

#: The environment of a worker process's C allocator (glibc's malloc) that neardup's workers
#: start with (docs/cluster.md, "The workers' allocator"): blocks up to 32 MiB come from the
#: heap, as a single process's malloc settles by itself, and up to 32 MiB of free memory stays
#: there. Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also fixes the
#: size from which a block is mapped on its own at 128 KiB: every array a task makes is then
#: mapped afresh and its pages zeroed by the kernel. At 1M documents the workers took 1.4
#: million page faults that way, 0.2 million with these settings, and 3 to 5 CPU s less, for
#: a worker peak 120 MB higher.
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": 1 << 25, "MALLOC_TRIM_THRESHOLD_": 1 << 25}

#: Dask's own setting of the trim threshold, which :data:`WORKER_MALLOC` replaces; a value a
#: user set in Dask's configuration is left as it is.
_DASK_TRIM_THRESHOLD = 65536


def worker_environ(environ: dict[str, Any]) -> dict[str, Any]:
    """``environ`` (the configuration's ``distributed.nanny.pre-spawn-environ``) with
    :data:`WORKER_MALLOC`'s settings where it has none of its own (Dask's trim threshold counts
    as none)."""
    merged = dict(environ)
    if str(merged.get("MALLOC_TRIM_THRESHOLD_", _DASK_TRIM_THRESHOLD)) == str(_DASK_TRIM_THRESHOLD):
        merged.pop("MALLOC_TRIM_THRESHOLD_", None)
        for name, value in WORKER_MALLOC.items():
            merged.setdefault(name, value)
    return merged


def local_cluster(workers: int = 2, **options: Any) -> Any:
    """A ``distributed.LocalCluster`` of ``workers`` processes, one thread each, every port on
    127.0.0.1 and chosen by the system, no dashboard (use it in a ``with`` block); ``options``
    go to ``LocalCluster`` (``processes=False``: worker threads in this process). The worker
    processes start with :data:`WORKER_MALLOC` in their environment (unless the Dask
    configuration sets a trim threshold of its own)."""
    import logging

    import dask
    from distributed import LocalCluster

    settings: dict[str, Any] = dict(
        n_workers=integer(workers, "workers", minimum=1),
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
        scheduler_kwargs={"dashboard": False},
        silence_logs=logging.ERROR,
    )
    settings.update(options)
    if not settings["processes"]:
        settings.setdefault("protocol", "tcp")  # threads in this process, still on 127.0.0.1
    key = "distributed.nanny.pre-spawn-environ"
    # Read when each nanny is made, in LocalCluster's constructor, and kept for its restarts.
    with dask.config.set({key: worker_environ(dask.config.get(key, default={}))}):
        return LocalCluster(**settings)


def halt(cluster: Any) -> None:
    """Ends the worker processes of a local cluster at once (SIGKILL), so that closing it takes
    a moment: an interrupted run stops within a second, where a worker busy in a task would
    hold a graceful close for seconds. Their scratch files are the run's, removed with its
    folder."""
    import os
    import signal

    for nanny in getattr(cluster, "workers", {}).values():
        process = getattr(getattr(nanny, "process", None), "process", None)
        pid = getattr(process, "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _client() -> Any:
    """The distributed client this run computes on, or None (no distributed, or a local
    scheduler)."""
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _wait(collection: Any) -> None:
    """Until a persisted collection is computed (the digests it reads are then let go of); then
    a copy of each of its partitions on a second worker, so that losing one worker loses none
    (they cannot be computed again once the digests are gone; they are small: only the rows
    removed or with a copy or a partner)."""
    client = _client()
    if client is None:
        return
    from distributed import futures_of, wait

    wait(collection)
    if len(client.scheduler_info().get("workers", {})) > 1:
        client.replicate(futures_of(collection), n=2)
