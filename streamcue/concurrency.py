"""One function over many items with a bounded number at once, the first error ending the whole."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, TypeVar

from streamcue.progress import track

T = TypeVar("T")

__all__ = ["in_order"]


def in_order(fn: Callable[[Any], T], items: Iterable[Any], workers: int, what: str | None = None) -> list[T]:
    """``fn`` over ``items`` with at most ``workers`` running at once; the results in the order of ``items``.

    The first error is raised once the calls already running end, and no call starts after it: a failing endpoint
    costs one call's deadline, not one per wave of the queue (a worker that ends a call takes the next item at
    once, before the caller hears of the error, so cancelling the queue alone let a second wave start). ``what``:
    a progress bar's label."""
    items = list(items)
    shown = (lambda done, total: track(done, what, total=total)) if what else (lambda done, total: done)
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in shown(items, len(items))]
    failed = threading.Event()

    def guarded(item: Any) -> Any:
        if failed.is_set():
            return None  # never read: the error is raised
        try:
            return fn(item)
        except BaseException:
            failed.set()
            raise

    pool = ThreadPoolExecutor(max_workers=min(workers, len(items)))
    try:
        futures = [pool.submit(guarded, item) for item in items]
        for future in shown(as_completed(futures), len(futures)):
            future.result()  # the first error, in the order the calls end
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
