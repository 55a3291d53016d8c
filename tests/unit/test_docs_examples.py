"""The ``python runnable`` code blocks of docs/*.md run, in order, and their asserts hold.

A block opts in with the info string ``python runnable``. The blocks of one page share
a namespace (a later block may use what an earlier one defined) and may use top-level
``await``. Each page runs with a clean registry and the offline model.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"^```python runnable[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def runnable_blocks(page: Path) -> list[tuple[int, str]]:
    """``(line number, code)`` of each runnable block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in _BLOCK.finditer(text)]


PAGES = sorted(page for page in DOCS.glob("*.md") if runnable_blocks(page))


def test_the_agents_guide_has_runnable_examples():
    assert len(runnable_blocks(DOCS / "agents.md")) >= 4


def test_the_block_finder_reads_only_marked_python_blocks(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nskipped\n```\n\n```python runnable\nx = 1\n```\n")
    assert runnable_blocks(page) == [(6, "x = 1\n")]


def _run_page(page: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for line, code in runnable_blocks(page):
        # Line numbers in tracebacks point into the Markdown page.
        source = "\n" * (line - 1) + code
        compiled = compile(
            source, str(page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
        )
        if compiled.co_flags & inspect.CO_COROUTINE:
            # A block with top-level await gets an event loop of its own...
            asyncio.run(eval(compiled, namespace))
        else:
            # ...and a plain block runs outside any, as a reader's script would
            # (``agent(prompt)`` refuses to run on a running loop).
            exec(compiled, namespace)


@pytest.mark.usefixtures("clean_registry")
@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_runnable_examples_of_a_docs_page_run(page: Path):
    _run_page(page)


def test_a_failing_example_fails_its_page_with_the_markdown_line(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("Intro\n\n```python runnable\nvalue = 1\nassert value == 2\n```\n")
    with pytest.raises(AssertionError) as failure:
        _run_page(page)
    assert failure.traceback[-1].lineno + 1 == 5
