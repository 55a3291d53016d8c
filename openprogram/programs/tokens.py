"""Prompt-size accounting in tokens (tiktoken ``cl100k_base``), offline.

tiktoken downloads its encodings on first use unless ``TIKTOKEN_CACHE_DIR``
already holds them. litellm ships that cache file, so we point tiktoken at
litellm's directory, located with ``find_spec`` (importing litellm itself would
cost seconds and hundreds of megabytes). Without tiktoken or the file, counts
fall back to ``len(text) // 4``, the usual rule of thumb.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from openprogram.agent.types import AgentTool

__all__ = ["count_tokens", "tokenizer_name", "tools_prompt_tokens"]

_ENCODING = "cl100k_base"
# sha1 of tiktoken's download URL for cl100k_base: the file name tiktoken caches it under.
_CL100K_CACHE_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"

_lock = threading.Lock()
_encoder: Callable[[str], int] | None = None
_encoder_name = ""


def _litellm_tokenizer_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        directory = Path(location) / "litellm_core_utils" / "tokenizers"
        if (directory / _CL100K_CACHE_FILE).is_file():
            return directory
    return None


def _load_encoder() -> tuple[Callable[[str], int], str]:
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        directory = _litellm_tokenizer_dir()
        if directory is None:
            return _approximate, "len/4"
        os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(_ENCODING)
    except Exception:
        # No network by design: a missing cache must degrade the estimate, not fail a page.
        return _approximate, "len/4"
    return (lambda text: len(encoding.encode(text, disallowed_special=()))), _ENCODING


def _approximate(text: str) -> int:
    return len(text) // 4


def _encoder_fn() -> Callable[[str], int]:
    global _encoder, _encoder_name
    if _encoder is None:
        with _lock:
            if _encoder is None:
                _encoder, _encoder_name = _load_encoder()
    return _encoder


def tokenizer_name() -> str:
    """``"cl100k_base"``, or ``"len/4"`` when counts are estimates."""
    _encoder_fn()
    return _encoder_name


def count_tokens(text: str) -> int:
    return _encoder_fn()(text)


def tools_prompt_tokens(tools: Iterable[AgentTool]) -> int:
    """Tokens the tools' wire schemas (``tool.to_wire()``) add to a request."""
    wire = [tool.to_wire() for tool in tools]
    if not wire:
        return 0
    return count_tokens(json.dumps(wire, ensure_ascii=False, separators=(",", ":")))
