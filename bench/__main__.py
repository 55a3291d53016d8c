"""``python -m bench [NAME ...] [--OPTION ...]``: run bench/bench_*.py modules' main(), in order.

Names select the benches whose module name contains one of them (none: all). Everything
from the first argument starting with ``-`` on is passed to the selected bench's
``main(argv)``, e.g. ``python -m bench streaming_load --chats 20 --arrivals spread``;
only benches that take options accept them (``python -m bench NAME --help`` lists them).
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def split_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """(bench names, options for them): options start at the first ``-`` argument."""
    for index, arg in enumerate(argv):
        if arg.startswith("-"):
            return argv[:index], argv[index:]
    return argv, []


def _takes_options(main: object) -> bool:
    return callable(main) and bool(inspect.signature(main).parameters)


def main(argv: list[str]) -> int:
    import bench

    wanted, options = split_arguments(argv)
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    if wanted:
        names = [n for n in names if any(a in n for a in wanted)]
    if options:
        mains = {name: importlib.import_module(f"bench.{name}").main for name in names}
        refusing = [name for name, bench_main in mains.items() if not _takes_options(bench_main)]
        if refusing or not names:
            print(
                f"options {' '.join(options)!r} given, but {', '.join(refusing) or 'no bench'}"
                " takes none: name one bench that does (concurrency, streaming_load)",
                file=sys.stderr,
            )
            return 2
    print(f"python {sys.version.split()[0]} · {os.cpu_count()} cores\n")
    all_started = time.perf_counter()
    for name in names:
        started = time.perf_counter()
        bench_main = importlib.import_module(f"bench.{name}").main
        if _takes_options(bench_main):
            bench_main(options)
        else:
            bench_main()
        print(f"({name} took {time.perf_counter() - started:.1f} s)\n", flush=True)
    print(f"(all {len(names)} benchmarks took {time.perf_counter() - all_started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
