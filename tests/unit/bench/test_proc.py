"""A server's CPU read from /proc counts the children it forks, live and exited."""

from __future__ import annotations

import os
import subprocess
import sys

from bench._proc import process_cpu_seconds, process_tree_cpu_seconds

_BURN = (
    "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"
)


def test_a_process_tree_counts_a_child_that_ran_and_exited_but_the_process_alone_does_not():
    me = os.getpid()
    tree_before, own_before = process_tree_cpu_seconds(me), process_cpu_seconds(me)

    subprocess.run([sys.executable, "-c", _BURN.format(seconds=0.3)], check=True)

    # Counted in clock ticks (1/100 s): the child's 0.3 s of its own CPU, at least.
    assert process_tree_cpu_seconds(me) - tree_before >= 0.29
    assert process_cpu_seconds(me) - own_before < 0.29


def test_a_process_tree_counts_a_child_that_is_still_running():
    me = os.getpid()
    before = process_tree_cpu_seconds(me)
    burn_then_wait = _BURN.format(seconds=0.3) + "print('burnt', flush=True)\ninput()\n"
    child = subprocess.Popen(
        [sys.executable, "-c", burn_then_wait],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "burnt\n"  # it has used its CPU and lives on

        assert process_tree_cpu_seconds(me) - before >= 0.29
    finally:
        child.communicate("\n")
