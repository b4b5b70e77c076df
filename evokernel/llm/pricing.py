"""What an LLM call cost: a small table of list prices in USD per 1M input/output tokens.

Prices are the providers' public list prices (standard tier, no batch or cache discounts) as
known when this table was written; they change, so override them with the ``LLM_PRICES``
environment variable: a JSON object, or the path of a JSON file holding one, mapping a model
name to ``[input, output]`` or ``{"input": x, "output": y}`` (USD per 1M tokens). A model name
matches an entry exactly or as a dated snapshot (``gpt-4o-2024-08-06`` and
``claude-opus-4-5-20251101`` match ``gpt-4o`` and ``claude-opus-4-5``; ``claude-opus-4-6`` does
not match ``claude-opus-4``: a newer model is not priced by guess). A model that matches nothing costs 0.0 with ``known=False`` — never an
invented figure. OpenAI-compatible servers and the scripted provider use no built-in prices.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

PRICES_ENV = "LLM_PRICES"
_SNAPSHOT = re.compile(r"(.+?)-(\d{8}|\d{4}-\d{2}-\d{2}|latest)")

# USD per 1M tokens (input, output).
BUILTIN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4-5": (5.00, 25.00),
}


class PriceTableError(ValueError):
    """The price override is malformed; the message names the variable or file and the field."""


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float


@dataclass(frozen=True)
class Cost:
    usd: float
    known: bool


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, Price]

    def lookup(self, model: str) -> Price | None:
        """The entry named ``model``, or the one it is a dated/latest snapshot of; else None."""
        if model in self.prices:
            return self.prices[model]
        match = _SNAPSHOT.fullmatch(model)
        return self.prices.get(match.group(1)) if match else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> Cost:
        price = self.lookup(model)
        if price is None:
            return Cost(usd=0.0, known=False)
        usd = (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6
        return Cost(usd=round(usd, 8), known=True)


def _parse_price(source: str, model: str, value: object) -> Price:
    if isinstance(value, dict) and set(value) >= {"input", "output"}:
        pair = (value["input"], value["output"])
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        pair = tuple(value)
    else:
        raise PriceTableError(f"{source}: {model}: expected [input, output] or "
                              "{\"input\": x, \"output\": y} in USD per 1M tokens")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in pair):
        raise PriceTableError(f"{source}: {model}: prices must be non-negative numbers")
    return Price(float(pair[0]), float(pair[1]))


def parse_overrides(text: str, source: str = PRICES_ENV) -> dict[str, Price]:
    """Read the override JSON (inline, or a path to a file holding it)."""
    stripped = text.strip()
    if stripped and not stripped.startswith("{"):
        path = Path(stripped)
        source = str(path)
        try:
            stripped = path.read_text()
        except OSError as exc:
            raise PriceTableError(f"{PRICES_ENV}: cannot read price file {path} ({exc.strerror})") from None
    try:
        raw = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise PriceTableError(f"{source}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise PriceTableError(f"{source}: expected a JSON object mapping model names to prices")
    return {str(model): _parse_price(source, str(model), value) for model, value in raw.items()}


def load_price_table(builtin: bool = True, overrides: str | None = None) -> PriceTable:
    """The table for a provider: built-in prices (if ``builtin``) updated by the overrides.

    ``overrides`` defaults to the ``LLM_PRICES`` environment variable.
    """
    prices = {m: Price(*p) for m, p in BUILTIN_PRICES.items()} if builtin else {}
    text = overrides if overrides is not None else os.environ.get(PRICES_ENV)
    if text:
        prices.update(parse_overrides(text))
    return PriceTable(prices=prices)
