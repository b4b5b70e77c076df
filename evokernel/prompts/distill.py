"""Parse the distillation answer into memory items, forgiving sloppy output.

The requested format is one fenced JSON list of ``{"kind", "title", "body"}`` objects. Accepted
as well: an unfenced list, ``{"items": [...]}``, a single object, trailing commas, kind spellings
such as "best practice" / "Best-Practice" / "lesson", a missing title (taken from the body), and
as a last resort Markdown bullets ``- experience: Title — body``. Entries without a body or with
an unknown kind are dropped; duplicates (same kind and title) are kept once; at most
``MAX_ITEMS`` items, titles and bodies are length-capped.
"""

from __future__ import annotations

import json
import re

from evokernel.prompts.types import DistilledItem

MAX_ITEMS = 12
MAX_TITLE = 120
MAX_BODY = 2000

_FENCED = re.compile(r"```[\w-]*\s*\n(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([\]}])")
_BULLET = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])\s*\**\[?(experience|success|failure|lesson|best[ _-]?practices?)\]?\**"
    r"\s*[:\-–—]\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_KINDS = {
    "experience": "experience", "success": "experience", "failure": "experience",
    "lesson": "experience", "experiences": "experience", "summary": "experience",
    "best_practice": "best_practice", "best_practices": "best_practice", "practice": "best_practice",
    "bestpractice": "best_practice", "tip": "best_practice",
}


def _normalise_kind(kind: object) -> str | None:
    if not isinstance(kind, str):
        return None
    key = re.sub(r"[\s-]+", "_", kind.strip().lower())
    return _KINDS.get(key)


def _loads(candidate: str) -> object | None:
    for text in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            continue
    return None


def _json_candidates(text: str) -> list[str]:
    candidates = [m.group(1) for m in _FENCED.finditer(text)]
    for open_char, close_char in (("[", "]"), ("{", "}")):
        start, end = text.find(open_char), text.rfind(close_char)
        if 0 <= start < end:
            candidates.append(text[start:end + 1])
    return candidates


def _as_entries(value: object) -> list:
    if isinstance(value, dict):
        inner = value.get("items")
        return inner if isinstance(inner, list) else [value]
    return value if isinstance(value, list) else []


def _item(entry: object) -> DistilledItem | None:
    if not isinstance(entry, dict):
        return None
    kind = _normalise_kind(entry.get("kind") or entry.get("type"))
    body = entry.get("body") or entry.get("text") or entry.get("content")
    if kind is None or not isinstance(body, str) or not body.strip():
        return None
    title = entry.get("title")
    if not isinstance(title, str) or not title.strip():
        title = body.strip().split("\n")[0]
    return DistilledItem(kind=kind, title=" ".join(title.split())[:MAX_TITLE], body=body.strip()[:MAX_BODY])


def _from_bullets(text: str) -> list[DistilledItem]:
    items = []
    for kind_word, rest in _BULLET.findall(text):
        parts = re.split(r"\s+[—–-]{1,2}\s+|:\s+", rest.strip(), maxsplit=1)
        title, body = (parts[0], parts[1]) if len(parts) == 2 else (rest.strip(), rest.strip())
        item = _item({"kind": kind_word, "title": title.strip("* "), "body": body})
        if item:
            items.append(item)
    return items


def parse_distillation(text: str) -> tuple[DistilledItem, ...]:
    """Memory items from a distillation answer; empty if nothing usable was found."""
    text = re.sub(r"<think>.*?(?:</think>|\Z)", "", text, flags=re.DOTALL | re.IGNORECASE)
    items: list[DistilledItem] = []
    for candidate in _json_candidates(text):
        entries = _as_entries(_loads(candidate))
        items = [item for item in map(_item, entries) if item is not None]
        if items:
            break
    if not items:
        items = _from_bullets(text)
    unique: dict[tuple[str, str], DistilledItem] = {}
    for item in items:
        unique.setdefault((item.kind, item.title.lower()), item)
    return tuple(unique.values())[:MAX_ITEMS]
