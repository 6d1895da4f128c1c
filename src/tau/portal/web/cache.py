"""A small thread-safe cache of computed responses, keyed on the data's version.

Many browser tabs and the live refresh ask for the same snapshot; it is built once per store
version and served from memory until the store changes. One lock per key means concurrent
requests for a cold key wait for one build instead of each building it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Memo(Generic[T]):
    def __init__(self, size: int = 64, ttl: float | None = None) -> None:
        self.size = size
        self.ttl = ttl
        self._items: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(
        self, key: Hashable, build: Callable[[], T], *, clock: Callable[[], float] = time.monotonic
    ) -> T:
        with self._guard:
            hit = self._fresh(key, clock())
            if hit is not None:
                return hit[1]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                hit = self._fresh(key, clock())
                if hit is not None:
                    return hit[1]
            value = build()
            with self._guard:
                self._items[key] = (clock(), value)
                self._items.move_to_end(key)
                while len(self._items) > self.size:
                    old, _ = self._items.popitem(last=False)
                    self._locks.pop(old, None)
            return value

    def _fresh(self, key: Hashable, now: float) -> tuple[float, T] | None:
        hit = self._items.get(key)
        if hit is None or (self.ttl is not None and now - hit[0] > self.ttl):
            return None
        self._items.move_to_end(key)
        return hit
