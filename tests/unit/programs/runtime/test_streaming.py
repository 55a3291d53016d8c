"""on_update: chunks reach the caller in order, on the loop, within bounded memory."""

from __future__ import annotations

import asyncio
import threading

from openprogram.programs.decorator import build_function_tool


async def test_on_update_chunks_reach_the_caller_in_order():
    async def progress(on_update) -> str:
        """Report progress."""
        for step in range(5):
            on_update(f"step {step}\n")
            await asyncio.sleep(0)
        return "done"

    received: list[str] = []
    result = await build_function_tool(progress).execute("c1", {}, on_update=received.append)
    assert result.content == "done"
    assert "".join(received) == "".join(f"step {i}\n" for i in range(5))


async def test_updates_from_a_sync_tool_arrive_on_the_event_loop_thread_via_an_async_consumer():
    loop_thread = threading.get_ident()
    seen_threads: set[int] = set()
    received: list[str] = []

    def work(on_update) -> str:
        """Work."""
        for i in range(50):
            on_update(f"{i},")
        return "ok"

    async def consume(text: str) -> None:
        seen_threads.add(threading.get_ident())
        received.append(text)

    result = await build_function_tool(work).execute("c1", {}, on_update=consume)
    assert result.content == "ok"
    assert "".join(received) == "".join(f"{i}," for i in range(50))
    assert seen_threads == {loop_thread}


async def test_a_tool_that_only_streams_returns_its_bounded_tail():
    def chatter(on_update) -> None:
        """Chatter."""
        for i in range(1_000):
            on_update(f"{i:04d}")

    tool = build_function_tool(chatter, stream_capacity_chars=40)
    result = await tool.execute("c1", {})
    assert result.content.endswith("".join(f"{i:04d}" for i in range(990, 1_000)))
    assert "earlier characters dropped" in result.content
    assert len(result.content.split("\n", 1)[1]) == 40


async def test_a_broken_update_consumer_does_not_break_the_call():
    async def talk(on_update) -> str:
        """Talk."""
        on_update("hi")
        return "fine"

    def broken(_text: str) -> None:
        raise RuntimeError("consumer down")

    result = await build_function_tool(talk).execute("c1", {}, on_update=broken)
    assert (result.content, result.is_error) == ("fine", False)


async def test_updates_from_a_body_that_outlived_its_call_are_not_forwarded():
    release, finished = threading.Event(), threading.Event()

    def lingering(on_update, cancel) -> str:
        """Linger after a timeout."""
        release.wait(60)
        on_update("too late")
        finished.set()
        return "late"

    received: list[str] = []
    tool = build_function_tool(lingering, timeout=0.05)
    result = await tool.execute("c1", {}, on_update=received.append)
    assert "timed out" in result.content
    release.set()
    assert await asyncio.to_thread(finished.wait, 60)
    await asyncio.sleep(0)  # give a wrongly scheduled delivery its chance to run
    assert received == []
