"""The cluster a Dask dedup runs on: :func:`local_cluster` makes one on this machine, and
:func:`_client` finds the distributed client, if any."""

from __future__ import annotations

from typing import Any

from ..validate import integer


def local_cluster(workers: int = 2, **options: Any) -> Any:
    """A ``distributed.LocalCluster`` of ``workers`` processes, one thread each, every port on
    127.0.0.1 and chosen by the system, no dashboard (use it in a ``with`` block); ``options``
    go to ``LocalCluster`` (``processes=False``: worker threads in this process)."""
    import logging

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
    return LocalCluster(**settings)


def _client() -> Any:
    """The distributed client this run computes on, or None (no distributed, or a local
    scheduler)."""
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None
