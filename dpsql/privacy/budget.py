"""Budget values: exact parsing from text and display.

A budget value (a ρ, an ε, a δ, a weight, a MOE target) is read from what a person typed into
an exact ``Fraction`` (:func:`parse_rho`), and shown back to people as text (:func:`fmt` for
budgets, :func:`fmt_up` for the parameters of a guarantee, rounded up).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from dpsql.errors import BudgetValueError

# Every budget value typed by a person (SET dpsql.rho, --rho, weights, MOE targets) must lie in
# [1e-15, 1e15] and be written in at most 64 characters: Fraction('1e999999999') would build a
# billion-digit integer (tens of seconds), so the exponent is read from the text first.
MIN_VALUE = Fraction(1, 10**15)
MAX_VALUE = Fraction(10**15)
_MAX_TEXT = 64
_EXPONENT = re.compile(r"[eE]([+-]?[0-9_]+)$")


def parse_rho(value: Any, what: str = "rho") -> Fraction:
    """A budget value as an exact Fraction in [1e-15, 1e15]. ``0.1`` means 1/10 (its decimal
    text), not the nearest binary double. Absurd magnitudes (``1e999999999``) are refused from
    the text, in microseconds, before any Fraction is built.

    Raises:
        BudgetValueError: not a number, not finite, not positive, out of range, or too long.
    """
    if isinstance(value, Fraction):
        frac = value
    elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BudgetValueError(f"{what} must be a positive number, got {type(value).__name__}")
    elif isinstance(value, int):
        frac = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise BudgetValueError(f"{what} must be finite, got {value}")
        frac = Fraction(str(value))
    else:
        text = value.strip()
        if len(text) > _MAX_TEXT:
            raise BudgetValueError(f"{what} must be a number of at most {_MAX_TEXT} characters, got {_shown(value)}")
        exponent = _EXPONENT.search(text)
        # With at most 64 characters of digits, |exponent| > 1000 puts any non-zero value far
        # outside [1e-15, 1e15] (and a zero one is refused too): no need to build it.
        if exponent and abs(int(exponent.group(1).replace("_", "") or "0")) > 1000:
            raise _out_of_range(what, value)
        try:
            frac = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise BudgetValueError(f"{what} must be a positive number, got {_shown(value)}") from None
    if frac <= 0:
        raise BudgetValueError(f"{what} must be positive, got {_shown(value)}")
    if not MIN_VALUE <= frac <= MAX_VALUE:
        raise _out_of_range(what, value)
    return frac


def _out_of_range(what: str, value: Any) -> BudgetValueError:
    return BudgetValueError(f"{what} must be between 1e-15 and 1e15, got {_shown(value)}",
                            hint="a budget value is a plain decimal such as 0.1, 2.5e-3 or 1/3.")


def _shown(value: Any) -> str:
    """A value in a message, short (a huge int or Fraction is shown by its magnitude)."""
    if isinstance(value, (str, float)):
        text = repr(value) if isinstance(value, str) else str(value)
        return text if len(text) <= 40 else text[:37] + "..."
    try:
        return f"{float(value):.6g}"
    except (OverflowError, TypeError, ValueError):
        return "a number too large to show"


def fmt(value: Fraction) -> str:
    """A budget value spent or charged (a ρ) for people: exact when short, else 6 significant
    digits rounded **up** (a charge shown smaller than it is would overstate the guarantee).
    What is *left* of a budget is shown by :func:`fmt_down`."""
    if value.denominator == 1:
        return str(value.numerator)
    return fmt_up(value)


def fmt_down(value: Fraction) -> str:
    """What is left of a budget, for people: exact when short, else 6 significant digits rounded
    **down** (never more than is there)."""
    if value.denominator == 1:
        return str(value.numerator)
    return _rounded(Fraction(value), 6, math.floor)


def fmt_up(value: float | Fraction, digits: int = 6) -> str:
    """A privacy parameter of a guarantee (an ε, a δ) for people: ``digits`` significant digits,
    rounded **up**, so the printed value is still a valid parameter."""
    return _rounded(Fraction(value), digits, math.ceil)


def _rounded(f: Fraction, digits: int, direction: Any) -> str:
    if f <= 0:
        return "0" if f == 0 else "-" + _rounded(-f, digits, math.ceil if direction is math.floor else math.floor)
    n, d = f.numerator, f.denominator  # in integers: the same numbers as Fractions, a fifth of the time
    e = math.floor(math.log10(f))
    e += _at_least(n, d, e + 1) - (not _at_least(n, d, e))  # log10 of a float may be off by one
    k = e - digits + 1  # the step is 10**k; f / step = p / q exactly
    p, q = (n, d * 10 ** k) if k >= 0 else (n * 10 ** -k, d)
    steps = p // q if direction is math.floor else -(-p // q)
    return f"{float(steps * 10 ** k) if k >= 0 else steps / 10 ** -k:.{digits}g}"  # int / int: correctly rounded


def _at_least(n: int, d: int, e: int) -> bool:
    """Whether n / d >= 10**e, exactly."""
    return n >= d * 10 ** e if e >= 0 else n * 10 ** -e >= d
