"""Shared shape of every benchmark: a figure, its target, and how it compares.

Benchmarks report ratios against a floor measured in the same run where one exists (STYLE habit 10);
absolute targets from the issues are printed beside the figure. Nothing here is asserted by tests.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Figure", "median_seconds"]


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    value: float
    unit: str
    target: str = ""  # e.g. "<= 250 ms"
    ok: bool | None = None  # None: informational
    floor: float | None = None  # the same work measured without the server, same run
    note: str = ""

    def line(self) -> str:
        verdict = {True: "PASS", False: "MISS", None: "    "}[self.ok]
        ratio = ""
        if self.floor:
            ratio = f"  (x{self.value / self.floor:.2f} of floor {self.floor:,.3f} {self.unit})"
        target = f"  target {self.target}" if self.target else ""
        note = f"  [{self.note}]" if self.note else ""
        return f"{verdict}  {self.name:<58} {self.value:>12,.3f} {self.unit}{target}{ratio}{note}"


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
