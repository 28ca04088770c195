"""`\\chart`: the last answer as horizontal bars with ± whiskers, drawn with unicode blocks.

One bar per row, labelled by the row's key columns (those without an error bar); its length is
the noisy value of one numeric column, and a whisker ``├──┤`` spans value ± its 95% margin of
error from the receipt: where it covers the bar, the bar is shaded ``▒``, so the solid part is
what the noise leaves certain and the bar visibly ends "somewhere in there". A whisker narrower
than one character is not drawn (the number beside the bar still says it).
Bars start at a zero line: negative values (noise can make a small count negative) grow to the
left of it. A pure function of the result; nothing here reads data.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from prompt_toolkit.utils import get_cwidth

from dpsql.pipeline import format as fmt_mod

if TYPE_CHECKING:
    from dpsql.pipeline.result import Result

EIGHTHS = " ▏▎▍▌▋▊▉█"  # a bar's end to 1/8 of a character (growing right)
LABEL_MAX = 24


class ChartError(ValueError):
    """Nothing to draw, or no such column; the message says what would work."""


def numeric_columns(result: Result) -> list[str]:
    """Columns whose every non-NULL value is a number."""
    out = []
    for i, name in enumerate(result.columns):
        values = [row[i] for row in result.rows if row[i] is not None]
        if values and all(_number(v) for v in values):
            out.append(name)
    return out


def chart(result: Result, column: str | None = None, *, width: int = 80, limit: int = 50) -> str:
    """The bars of ``column`` (default: the first numeric column with error bars), at most
    ``limit`` rows, fitted in ``width`` characters."""
    if not result.rows:
        raise ChartError("the last answer has no rows to draw")
    numeric = numeric_columns(result)
    errs = result.receipt.columns
    if column is None:
        noisy = [c for c in numeric if c in errs]
        if not (noisy or numeric):
            raise ChartError("the last answer has no numeric column to draw")
        column = (noisy or numeric)[0]
    else:
        named = {c.lower(): c for c in result.columns}
        if column.lower() not in named:
            raise ChartError(f"no column {column!r} in the last answer (columns: {', '.join(result.columns)})")
        column = named[column.lower()]
        if column not in numeric:
            raise ChartError(f"column {column!r} is not numeric (numeric columns: {', '.join(numeric) or 'none'})")
    c = result.columns.index(column)
    err = errs.get(column)
    # Labels: the key columns, i.e. neither noisy nor the error columns `SET dpsql.error_columns` adds.
    extra = {f"{c}{suffix}" for c in errs for suffix in ("_moe95", "_sigma")}
    keys = [i for i, name in enumerate(result.columns) if name != column and name not in errs and name not in extra]
    texts = fmt_mod.cells(result, "moe")
    rows = []
    for r, row in enumerate(result.rows[:limit]):
        label = " ".join(texts[r][i] for i in keys) if keys else column
        value = float(row[c]) if row[c] is not None else None
        if value is not None and not math.isfinite(value):
            value = None
        moe = err.moe95[r] if err is not None and value is not None else None
        rows.append((_fit(label), value, moe or 0.0, texts[r][c]))
    return _draw(rows, column, err is not None, width, len(result.rows))


def _draw(rows: list[tuple[str, float | None, float, str]], column: str, noisy: bool, width: int, total: int) -> str:
    label_w = max(get_cwidth(r[0]) for r in rows)
    text_w = max(get_cwidth(r[3]) for r in rows)
    bar_w = max(10, width - label_w - text_w - 4)
    values = [(v, m) for _, v, m, _ in rows if v is not None]
    lo = min([0.0] + [v - m for v, m in values])
    hi = max([0.0] + [v + m for v, m in values])
    scale = (bar_w - 1) / (hi - lo) if hi > lo else 1.0
    zero = round(-lo * scale)
    lines = [f"{column}: bars are the noisy values" + ("; ▒ and ├─┤ span their 95% margin of error" if noisy else "")]
    for label, value, moe, text in rows:
        cells = [" "] * bar_w
        if lo < 0:
            cells[zero] = "│"
        if value is not None:
            _paint(cells, zero, value * scale, (value - moe - lo) * scale, (value + moe - lo) * scale)
        lines.append(f"{label}{' ' * (label_w - get_cwidth(label))} │{''.join(cells)} {text}".rstrip())
    axis = _axis(lo, hi, zero, bar_w)
    lines.append(f"{' ' * label_w} └{axis}")
    if total > len(rows):
        lines.append(f"(the first {len(rows)} of {total} rows: ORDER BY … LIMIT in the query chooses which; "
                     "\\chart COLUMN N draws N)")
    return "\n".join(lines)


def _paint(cells: list[str], zero: int, length: float, left: float, right: float) -> None:
    """A bar of ``length`` cells from the zero column (right in eighths of a cell; left, for a
    negative value, in halves), and its whisker from cell ``left`` to ``right``: ``▒`` where it
    covers the bar (the part of the bar the noise makes uncertain), ``├─┤`` beyond it."""
    bar: dict[int, str] = {}
    if length >= 0:
        full, part = divmod(round(length * 8), 8)
        bar.update((i, "█") for i in range(zero, zero + full))
        if part:
            bar[zero + full] = EIGHTHS[part]
    else:
        full, half = divmod(round(-length * 2), 2)
        bar.update((i, "█") for i in range(zero - full, zero))
        if half:
            bar[zero - full - 1] = "▐"
    whisker: set[int] = set()
    if right - left >= 1:  # narrower than a character: not drawn, the number says it
        a, b = max(0, math.floor(left)), min(len(cells) - 1, math.floor(right))
        whisker = set(range(a, b + 1))
    for i in range(len(cells)):
        if i in bar:
            cells[i] = "▒" if i in whisker else bar[i]
        elif i in whisker:
            end = "├" if i == min(whisker) else "┤" if i == max(whisker) else "─"
            cells[i] = "┼" if cells[i] == "│" and end == "─" else end


def _axis(lo: float, hi: float, zero: int, width: int) -> str:
    """A scale under the bars: the low end, 0 where the bars start, the high end."""
    left, right = _short(lo), _short(hi)
    if lo >= 0:
        return f"0{right.rjust(width - 1)}"
    mid = max(zero - len(left), 0)
    text = left + " " * mid + "0"
    return text + right.rjust(max(width - len(text), len(right) + 1))


def _short(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _fit(label: str) -> str:
    return label if get_cwidth(label) <= LABEL_MAX else label[: LABEL_MAX - 1] + "…"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)
