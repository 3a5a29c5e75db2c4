"""`Lazy`: the one way the server builds something on first use (docs/architecture.md, Start-up).

What a call needs but answering `initialize` does not (the tools' models, the SQL policy's parsers,
the executor and its pool, libpq's keyword list) is a `Lazy`: built by the session's warm-up after
the handshake, or by whichever request needs it first, once, from any thread. Imports nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Lazy"]

T = TypeVar("T", covariant=True)  # a Lazy[Sub] serves where a Lazy[Base] is expected


class Lazy(Generic[T]):
    """A value that `build()` makes on the first `get()`; later calls return the same value.

    Thread-safe: concurrent first calls build once (the others wait for it); once built, `get`
    takes no lock. A `build` that raises leaves it unbuilt, so the next `get` tries again.
    `close()` ends it: it hands back the value, if one was built, for its owner to release, and
    any later `get` raises `RuntimeError`.
    """

    __slots__ = ("_build", "_lock", "_value")  # `_value` is unset until built

    _value: T

    def __init__(self, build: Callable[[], T]) -> None:
        self._build: Callable[[], T] | None = build
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return hasattr(self, "_value")

    def get(self) -> T:
        """The value; the first call blocks on the build (or on another thread's)."""
        try:
            return self._value  # built: one slot read, no lock
        except AttributeError:
            return self._build_once()

    def _build_once(self) -> T:
        with self._lock:
            if not hasattr(self, "_value"):
                if self._build is None:
                    raise RuntimeError("used after close()")
                self._value = self._build()
            return self._value

    def close(self) -> T | None:
        """No more builds. Returns the value if one was built (waiting for a build under way)."""
        with self._lock:
            self._build = None
            if not hasattr(self, "_value"):
                return None
            value = self._value
            del self._value
        return value
