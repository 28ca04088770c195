"""``SET dpsql.<name> = value``, ``RESET dpsql.<name>`` and ``SHOW dpsql.<name>``: per-connection
query settings in SQL, for tools that can only send SQL (BI tools). They touch no data and
charge nothing. DuckDB's own settings stay refused (DP102).

    SET dpsql.rho = 0.05              zCDP ρ of each following query
    SET dpsql.epsilon = 0.5           pure-DP ε of each following query (geometric policies)
    SET dpsql.moe = 1000              accuracy first: target 95% MOE per cell, every aggregate
    SET dpsql.moe_count = 10          ... for counts only;  SET dpsql.moe_payann = 5000: one measure
    SET dpsql.weights = 'SUM(payann)=2, COUNT(units)=1'   how a query's budget is split
    SET dpsql.error_columns = on      <column>_moe95 for each noisy column, after those asked for (sigma / all: and _sigma)
    SET dpsql.clamp_negative = on     negative noisy counts and sums of non-negative measures shown as 0
    SET dpsql.reuse = off             a fresh, charged release of each statement, instead of the answer
                                      released before (on, the default: pipeline/reuse.py)
    SET dpsql.series_limit = separate a series limit as two releases even when its ranking can be read
                                      off the outer answer (derived, the default: intercept/series_derived.py)
    SET dpsql.max_groups = 5          on a table with many rows per unit, keep at most 5 of a unit's
                                      groups (never more than the policy's κ: sql/session_cap.py)
    RESET dpsql.moe                   back to the default (also rho, epsilon, weights, error_columns,
                                      clamp_negative, reuse, max_groups, all; the output options to the
                                      connection's)
    SHOW dpsql.rho                    the current value
    SHOW dpsql.budget                 this analyst's budget: spent, left, total, in ρ and δ, and the
                                      (ε, δ) guarantee of what was spent — read, never charged

error_columns, clamp_negative, reuse and series_limit are output options (:mod:`dpsql.pipeline.output`): post-processing of noisy values.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction

from dpsql.errors import BudgetValueError, QueryRefused
from dpsql.intercept.public import public_result
from dpsql.pipeline.output import error_columns_mode, shown, switch
from dpsql.privacy.allocate import GAUSSIAN, GEOMETRIC, Settings
from dpsql.privacy.budget import fmt, fmt_up, parse_rho
from dpsql.pipeline.result import Result
from dpsql.session import Session

_SET = re.compile(r"^\s*SET\s+(?:SESSION\s+)?dpsql\.(\w+)\s*(?:=|\bTO\b)\s*(.+?)\s*;?\s*$", re.I | re.S)
_RESET = re.compile(r"^\s*RESET\s+dpsql\.(\w+)\s*;?\s*$", re.I)
_SHOW = re.compile(r"^\s*SHOW\s+dpsql\.(\w+)\s*;?\s*$", re.I)
_WEIGHT = re.compile(r"^\s*([A-Za-z_]+\(\s*[\w*]+\s*\))\s*=\s*([0-9.]+)\s*$")


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


OUTPUT_SETTINGS = ("error_columns", "clamp_negative", "reuse", "series_limit")
SERIES_LIMIT = ("derived", "separate")


def _set_output(session: Session, name: str, raw: str | None) -> None:
    """SET (``raw``) or RESET (None) one of the output options."""
    default = session.default_output
    if name == "error_columns":
        mode = default.error_columns if raw is None else error_columns_mode(_unquote(raw.strip()), "dpsql.error_columns")
        session.output = replace(session.output, error_columns=mode)
    elif name == "series_limit":
        mode = default.series_limit if raw is None else _unquote(raw.strip()).lower()
        if mode not in SERIES_LIMIT:
            raise QueryRefused(f"dpsql.series_limit takes derived or separate, not {raw!r}", code="DP119",
                               hint="derived: one release when the ranking can be read off the outer answer; "
                                    "separate: always two releases (docs/bi.md).")
        session.output = replace(session.output, series_limit=mode)
    elif name == "reuse":
        on = default.reuse if raw is None else switch(_unquote(raw.strip()), "dpsql.reuse")
        session.output = replace(session.output, reuse=on)
    else:
        on = default.clamp_negative if raw is None else switch(_unquote(raw.strip()), "dpsql.clamp_negative")
        session.output = replace(session.output, clamp_negative=on)


def _set_cap(session: Session, raw: str | None) -> None:
    """SET (``raw``) or RESET (None) dpsql.max_groups: a whole number of groups, at least 1."""
    value = None if raw is None else _unquote(raw.strip())
    if value is not None and not (re.fullmatch(r"[0-9]{1,9}", value) and int(value) >= 1):
        raise QueryRefused(f"dpsql.max_groups takes a whole number of groups, 1 or more, not {raw!r}", code="DP119",
                           hint="e.g. SET dpsql.max_groups = 5: each following query on a table with many rows per "
                                "unit keeps at most 5 of a unit's groups (RESET dpsql.max_groups: the policy's).")
    session.set_max_groups(None if value is None else int(value))


def _show(session: Session, name: str) -> str:
    st = session.settings
    if name == "max_groups":
        cap = session.policy.max_groups_cap
        return "policy" if cap is None else str(cap)
    if name == "error_columns":
        return shown(session.output.error_columns)
    if name == "clamp_negative":
        return "on" if session.output.clamp_negative else "off"
    if name == "reuse":
        return "on" if session.output.reuse else "off"
    if name == "series_limit":
        return session.output.series_limit
    if name == "rho":
        return fmt(st.rho)
    if name == "epsilon":
        return fmt_up(st.epsilon)
    if name == "mechanism":
        return st.mechanism
    if name == "weights":
        return ", ".join(f"{k}={fmt(v)}" for k, v in st.weights.items()) or "equal"
    if name == "moe" or name.startswith("moe_"):
        key = "*" if name == "moe" else name[4:]
        return fmt(st.moe[key]) if key in st.moe else "off"
    raise _unknown(name)


def _unknown(name: str) -> QueryRefused:
    return QueryRefused(f"unknown dpsql setting {name!r}", code="DP119",
                        hint="settings: rho, epsilon, moe, moe_count, moe_<measure>, weights, error_columns, "
                             "clamp_negative, reuse, series_limit, max_groups, mechanism and budget (SHOW only).")


def _apply(session: Session, name: str, raw: str) -> Settings:
    st = session.settings
    value = _unquote(raw.strip())
    if name == "rho":
        if st.mechanism != GAUSSIAN:
            raise BudgetValueError("this policy uses pure-DP (geometric) noise: set dpsql.epsilon instead")
        return replace(st, rho=parse_rho(value, "dpsql.rho"))
    if name == "epsilon":
        if st.mechanism != GEOMETRIC:
            raise BudgetValueError("this policy uses zCDP (discrete Gaussian) noise: set dpsql.rho instead")
        return replace(st, epsilon=parse_rho(value, "dpsql.epsilon"))
    if name == "moe" or name.startswith("moe_"):
        key = "*" if name == "moe" else name[4:]
        if key not in ("*", "count") and not any(key in t.measures for t in session.policy.tables.values()):
            raise _unknown(name)
        return replace(st, moe={**st.moe, key: parse_rho(value, f"dpsql.{name}")})
    if name == "weights":
        weights: dict[str, Fraction] = {}
        for part in filter(None, (p.strip() for p in value.split(","))):
            m = _WEIGHT.match(part)
            if not m:
                raise BudgetValueError(f"cannot read the weight {part!r}",
                                       hint="write e.g. SET dpsql.weights = 'SUM(payann)=2, COUNT(units)=1'.")
            label = re.sub(r"\s+", "", m.group(1))
            label = label[: label.index("(")].upper() + label[label.index("("):]
            weights[label] = parse_rho(m.group(2), f"weight of {label}")
        return replace(st, weights=weights)
    raise _unknown(name)


def _reset(session: Session, name: str) -> Settings:
    st, default = session.settings, session.default_settings()
    if name == "all":
        return default
    if name in ("rho", "epsilon", "weights"):
        return replace(st, **{name: getattr(default, name)})
    if name == "moe":
        return replace(st, moe={})
    if name.startswith("moe_"):
        return replace(st, moe={k: v for k, v in st.moe.items() if k != name[4:]})
    raise _unknown(name)


def handle(session: Session, sql: str) -> Result | None:
    if m := _SET.match(sql):
        name = m.group(1).lower()
        if name in OUTPUT_SETTINGS:
            _set_output(session, name, m.group(2))
        elif name == "max_groups":
            _set_cap(session, m.group(2))
        else:
            session.settings = _apply(session, name, m.group(2))
        return public_result(session, ["setting", "value"], ["VARCHAR", "VARCHAR"], [(f"dpsql.{name}", _show(session, name))])
    if m := _RESET.match(sql):
        name = m.group(1).lower()
        if name in OUTPUT_SETTINGS:
            _set_output(session, name, None)
        elif name == "max_groups":
            _set_cap(session, None)
        else:
            session.settings = _reset(session, name)
            if name == "all":
                session.output = session.default_output
                _set_cap(session, None)
        return public_result(session, ["setting", "value"], ["VARCHAR", "VARCHAR"], [(f"dpsql.{name}", "default")])
    if m := _SHOW.match(sql):
        name = m.group(1).lower()
        if name == "budget":  # the ledger's own figures for this analyst (no path: the server's is not theirs)
            rows = [(f"dpsql.budget.{k}", v) for k, v in session.ledger.summary().items() if k != "ledger"]
            return public_result(session, ["setting", "value"], ["VARCHAR", "VARCHAR"], rows)
        return public_result(session, ["setting", "value"], ["VARCHAR", "VARCHAR"], [(f"dpsql.{name}", _show(session, name))])
    return None
