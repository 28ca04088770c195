"""The allow-list of forms that run bare over private rows (dpsql/totality.py), fed its types'
extremes: every expression it calls total must evaluate in DuckDB over a table of each type's
minimum, maximum, NaN, ±inf, NULL, empty and megabyte strings and extreme dates without
raising — and the forms that did leak (issue 12) must not be called total."""

from __future__ import annotations

import itertools

import duckdb
import pytest
import sqlglot

from dpsql.sql.quantiles import bin_sql, histogram_sql
from sqlglot import exp

from dpsql.sql.totality import ALLOW_LIST, condition_total, expression_total, value_type

TYPES = {
    "ti": "TINYINT", "si": "SMALLINT", "i": "INTEGER", "bi": "BIGINT", "hi": "HUGEINT", "uhi": "UHUGEINT", "ubi": "UBIGINT",
    "ui": "UINTEGER", "dbl": "DOUBLE", "flt": "FLOAT", "d38": "DECIMAL(38,0)", "d18": "DECIMAL(18,2)",
    "d38s": "DECIMAL(38,30)", "s": "VARCHAR", "dt": "DATE", "ts": "TIMESTAMP", "b": "BOOLEAN",
}
ROWS = [
    # minimums / negative extremes
    {"ti": -128, "si": -32768, "i": -2**31, "bi": -2**63, "hi": -(2**127 - 1), "uhi": 0, "ubi": 0, "ui": 0,
     "dbl": "-inf", "flt": "-inf", "d38": "-" + "9" * 38, "d18": "-9999999999999999.99", "d38s": "-99999999.9" + "9" * 29,
     "s": "", "dt": "-5877641-06-25", "ts": "-290308-12-22 00:00:00", "b": False},
    # maximums
    {"ti": 127, "si": 32767, "i": 2**31 - 1, "bi": 2**63 - 1, "hi": 2**127 - 1, "uhi": 2**128 - 1, "ubi": 2**64 - 1, "ui": 2**32 - 1,
     "dbl": "inf", "flt": "inf", "d38": "9" * 38, "d18": "9999999999999999.99", "d38s": "99999999.9" + "9" * 29,
     "s": "x" * 1_000_000, "dt": "5881580-07-10", "ts": "294247-01-10 04:00:54", "b": True},
    {"dbl": "nan", "flt": "nan", "s": "Zürich ✓", "d38": "0", "bi": 0},
    {"dbl": "1e308", "flt": "3e38", "s": "0", "bi": 1},
    {"dbl": "-1e308", "s": "abc"},
    {},  # NULLs
]

LITERALS = ["0", "1", "-1", "1.5", "-0.25", "0.0000000000000000000000000000001", "0.00000000000000001",
            str(2**31), str(2**63 - 1), str(2**127 - 1), "1e308", "1e-300", "'CA'", "''", "'2020-01-01'",
            "DATE '2020-01-01'", "TRUE", "NULL"]
BOUNDS = ["1", "-1", "3", "2147483648", "4294967295", "4294967296", str(2**63 - 1)]


@pytest.fixture(scope="module")
def extremes():
    con = duckdb.connect()
    con.execute("CREATE TABLE x (" + ", ".join(f"{c} {t}" for c, t in TYPES.items()) + ")")
    for row in ROWS:
        cols = list(row)
        if not cols:
            con.execute("INSERT INTO x DEFAULT VALUES")
            continue
        casts = ", ".join(f"CAST(? AS {TYPES[c]})" for c in cols)
        con.execute(f"INSERT INTO x ({', '.join(cols)}) VALUES ({casts})", [str(row[c]) if not isinstance(row[c], bool) else row[c]
                                                                          for c in cols])
    yield con
    con.close()


SCHEMA = dict(TYPES)


def candidates() -> list[str]:
    """Instances of every allow-listed form over every column type and a spread of literals."""
    cols = list(TYPES)
    atoms = cols + LITERALS
    out: list[str] = []
    texts = [c for c in cols if TYPES[c] == "VARCHAR"] + ["'ab'"]
    for a, b in itertools.product(atoms, atoms):
        if a in cols or b in cols:
            out += [f"{a} = {b}", f"{a} < {b}", f"{a} >= {b}", f"{a} <> {b}", f"{a} <= {b}", f"{a} > {b}"]
    for c in cols:
        out += [f"{c} IN ({x}, {y})" for x, y in itertools.combinations(LITERALS[:12], 2)]
        out += [f"{c} BETWEEN {x} AND {y}" for x, y in itertools.combinations(LITERALS[:8], 2)]
        out += [f"{c} IS NULL", f"NOT {c} IS NULL", f"COALESCE({c}, {c})", f"-{c}", f"TRY_CAST({c} AS INTEGER)",
                f"COALESCE({c}, 1)", f"COALESCE({c}, 'x')", f"COALESCE({c}, 1.5)"]
        out += [f"CASE WHEN {c} > 1 THEN {c} ELSE {d} END" for d in cols[:6] + ["'x'", "1"]]
        out += [f"IF({c} = 1, {c}, 0)", f"({c} > 0 AND {c} < 5) OR {c} IS NULL", f"COALESCE({c}, PI())"]
    for t in texts:
        out += [f"LOWER({t})", f"UPPER({t})", f"LENGTH({t})", f"TRIM({t})", f"TRIM({t}, 'x')", f"{t} LIKE 'a%'",
                f"{t} ILIKE '%B'", f"{t} || {t}"]
        out += [f"SUBSTR({t}, {x}, {y})" for x, y in itertools.product(BOUNDS, BOUNDS)]
        out += [f"SUBSTR({t}, -{x})" for x in BOUNDS if not x.startswith("-")]
    out += ["-5", "-1.5", "TRUE AND FALSE", "NULL IS NULL"]
    # the forms dpsql writes into the exact query (issue 29), over every type: what the final
    # check (dpsql/sql/final_check.py) calls total must not raise either
    grid = "'[-9223372036854775807, 0, 1, 9223372036854775807]'::BIGINT[]"
    for c in cols:
        out += [f"CAST({c} AS {t})" for t in ("DOUBLE", "HUGEINT", "BIGINT", "INTEGER", "DECIMAL(38,10)", "VARCHAR")]
        out += [f"{c} {op} {x}" for op in "+-*/" for x in ("100", "1e308", "0", "dbl", "flt", "1.5")]
        out += [f"ROUND(CAST({c} AS DOUBLE) * 100 / 3)", f"ROUND({c})", f"CEIL({c})", f"FLOOR({c})", f"ABS({c})", f"{c} % 7",
                f"{c} % 0", f"HASH({c}, 5) % 7", f"GREATEST({c}, -4611686018427387904)", f"LEAST({c}, 4611686018427387904, 1.5)",
                f"SUM({c})", f"COUNT({c})", f"COUNT(DISTINCT {c})", "COUNT(*)", f"TRY({c} + 1)", f"TRY({c} > 1)",
                f"CASE {c} WHEN 1 THEN 2 ELSE 3 END", f"CASE {c} WHEN 'a' THEN 2 END", f"CASE {c} WHEN 1.5 THEN 1 END",
                f"LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST({c} AS BIGINT), {grid})), LAMBDA e: e.value > 0)",
                f"LIST_FILTER(MAP_ENTRIES(HISTOGRAM({c}, {grid})), LAMBDA e: e.value > 0)",
                f"HISTOGRAM(TRY_CAST({c} AS BIGINT), [-9223372036854775807, 0, 9223372036854775807]::BIGINT[])",
                f"COALESCE(TRY_CAST(CEIL(LEAST(ABS(CAST({c} AS DOUBLE)), 9007199254740992) / 7) AS BIGINT), 0)"]
        # the sparse histogram (quantiles.histogram_sql): bins found by a binary search, extremes of
        # the grid included, and the same text with its bounds changed (not the writer's: refused)
        out += [histogram_sql(c, [-9223372036854775807, -1, 0, 1, 9223372036854775807]), histogram_sql(c, [5]),
                histogram_sql(c, [-3, 7]).replace("'[-3, 7]'::BIGINT[2]", "'[-3, 7, 9]'::BIGINT[2]", 1)]
        # the steps of a removed quantile form (a float bucket clamped before its cast, literal arrays
        # read at an index, the binary search as a value: the allow-list no longer calls them total),
        # values_sql's LIST and FILTER, and near misses
        arr = "'[9223372036854775807, -9223372036854775807, 0]'::BIGINT[3]"
        out += [f"FLOOR({c})", f"LN(GREATEST(CAST({c} AS DOUBLE) - -2, 1.0))", f"LN(GREATEST({c}, 0.5))", f"LN({c})",
                f"LN(GREATEST(CAST({c} AS DOUBLE), 0.0))", f"LN(GREATEST(CAST({c} AS DOUBLE), -1))",
                f"CAST(LEAST(GREATEST(FLOOR(LN(GREATEST(CAST({c} AS DOUBLE), 1.0)) * 1e300) + 1, 1), 9) AS BIGINT)",
                f"CAST(LEAST(GREATEST(CAST({c} AS DOUBLE), -9007199254740992), 9007199254740992) AS BIGINT)",
                f"CAST(LEAST(GREATEST(CAST({c} AS DOUBLE), 0), 9223372036854775807) AS BIGINT)",
                f"CAST(GREATEST(CAST({c} AS DOUBLE), 0) AS BIGINT)", f"array_extract({arr}, {c})",
                f"array_extract({arr}, TRY_CAST({c} AS BIGINT))", f"array_extract({arr.replace('[3]', '[2]')}, {c})",
                f"array_extract({arr.replace('::BIGINT[3]', '::INTEGER[3]')}, {c})", bin_sql(c, [-5, 0, 9]),
                f"LIST({c})", f"LIST({c} ORDER BY {c})", f"LIST({c}) FILTER (WHERE {c} IS NOT NULL)",
                f"COUNT(*) FILTER (WHERE {c} > 1)", f"LIST({c} + 1)"]
    return out


def _fails_without_rows(con, node) -> bool:
    try:
        con.execute(f"SELECT {node.sql('duckdb')} FROM x LIMIT 0").fetchall()
        return False
    except duckdb.Error:
        return True


def test_every_expression_the_allow_list_calls_total_evaluates_on_extremes(extremes):
    total, forms = 0, set()
    for sql in candidates():
        node = sqlglot.parse_one(sql, read="duckdb")
        if value_type(node, SCHEMA) is None:
            continue
        total += 1
        forms.update(type(n) for n in node.walk() if type(n) in ALLOW_LIST)
        try:
            extremes.execute(f"SELECT {node.sql('duckdb')} FROM x").fetchall()
        except duckdb.Error as exc:
            if _fails_without_rows(extremes, node):
                continue  # a bind error, whatever the rows: the empty twin refuses it in phase 1 (DP120)
            pytest.fail(f"the allow-list calls {sql!r} total, but DuckDB raised {type(exc).__name__}: {str(exc)[:160]}")
    assert total > 2000, "the candidates should exercise the allow-list broadly"
    unexercised = set(ALLOW_LIST) - forms
    assert not unexercised, f"allow-list entries no candidate exercised: {unexercised}"


@pytest.mark.parametrize("sql", [
    "SUBSTR(s, 9223372036854775807, 1)",            # issue 12: failed only when a row reached it
    "SUBSTR(s, 1, 4294967296)",
    "bi > 0.0000000000000000000000000000001",       # BIGINT cast to DECIMAL(38,31) per row
    "hi > 1.5",                                     # HUGEINT to DECIMAL(38,1)
    "d38 > 1.5",                                    # DECIMAL(38,0) to DECIMAL(38,1)
    "d18 = hi",
    "uhi = bi", "COALESCE(uhi, i) > 0",             # a signed integer and UHUGEINT meet in HUGEINT
    "dt < ts",                                      # extreme DATE to TIMESTAMP
    "s = 5", "s < bi",                              # text cast to a number
    "ABS(bi) > 0", "-bi > 0", "bi + 1 > 0", "bi * 2 > 0", "CAST(s AS INTEGER) > 0",
    "s || s = 'x'",                                 # past the string limit
    "CASE s WHEN 1 THEN 'a' END = 'a'",             # simple CASE casts the text of each row
    "CASE bi WHEN 0.0000000000000000000000000000001 THEN 'a' END = 'a'",
    "CAST(dbl AS BIGINT)", "CAST(bi AS INTEGER)",   # bare narrowing casts (dpsql's own CASTs must widen)
    "bi * 100", "i + 1", "d38 - 1", "ABS(i)",       # integer and decimal arithmetic overflows
    "SUM(hi)", "SUM(ubi)",                          # may overflow HUGEINT
    "bi % 0", "HASH(s) % -1",
    "HISTOGRAM(bi, [1, 99999999999999999999]::BIGINT[])", "HISTOGRAM(bi, '[1, 99999999999999999999]'::BIGINT[])",
    "HISTOGRAM(bi, '[1, x]'::BIGINT[])",
    "s LIKE 'a' ESCAPE 'xx'",
    "COALESCE(d18, hi) > 0",
])
def test_forms_that_can_fail_are_not_total(sql):
    node = sqlglot.parse_one(sql, read="duckdb")
    assert not condition_total(node, SCHEMA) and not expression_total(node, SCHEMA)


def test_forms_that_did_fail_do_fail_bare(extremes):
    """The other side of the previous test: these do raise in DuckDB on the extremes (so the
    test above is about real failures, not hypothetical ones)."""
    for sql in ["SUBSTR(s, 9223372036854775807, 1)", "bi > 0.0000000000000000000000000000001", "hi > 1.5",
                "d38 > 1.5", "dt < ts", "s = 5", "ABS(bi) > 0", "bi * 100 / 1 > 0", "CAST(dbl AS BIGINT) > 0", "ABS(i) > 0",
                "CASE bi WHEN 0.0000000000000000000000000000001 THEN 1 END = 1"]:
        with pytest.raises(duckdb.Error):
            extremes.execute(f"SELECT {sql} FROM x").fetchall()
        extremes.execute(f"SELECT TRY({sql}) FROM x").fetchall()  # and TRY() makes them total


def test_only_the_writers_sparse_histogram_is_called_total():
    """The sparse histogram is accepted as quantiles.bin_sql writes it for a total BIGINT value,
    and as nothing else: a tampered step list, an index past the array, a value that can
    overflow, or bounds outside BIGINT fall back to "not provably total"."""
    col = next(c for c, t in TYPES.items() if t == "BIGINT")
    good = histogram_sql(col, [-3, 7, 20])
    assert value_type(sqlglot.parse_one(good, read="duckdb"), SCHEMA) is not None
    bad = [good.replace("[0, 2, 1]", "[0, 4, 2, 1]"),                       # a step past the array
           good.replace(" + 1), ", " + 2), "),                              # the index shifted
           histogram_sql(f"{col} * 3", [-3, 7, 20]),                           # a value that can overflow
           histogram_sql(col, [-3, 7, 2**64])]                                 # a bound outside BIGINT
    assert all(b != good for b in bad)
    for sql in bad:
        assert value_type(sqlglot.parse_one(sql, read="duckdb"), SCHEMA) is None, sql
