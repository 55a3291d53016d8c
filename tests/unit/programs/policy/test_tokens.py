"""Token accounting: real cl100k_base counts, offline, without importing litellm."""

from __future__ import annotations

import subprocess
import sys

from openprogram.programs.tokens import count_tokens, tokenizer_name, tools_prompt_tokens


def test_it_counts_with_cl100k_base():
    assert tokenizer_name() == "cl100k_base"
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_tool_schemas_cost_tokens_in_proportion_to_their_size(add_tool):
    small = add_tool("read", "Read a file.")
    big = add_tool(
        "search",
        "Search issues in a repository by text, label and author, newest first.",
        parameters={
            "type": "object",
            "properties": {
                name: {"type": "string", "description": f"The {name} to filter by."}
                for name in ("repo", "label", "author", "text")
            },
        },
    )
    assert tools_prompt_tokens([]) == 0
    assert 0 < tools_prompt_tokens([small]) < tools_prompt_tokens([big])
    assert tools_prompt_tokens([small, big]) > tools_prompt_tokens([big])


def test_counting_never_imports_litellm_nor_touches_the_network():
    code = (
        "import os, sys; os.environ.pop('TIKTOKEN_CACHE_DIR', None)\n"
        "os.environ['HTTPS_PROXY'] = os.environ['HTTP_PROXY'] = 'http://127.0.0.1:9'\n"
        "from openprogram.programs.tokens import count_tokens, tokenizer_name\n"
        "assert count_tokens('hello world') == 2, count_tokens('hello world')\n"
        "assert tokenizer_name() == 'cl100k_base'\n"
        "assert 'litellm' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
