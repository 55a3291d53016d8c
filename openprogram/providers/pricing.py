"""What one model call cost, from its token counts.

Prices come from, in order:

1. the deployment's overrides (:func:`set_price_overrides`, fed by the web app from
   ``OPENPROGRAM_MODEL_PRICES``): USD per million input, output and cached-input tokens,
   for self-hosted models or negotiated rates; a price of 0 means free;
2. the offline model, which is free;
3. litellm's bundled cost map (``litellm.model_cost``, read locally: the host sets
   ``LITELLM_LOCAL_MODEL_COST_MAP`` before litellm is imported).

A model found nowhere costs 0 and is reported with ``known=False``, so the UI can
say "price unknown" instead of pretending it was free. Pricing never raises.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openprogram.providers.routing import litellm_model_name

__all__ = ["CallCost", "ModelPrice", "call_cost", "parse_price_overrides", "set_price_overrides"]

_PER_MILLION = 1_000_000
_FREE_MODELS = frozenset({"offline", "openprogram/offline"})


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None
    """Cached prompt tokens; None means they cost what other input tokens cost."""


@dataclass(frozen=True)
class CallCost:
    usd: float
    known: bool


_overrides: dict[str, ModelPrice] = {}


def set_price_overrides(prices: Mapping[str, ModelPrice]) -> None:
    """Replace the deployment's price overrides (model name → price)."""
    global _overrides
    _overrides = dict(prices)


def parse_price_overrides(value: Any) -> dict[str, ModelPrice]:
    """``{"model": 0 | number | {"input": n, "output": n, "cached_input": n}}`` → prices.

    Raises ValueError naming the model and the field for anything else.
    """
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object mapping model names to prices")
    prices: dict[str, ModelPrice] = {}
    for model, spec in value.items():
        if isinstance(spec, bool) or not isinstance(spec, int | float | dict):
            raise ValueError(f"price for {model!r} must be a number or an object")
        if not isinstance(spec, dict):
            prices[model] = ModelPrice(_amount(model, "price", spec), _amount(model, "price", spec))
            continue
        unknown = sorted(set(spec) - {"input", "output", "cached_input"})
        if unknown:
            raise ValueError(f"price for {model!r} has unknown field(s) {', '.join(unknown)}")
        if "input" not in spec or "output" not in spec:
            raise ValueError(f"price for {model!r} needs both 'input' and 'output'")
        cached = spec.get("cached_input")
        prices[model] = ModelPrice(
            _amount(model, "input", spec["input"]),
            _amount(model, "output", spec["output"]),
            None if cached is None else _amount(model, "cached_input", cached),
        )
    return prices


def _amount(model: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{field} for {model!r} must be a number ≥ 0, got {value!r}")
    return float(value)


def _litellm_price(model: str) -> ModelPrice | None:
    litellm = sys.modules.get("litellm")
    if litellm is None:  # no call went through litellm, so there is nothing to price
        return None
    cost_map: Mapping[str, Any] = getattr(litellm, "model_cost", {}) or {}
    routed = litellm_model_name(model)
    for name in (model, routed, routed.split("/", 1)[-1]):
        entry = cost_map.get(name)
        if isinstance(entry, Mapping) and "input_cost_per_token" in entry:
            cached = entry.get("cache_read_input_token_cost")
            return ModelPrice(
                float(entry.get("input_cost_per_token") or 0) * _PER_MILLION,
                float(entry.get("output_cost_per_token") or 0) * _PER_MILLION,
                None if cached is None else float(cached) * _PER_MILLION,
            )
    return None


def price_for(model: str) -> ModelPrice | None:
    if model in _overrides:
        return _overrides[model]
    if model in _FREE_MODELS:
        return ModelPrice(0.0, 0.0)
    try:
        return _litellm_price(model)
    except Exception:  # a malformed cost map entry must not fail a turn
        return None


def call_cost(model: str, usage: Mapping[str, int]) -> CallCost:
    """The cost of one call with ``usage`` (prompt, completion and cached tokens)."""
    price = price_for(model)
    if price is None:
        return CallCost(0.0, False)
    prompt = int(usage.get("prompt_tokens", 0) or 0)
    cached = min(int(usage.get("cached_tokens", 0) or 0), prompt)
    completion = int(usage.get("completion_tokens", 0) or 0)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    usd = ((prompt - cached) * price.input + cached * cached_rate + completion * price.output) / (
        _PER_MILLION
    )
    return CallCost(usd, True)
