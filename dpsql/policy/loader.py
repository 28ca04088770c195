"""The policy file: read the data owner's TOML, validate it into a :class:`~dpsql.policy.model.Policy`.

A bad file is refused at load (:class:`PolicyFileError`: file, field, reason); nothing of SQL or data here.

File format (see ``docs/policy.md``)::

    [budget]
    default_rho = 0.1
    total_rho = 10.0                     # per analyst
    dataset_rho = 50.0                   # optional: all analysts together
    total_delta = 1e-5                   # per analyst (the default): delta of partition selections
    dataset_delta = 1e-4                 # optional: all analysts together
    analysts = { alice = { total_rho = 20.0 } }   # optional: one analyst's own walls (rho, delta)
    ledger = "demo.ledger.sqlite"        # optional: default <policy>.ledger.sqlite beside it
    answers_kept = 10000                 # optional (the default): answers kept for reuse per analyst,
    answers_mib = 256                    # and the MiB they may take; each analyst's least recently used go first

    [noise]
    mechanism = "discrete_gaussian"

    [tables.establishments]
    privacy_unit = "id"
    max_splits = 50                      # optional: top-code beyond 50 splits

    [tables.establishments.measures]
    employees = { threshold = 100 }
    payann = { threshold = 10000, overrides = { key = "naics2", thresholds = { "52" = 20000 } } }
    latency_ms = { threshold = 500, granularity = 0.1 }

    [tables.establishments.keys]
    state = { keyset = ["AK", "AL"] }    # public
    county = {}                          # private
    opened = { range = ["1990-01-01", "2024-12-31"] }                 # public: every day (DATE)
    first_seen = { range = [2024-01-01, 2024-12-31], grain = "hour" } # public: every hour (TIMESTAMP)

    [public_tables.states]               # published reference data, joinable by its key
    key = "code"                         # unique in the table: a private row joins at most one row
    parquet = "data/states.parquet"      # optional, on every table or none: its rows as Parquet
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpsql.errors import PolicyFileError
from dpsql.policy.fields import err as _err, ident as _ident, is_int as _is_int, only as _only, table as _table
from dpsql.policy.grid import quantile_grid
from dpsql.policy.keys_loader import MAX_QUANTILE_ROWS, parse_group_bounds, parse_keys
from dpsql.policy.model import (
    MECHANISMS,
    SELECTION_COUNTS,
    SELECTION_KAPPA_RULES,
    SELECTION_METHODS,
    Budget,
    Key,
    Measure,
    Policy,
    PublicTable,
    Selection,
    TablePolicy,
    ThresholdOverride,
)


def default_policy_path(database: Path) -> Path:
    """``X.duckdb`` -> ``X.policy.toml`` beside it."""
    return database.with_name(database.stem + ".policy.toml")


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy file.

    Raises:
        PolicyFileError: the file is missing, is not TOML, or a field is invalid.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise PolicyFileError(f"cannot read policy file {p}: {exc.strerror or exc}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PolicyFileError(f"{p}: not a valid TOML file: {exc}") from None
    return replace(parse_policy(doc, p), digest=hashlib.sha256(raw).hexdigest())


def parse_policy(doc: dict[str, Any], path: Path | None = None) -> Policy:
    """Validate a parsed TOML document into a :class:`Policy`."""
    where = str(path) if path else "<policy>"
    _only(doc, {"budget", "noise", "tables", "selection", "public_tables", "limits"}, where, "")

    budget_doc = _table(doc.get("budget", {}), where, "budget")
    _only(budget_doc, {"default_rho", "total_rho", "dataset_rho", "ledger", "default_epsilon", "total_delta",
                       "dataset_delta", "analysts", "max_query_rho", "answers_kept", "answers_mib"},
          where, "budget")
    default_epsilon = _rho(budget_doc.get("default_epsilon", 1), where, "budget.default_epsilon")
    default_rho = _rho(budget_doc.get("default_rho", 0.1), where, "budget.default_rho")
    total_rho = _rho(budget_doc.get("total_rho", 1.0), where, "budget.total_rho")
    if default_rho > total_rho:
        raise _err(where, "budget.default_rho", "is larger than budget.total_rho")
    dataset_rho = _rho(budget_doc["dataset_rho"], where, "budget.dataset_rho") if "dataset_rho" in budget_doc else None
    total_delta = _delta(budget_doc.get("total_delta", 1e-5), where, "budget.total_delta")
    dataset_delta = _delta(budget_doc["dataset_delta"], where, "budget.dataset_delta") if "dataset_delta" in budget_doc else None
    cap = _rho(budget_doc["max_query_rho"], where, "budget.max_query_rho") if "max_query_rho" in budget_doc else None
    kept, mib = budget_doc.get("answers_kept", 10_000), budget_doc.get("answers_mib", 256)
    if type(kept) is not int or kept < 0:
        raise _err(where, "budget.answers_kept", "must be a whole number of answers (0: keep none, so none is reused)")
    if type(mib) not in (int, float) or not 0 <= mib < 2**40:
        raise _err(where, "budget.answers_mib", "must be a number of MiB, 0 or more (0: keep no answer)")
    analysts = {}
    for name, walls in _table(budget_doc.get("analysts", {}), where, "budget.analysts").items():
        field = f"budget.analysts.{name}"
        walls = _table(walls, where, field)
        _only(walls, {"total_rho", "total_delta"}, where, field)
        analysts[name] = (_rho(walls.get("total_rho", float(total_rho)), where, f"{field}.total_rho"),
                          _delta(walls.get("total_delta", float(total_delta)), where, f"{field}.total_delta"))
    ledger = None
    if "ledger" in budget_doc:
        if not isinstance(budget_doc["ledger"], str) or not budget_doc["ledger"].strip():
            raise _err(where, "budget.ledger", "must be a file path (relative paths are relative to the policy file)")
        ledger = Path(budget_doc["ledger"])
        if not ledger.is_absolute() and path is not None:
            ledger = path.parent / ledger

    noise_doc = _table(doc.get("noise", {}), where, "noise")
    _only(noise_doc, {"mechanism"}, where, "noise")
    mechanism = noise_doc.get("mechanism", "discrete_gaussian")
    if mechanism not in MECHANISMS:
        raise _err(where, "noise.mechanism", f"must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")

    tables_doc = _table(doc.get("tables"), where, "tables", required=True)
    if not tables_doc:
        raise _err(where, "tables", "declares no table: add at least one [tables.NAME] section")
    tables = {}
    for name, tdoc in tables_doc.items():
        tp = _table_policy(name, _table(tdoc, where, f"tables.{name}"), where)
        tables[tp.name] = tp
    sel_doc = _table(doc.get("selection", {}), where, "selection")
    _only(sel_doc, {"epsilon", "delta", "count", "method", "kappa_rule"}, where, "selection")
    sel = Selection()
    sel_eps = _rho(sel_doc["epsilon"], where, "selection.epsilon") if "epsilon" in sel_doc else sel.epsilon
    sel_delta = _rho(sel_doc["delta"], where, "selection.delta") if "delta" in sel_doc else sel.delta
    if sel_delta >= 1:
        raise _err(where, "selection.delta", "must be below 1 (typically 1e-6 or smaller)")
    sel_count = sel_doc.get("count", sel.count)
    if sel_count not in SELECTION_COUNTS:
        raise _err(where, "selection.count", f"must be one of {', '.join(SELECTION_COUNTS)}, got {sel_count!r}")
    sel_method = sel_doc.get("method", sel.method)
    if sel_method not in SELECTION_METHODS:
        raise _err(where, "selection.method", f"must be one of {', '.join(SELECTION_METHODS)}, got {sel_method!r}")
    kappa_rule = sel_doc.get("kappa_rule", sel.kappa_rule)
    if kappa_rule not in SELECTION_KAPPA_RULES:
        raise _err(where, "selection.kappa_rule", f"must be one of {', '.join(SELECTION_KAPPA_RULES)}, got {kappa_rule!r}")
    selection = Selection(sel_eps, sel_delta, sel_count, sel_method, kappa_rule)
    public_tables = {}
    for name, pdoc in _table(doc.get("public_tables", {}), where, "public_tables").items():
        pfield = f"public_tables.{name}"
        _ident(name, where, pfield)
        pdoc = _table(pdoc, where, pfield)
        _only(pdoc, {"key", "parquet"}, where, pfield)
        key = pdoc.get("key")
        if not isinstance(key, str) or not key:
            raise _err(where, f"{pfield}.key", "is required: the column that identifies one row, which private rows join to")
        _ident(key, where, f"{pfield}.key")
        if name.lower() in tables:
            raise _err(where, pfield, f"table {name!r} is also declared private in [tables.{name}]")
        public_tables[name.lower()] = PublicTable(name.lower(), key.lower())
    budget = Budget(default_rho, total_rho, dataset_rho, default_epsilon, ledger, total_delta, dataset_delta, analysts, cap,
                    kept, int(Fraction(str(mib)) * 2**20))
    limits = _table(doc.get("limits", {}), where, "limits")
    _only(limits, {"query_memory_mib"}, where, "limits")
    memory = limits.get("query_memory_mib")
    if memory is not None and (type(memory) is not int or memory < 1):
        raise _err(where, "limits.query_memory_mib", "must be a whole number of MiB (at least 1)")
    return Policy(path=path, tables=tables, budget=budget, mechanism=mechanism, selection=selection,
                  public_tables=public_tables, parquet=_parquet_paths(doc, where, path),
                  query_memory=None if memory is None else memory << 20)


def _parquet_paths(doc: dict[str, Any], where: str, path: Path | None) -> dict[str, str]:
    """``parquet = "..."`` of every [tables.X] and [public_tables.X], or of none: table -> location.
    A URI (``hdfs://``, ``s3a://``, ``file://``) is kept as written (only Spark reads it); a local
    path is resolved against the policy file's folder and must name a file, a folder or a glob
    that matches at least one file."""
    out: dict[str, str] = {}
    missing = []
    for section in ("tables", "public_tables"):
        for name, tdoc in (doc.get(section) or {}).items():
            field = f"{section}.{name}.parquet"
            if "parquet" not in tdoc:
                missing.append(field)
                continue
            value = tdoc["parquet"]
            if not isinstance(value, str) or not value.strip():
                raise _err(where, field, "must be a path or URI of the table's Parquet file(s)")
            if "://" in value:
                if not value.split("://", 1)[0].replace("+", "").isalnum():
                    raise _err(where, field, f"{value!r} is not a URI (scheme://...)")
                out[name.lower()] = value
                continue
            local = Path(value).expanduser()
            if not local.is_absolute() and path is not None:
                local = path.parent / local
            if not local.exists() and not (local.parent.is_dir() and any(local.parent.glob(local.name))):
                raise _err(where, field, f"{str(local)!r} does not exist (no file, folder or glob match)")
            out[name.lower()] = str(local.resolve() if local.exists() else local)
    if out and missing:
        raise _err(where, missing[0], "is missing: when one table names its Parquet data, every table must "
                                      "(one engine reads them all)")
    return out


def _table_policy(name: str, tdoc: dict[str, Any], where: str) -> TablePolicy:
    prefix = f"tables.{name}"
    _ident(name, where, prefix)
    _only(tdoc, {"privacy_unit", "measures", "keys", "max_splits", "max_groups", "max_groups_by", "row_threshold",
                 "quantile_rows", "quantile_rows_by", "parquet"}, where, prefix)
    unit = tdoc.get("privacy_unit")
    if not isinstance(unit, str) or not unit:
        raise _err(where, f"{prefix}.privacy_unit", "is required: the column identifying one privacy unit")
    _ident(unit, where, f"{prefix}.privacy_unit")
    for f in ("max_splits", "max_groups", "row_threshold", "quantile_rows"):  # max_groups: many rows per unit (docs/policy.md)
        if tdoc.get(f) is not None and (not _is_int(tdoc[f]) or tdoc[f] < 1):
            raise _err(where, f"{prefix}.{f}", "must be a positive integer")
    if tdoc.get("quantile_rows", 1) > MAX_QUANTILE_ROWS:
        raise _err(where, f"{prefix}.quantile_rows", f"is more than {MAX_QUANTILE_ROWS:,}: a quantile's mechanism runs at "
                   "epsilon/r, nearly uniform beyond it; declare a smaller r")
    max_splits, max_groups, rows = tdoc.get("max_splits"), tdoc.get("max_groups"), tdoc.get("row_threshold")
    many = ("row_threshold", "quantile_rows", "max_groups_by", "quantile_rows_by")
    if (extra := next((f for f in many if f in tdoc), None)) and max_groups is None:
        raise _err(where, f"{prefix}.{extra}", "applies to many rows per unit: declare max_groups too")  # docs/policy.md

    keys = parse_keys(tdoc.get("keys", {}), where, prefix)

    measures: dict[str, Measure] = {}
    for mname, mdoc in _table(tdoc.get("measures", {}), where, f"{prefix}.measures").items():
        measures[mname.lower()] = _measure(mname, _table(mdoc, where, f"{prefix}.measures.{mname}"), where, prefix, keys)

    unit_l = unit.lower()
    if unit_l in measures or unit_l in keys:
        raise _err(where, f"{prefix}.privacy_unit", f"column {unit!r} cannot also be a measure or a key")
    # a column may be both a key and a measure (GROUP BY age with AVG(age)): docs/policy.md, "Two roles"
    by = parse_group_bounds(tdoc.get("max_groups_by", {}), keys, max_groups, where, prefix)
    rows_by = parse_group_bounds(tdoc.get("quantile_rows_by", {}), keys, max_groups, where, prefix, "quantile_rows_by")
    return TablePolicy(name.lower(), unit_l, measures, keys, max_splits, max_groups, rows, tdoc.get("quantile_rows", 1), by,
                       quantile_rows_by=rows_by)


def _measure(name: str, mdoc: dict[str, Any], where: str, prefix: str, keys: dict[str, Key]) -> Measure:
    mfield = f"{prefix}.measures.{name}"
    _ident(name, where, mfield)
    _only(mdoc, {"threshold", "granularity", "overrides", "range", "grid", "points"}, where, mfield)
    gran_raw = mdoc.get("granularity", 1)
    granularity = _positive_fraction(gran_raw, where, f"{mfield}.granularity")

    def units(value: Any, fname: str) -> int:
        u = _positive_fraction(value, where, fname) / granularity
        if u.denominator != 1:
            raise _err(where, fname, f"must be a whole multiple of the granularity {gran_raw}")
        return u.numerator

    if "threshold" not in mdoc:
        raise _err(where, f"{mfield}.threshold", "is required: the split threshold T of the measure (paper 000 Algorithm 1)")
    threshold = units(mdoc["threshold"], f"{mfield}.threshold")

    override = None
    if "overrides" in mdoc:
        ofield = f"{mfield}.overrides"
        odoc = _table(mdoc["overrides"], where, ofield)
        _only(odoc, {"key", "thresholds"}, where, ofield)
        okey = odoc.get("key")
        if not isinstance(okey, str) or okey.lower() not in keys or not keys[okey.lower()].public:
            raise _err(where, f"{ofield}.key", "must name a public key of the table (a key with a keyset)")
        key = keys[okey.lower()]
        tdoc = _table(odoc.get("thresholds"), where, f"{ofield}.thresholds", required=True)
        thresholds: dict[Any, int] = {}
        for value_text, tvalue in tdoc.items():
            value = _keyset_value(value_text, key)
            if value is None:
                raise _err(where, f"{ofield}.thresholds.{value_text}", f"is not in the keyset of key {key.name!r}")
            thresholds[value] = units(tvalue, f"{ofield}.thresholds.{value_text}")
        override = ThresholdOverride(key.name, thresholds)
    grid = quantile_grid(mdoc, granularity, where, mfield)
    return Measure(name.lower(), threshold, granularity, override, grid)


def _keyset_value(text: str, key: Key) -> Any:
    """TOML table keys are strings; match them to the keyset's typed values."""
    assert key.keyset is not None
    for v in key.keyset:
        if str(v) == text:
            return v
    return None






def _positive_fraction(value: Any, where: str, fieldname: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _err(where, fieldname, "must be a positive number")
    if isinstance(value, float) and not math.isfinite(value):
        raise _err(where, fieldname, "must be finite")
    # str() keeps the decimal the owner wrote: 0.1 is 1/10, not the nearest binary double.
    frac = Fraction(str(value))
    if frac <= 0:
        raise _err(where, fieldname, "must be positive")
    return frac


def _rho(value: Any, where: str, fieldname: str) -> Fraction:
    return _positive_fraction(value, where, fieldname)


def _delta(value: Any, where: str, fieldname: str) -> Fraction:
    """A δ cap: positive and below 1 (δ is a probability of failure; see docs/policy.md)."""
    delta = _positive_fraction(value, where, fieldname)
    if delta >= 1:
        raise _err(where, fieldname, "must be below 1 (a probability of failure; typically 1e-5 or smaller)")
    return delta

