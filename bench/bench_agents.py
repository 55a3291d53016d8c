"""What Agent call scopes cost: a scoped method call, a method tool call, a nested run."""

from __future__ import annotations

import asyncio

from bench._util import median_seconds, print_table, ratio

__all__ = ["main"]


def main() -> None:
    from openprogram import Agent, function
    from openprogram.agent.dispatcher import process_user_turn
    from openprogram.agent.events import TurnRequest
    from openprogram.programs.registry import restore_registry, snapshot_registry

    snapshot = snapshot_registry()
    try:

        class Plain:
            def step(self, n: int) -> int:
                return n + 1

        @function(name="bench_agents_add")
        def add(n: int) -> int:
            """Add one."""
            return n + 1

        class Scoped(Agent):
            method_options = {"bench_agents_step": {"tool": True}}

            def bench_agents_step(self, n: int) -> int:
                """Add one."""
                return n + 1

            async def relay(self) -> str:
                return await self.arun("/bench_agents_add n=1")

        plain, scoped = Plain(), Scoped()
        plain_s = median_seconds(lambda: plain.step(1), number=20_000)
        scoped_s = median_seconds(lambda: scoped.bench_agents_step(1), number=20_000)
        function_tool, method_tool = add._agent_tool, scoped.bench_agents_step._agent_tool

        def execute(tool) -> None:
            asyncio.run(_repeat(tool, 500))

        function_s = median_seconds(lambda: execute(function_tool), repeat=5) / 500
        method_s = median_seconds(lambda: execute(method_tool), repeat=5) / 500

        async def turn(text: str) -> None:
            async for _ in process_user_turn(TurnRequest(text=text)):
                pass

        asyncio.run(turn("/bench_agents_add n=1"))  # warm-up: litellm import, first call
        direct_s = median_seconds(lambda: asyncio.run(turn("/bench_agents_add n=1")), repeat=5)
        nested_s = median_seconds(lambda: asyncio.run(scoped.relay()), repeat=5)
        print_table(
            "Agent call scopes (median)",
            ["what", "time", "vs baseline"],
            [
                ["plain method call", f"{plain_s * 1e6:.2f} µs", "1.00×"],
                ["Agent method call (scope)", f"{scoped_s * 1e6:.2f} µs", ratio(scoped_s, plain_s)],
                ["@function tool execute", f"{function_s * 1e6:.1f} µs", "1.00×"],
                [
                    "Agent method tool execute",
                    f"{method_s * 1e6:.1f} µs",
                    ratio(method_s, function_s),
                ],
                ["offline turn, 1 tool call", f"{direct_s * 1e3:.1f} ms", "1.00×"],
                [
                    "same turn nested in an Agent run",
                    f"{nested_s * 1e3:.1f} ms",
                    ratio(nested_s, direct_s),
                ],
            ],
        )
    finally:
        restore_registry(snapshot)


async def _repeat(tool, times: int) -> None:
    for index in range(times):
        await tool.execute(f"c{index}", {"n": index})


if __name__ == "__main__":
    main()
