"""Run every `bench/bench_<area>.py` (or those named on the command line) and print their figures."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench
from bench.common import Figure


def main(argv: list[str]) -> int:
    wanted = set(argv)
    names = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_"))
    missed = 0
    for name in names:
        if wanted and name.removeprefix("bench_") not in wanted and name not in wanted:
            continue
        module = importlib.import_module(f"bench.{name}")
        sys.stdout.write(f"== {name}\n")
        sys.stdout.flush()
        figures: list[Figure] = module.run()
        for figure in figures:
            sys.stdout.write(figure.line() + "\n")
            missed += figure.ok is False
        sys.stdout.flush()
    sys.stdout.write(f"== {missed} figure(s) missed their target\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
