"""A process-wide cache of the most recently used values, bounded by their total size. Pure.

Metric files never change once indexed (a push refuses a different copy of a run; a folder
store's files are keyed by their modification time and size as well), so a kept value is never
stale: the servers read a target's files once for the page and again for every chart the page
fetches afterwards, and keep what they decoded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")


class Recent(Generic[T]):
    """Values by key, the least recently used dropped once their sizes pass `budget` bytes."""

    def __init__(self, budget: int, size: Callable[[T], int]) -> None:
        self.budget = budget
        self.size_of = size
        self.size = 0
        self.items: OrderedDict[Hashable, tuple[T, int]] = OrderedDict()
        self.lock = threading.Lock()
        #: Loads under way: a second caller of the same key waits for the first one's value.
        self.loading: dict[Hashable, Future[T]] = {}

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The value kept for `key`, else `load()` (kept when it fits the budget); a key being
        loaded by another thread is waited for, not loaded twice.
        """
        found = self.peek(key)
        if found is not None:
            return found
        with self.lock:
            pending = self.loading.get(key)
            mine = pending is None
            if pending is None:
                pending = self.loading[key] = Future()
        if not mine:
            return pending.result()
        try:
            value = load()
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        else:
            self.put(key, value)
            pending.set_result(value)
            return value
        finally:
            with self.lock:
                self.loading.pop(key, None)

    def peek(self, key: Hashable) -> T | None:
        with self.lock:
            found = self.items.get(key)
            if found is None:
                return None
            self.items.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: T) -> None:
        size = self.size_of(value)
        with self.lock:
            if key in self.items or size > self.budget:
                return
            self.items[key] = (value, size)
            self.size += size
            while self.size > self.budget:
                _, (_, dropped) = self.items.popitem(last=False)
                self.size -= dropped
