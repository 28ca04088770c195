"""What a table's CHECK constraints prove about a column, read from their text (no engine needed):
only ``x >= 0``-style bounds in a flat AND, which let the output clamp noisy sums at zero."""

from __future__ import annotations

import re

_ZERO_BOUND = re.compile(r'^(?:("[^"]+"|\w+)\s*>=?\s*0(?:\.0*)?|0(?:\.0*)?\s*<=?\s*("[^"]+"|\w+))$')


def bounded_below_by_zero(expression: str) -> set[str]:
    """The columns a CHECK expression bounds below by zero: it must be a flat AND of simple
    comparisons (no OR, NOT, CASE or nested parentheses), one of them ``x >= 0`` / ``x > 0`` /
    ``0 <= x`` / ``0 < x``. Anything else proves nothing (an empty set)."""
    text = _unwrap(expression)
    if re.search(r"\b(OR|NOT|CASE)\b", text, re.I):
        return set()
    out = set()
    for part in re.split(r"\s+AND\s+", text, flags=re.I):
        part = _unwrap(part)
        if "(" in part or ")" in part:
            return set()
        if m := _ZERO_BOUND.match(part):
            out.add((m.group(1) or m.group(2)).strip('"').lower())
    return out


def _unwrap(text: str) -> str:
    """``text`` without the parentheses around all of it (``((a) AND (b))`` -> ``(a) AND (b)``)."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, c in enumerate(text):
            depth += {"(": 1, ")": -1}.get(c, 0)
            if depth == 0 and i < len(text) - 1:
                return text  # the first parenthesis closes before the end: not one group
        text = text[1:-1].strip()
    return text
