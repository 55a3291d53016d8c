"""CPU of streamed model calls on the provider path: litellm's transport vs OpenProgram's.

``python -m bench provider_stream [--streams N] [--pieces N] [--rate N] [--runs N]``

A paced fake OpenAI-compatible server (``bench._paced_model``) runs in its own process;
this process starts N streams at once through ``stream_chat`` (``openai/paced`` with an
``api_base``) and reads them to the end, first with ``OPENPROGRAM_OPENAI_TRANSPORT=litellm``
(litellm's ``acompletion`` sends the request), then with ``openprogram`` (we send it over
aiohttp), interleaved, ``--runs`` times. It measures this process's CPU (all threads,
``time.process_time``), not wall time: the machine is shared. Each transport also runs
calls that stream a single piece; their CPU per call is the fixed cost, and the rest of
a long call's CPU divided by its extra pieces is the cost per piece. The floor row reads
the same streams as bare socket reads (asyncio, no HTTP client, no parsing): what one
task wake-up per network read costs on this machine, which no client can go under.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench._paced_model import paced_model_start
from bench._util import print_table

ROOT = Path(__file__).resolve().parent.parent
_MODEL = "openai/paced"
_TRANSPORTS = ("litellm", "openprogram")
_FLOOR = "floor: bare socket reads"
_SHORT_WAVES = 3
"""Waves of one-piece calls per run: their CPU is small, so take more of it."""


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench provider_stream")
    parser.add_argument("--streams", type=int, default=50, help="streams at once (50)")
    parser.add_argument("--pieces", type=int, default=150, help="text pieces per stream (150)")
    parser.add_argument("--rate", type=float, default=50.0, help="pieces per second (50)")
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs (5)")
    return parser.parse_args(argv)


async def _one_stream(url: str) -> tuple[int, int]:
    """(text deltas, finished calls) of one streamed call read to its end."""
    from openprogram.agent.types import Message
    from openprogram.providers import RetryPolicy, stream_chat

    deltas = finished = 0
    async for delta in stream_chat(
        model=_MODEL,
        messages=[Message(role="user", content="stream please")],
        retry=RetryPolicy(attempts=1),
        cancel=asyncio.Event(),  # as a turn passes it (its Stop button)
        api_base=url,
        api_key="bench",
    ):
        if delta.done:
            finished += 1
        elif delta.text:
            deltas += 1
    return deltas, finished


async def _one_raw_stream(url: str) -> tuple[int, int]:
    """The floor: the same reply read as bare socket reads (no HTTP client, no parsing)."""
    target = urlsplit(url)
    reader, writer = await asyncio.open_connection(target.hostname, target.port)
    body = b'{"model": "paced", "messages": [{"role": "user", "content": "x"}]}'
    writer.write(
        b"POST %s/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
        % (target.path.encode(), len(body))
        + body
    )
    reads = 0
    while await reader.read(65536):
        reads += 1
    writer.close()
    return reads, 1


async def _run(url: str, streams: int, *, raw: bool = False) -> tuple[float, int, int]:
    """CPU seconds of ``streams`` simultaneous calls, text deltas, finished calls."""
    one = _one_raw_stream if raw else _one_stream
    started = time.process_time()
    results = await asyncio.gather(*(one(url) for _ in range(streams)))
    cpu = time.process_time() - started
    return cpu, sum(r[0] for r in results), sum(r[1] for r in results)


async def _measure(options: argparse.Namespace, long_url: str, short_url: str) -> dict:
    samples: dict[str, dict[str, list[float]]] = {
        t: {"call_ms": [], "piece_us": [], "deltas": []} for t in _TRANSPORTS
    }
    for transport in _TRANSPORTS:  # warm up: imports, route cache, connection setup
        os.environ["OPENPROGRAM_OPENAI_TRANSPORT"] = transport
        await _run(short_url, 2)
    samples[_FLOOR] = {"call_ms": [], "piece_us": [], "deltas": []}
    for _ in range(options.runs):
        cpu, reads, _ = await _run(long_url, options.streams, raw=True)
        samples[_FLOOR]["piece_us"].append(cpu / reads * 1e6)
        for transport in _TRANSPORTS:
            os.environ["OPENPROGRAM_OPENAI_TRANSPORT"] = transport
            short = [await _run(short_url, options.streams) for _ in range(_SHORT_WAVES)]
            long_cpu, deltas, long_done = await _run(long_url, options.streams)
            if long_done != options.streams or any(r[2] != options.streams for r in short):
                raise RuntimeError(f"{transport}: a stream did not finish")
            per_call = sum(r[0] for r in short) / (options.streams * _SHORT_WAVES)
            per_piece = (long_cpu / options.streams - per_call) / (options.pieces - 1)
            samples[transport]["call_ms"].append(per_call * 1e3)
            samples[transport]["piece_us"].append(per_piece * 1e6)
            samples[transport]["deltas"].append(deltas / options.streams)
    return samples


def main(argv: list[str] | None = None) -> None:
    options = _options(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, str(ROOT))
    previous = os.environ.get("OPENPROGRAM_OPENAI_TRANSPORT")
    long_proc, long_url = paced_model_start(options.rate, options.pieces)
    short_proc, short_url = paced_model_start(options.rate, 1)
    try:
        samples = asyncio.run(_measure(options, long_url, short_url))
    finally:
        for proc in (long_proc, short_proc):
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=10)
        if previous is None:
            os.environ.pop("OPENPROGRAM_OPENAI_TRANSPORT", None)
        else:
            os.environ["OPENPROGRAM_OPENAI_TRANSPORT"] = previous
    rows = []
    for transport in (*_TRANSPORTS, _FLOOR):
        got = samples[transport]
        rows.append(
            [
                transport,
                f"{statistics.median(got['call_ms']):.2f}" if got["call_ms"] else "—",
                f"{statistics.median(got['piece_us']):.1f}",
                f"{statistics.median(got['deltas']):.0f}" if got["deltas"] else "—",
                " ".join(f"{v:.0f}" for v in got["piece_us"]),
            ]
        )
    print_table(
        f"Provider path CPU: {options.streams} streams at once × {options.pieces} pieces at "
        f"{options.rate:g}/s, medians of {options.runs} interleaved runs (this process's CPU)",
        [
            "transport",
            "CPU ms per call",
            "CPU µs per piece",
            "deltas per call",
            "µs per piece, each run",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
