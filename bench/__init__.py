"""Benchmarks run by `make bench`; each `bench_<area>.py` exposes `run() -> list[Figure]`."""
