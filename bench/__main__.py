"""``python -m bench [NAME ...]``: run every bench/bench_*.py module's main(), in order."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main(argv: list[str]) -> int:
    import bench

    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    if argv:
        names = [n for n in names if any(a in n for a in argv)]
    print(f"python {sys.version.split()[0]} · {os.cpu_count()} cores\n")
    all_started = time.perf_counter()
    for name in names:
        started = time.perf_counter()
        importlib.import_module(f"bench.{name}").main()
        print(f"({name} took {time.perf_counter() - started:.1f} s)\n", flush=True)
    print(f"(all {len(names)} benchmarks took {time.perf_counter() - all_started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
