"""The limits' prlimit prefix, their sizes in words, and the sentence a limit hit leaves."""

from __future__ import annotations

import signal

import pytest

from openprogram.security.sandbox_limits import (
    SandboxLimits,
    format_size,
    limit_sentence,
    prlimit_prefix,
)

DEFAULTS = SandboxLimits()


def test_the_defaults_are_those_the_readme_states():
    assert (DEFAULTS.memory_bytes, DEFAULTS.file_bytes) == (1 << 30, 1 << 30)
    assert (DEFAULTS.cpu_seconds, DEFAULTS.processes, DEFAULTS.tmp_bytes) == (60, 256, 256 << 20)
    assert DEFAULTS.address_space_bytes == 3 << 30


def test_prlimit_sets_address_space_file_size_cpu_soft_below_hard_and_no_core():
    prefix = prlimit_prefix(DEFAULTS)
    assert prefix[-1] == "--"
    assert f"--as={3 << 30}" in prefix and f"--fsize={1 << 30}" in prefix
    assert "--cpu=60:65" in prefix and "--core=0" in prefix


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1"])
def test_a_limit_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="positive integer"):
        SandboxLimits(memory_bytes=bad)


def test_sizes_read_as_a_person_writes_them():
    assert format_size(1 << 30) == "1 GiB"
    assert format_size(256 << 20) == "256 MiB"
    assert format_size(1536 << 20) == "1.5 GiB"
    assert format_size(512) == "512 bytes"


def test_each_limit_has_its_plain_sentence():
    assert (
        limit_sentence(limits=DEFAULTS, exit_code=137, oom_kills=1)
        == "stopped: the command used more than 1 GiB of memory"
    )
    assert (
        limit_sentence(limits=DEFAULTS, exit_code=128 + signal.SIGXCPU)
        == "stopped: the command used more than 60 s of CPU"
    )
    assert (
        limit_sentence(limits=DEFAULTS, exit_code=128 + signal.SIGXFSZ)
        == "stopped: the command tried to write a file larger than 1 GiB"
    )
    assert limit_sentence(limits=DEFAULTS, exit_code=1, tmp_full=True) == "/tmp is full (256 MiB)"
    assert "limit of 256 processes" in limit_sentence(
        limits=DEFAULTS, exit_code=0, process_limit_hits=3
    )


def test_a_signal_the_shell_reported_mid_script_counts_too():
    output = "bash: line 1:  4 File size limit exceeded  head -c 2G /dev/zero > big\nafter\n"
    assert "larger than 1 GiB" in limit_sentence(limits=DEFAULTS, exit_code=0, output=output)


def test_a_plain_kill_or_failure_is_no_limit():
    assert limit_sentence(limits=DEFAULTS, exit_code=137) is None
    assert limit_sentence(limits=DEFAULTS, exit_code=1, output="No space left on device") is None
