"""SQL over released answers (issue 32; docs/privacy.md, "SQL over released answers").

Two shapes a BI tool sends, each answered through the ordinary private pipeline:

* **An outer query whose only input is one DP aggregate subquery** (or a CTE holding one,
  referenced once or more): ``SELECT COUNT(*) AS rowcount FROM (<page query>) AS rowcount_qry``,
  ``SELECT AVG(n) FROM (SELECT state, COUNT(*) n FROM establishments GROUP BY state) t``. The
  inner statement is an ordinary dpsql query (:meth:`Session.execute`: charged once, or shown
  again for free when it was released before); the outer SQL then runs on its released noisy
  rows only, in the finisher (an in-memory DuckDB that never holds a private row). That is
  post-processing (Dwork and Roth 2014, Proposition 2.1): free.
* **A join of a private table to a DP aggregate subquery of it** (Superset's series limit:
  ``FROM t JOIN (SELECT k AS k__, COUNT(*) AS mme_inner__ FROM t GROUP BY k ORDER BY 2 DESC
  LIMIT 5) AS series_limit ON k = k__``): two releases. The subquery's noisy answer (charged
  once) gives the released key values, public from then on; the outer query runs as an
  ordinary dpsql query with the join replaced by ``k IN (<released values>)``.

Phase 1 decides everything first, from public information: the inner statement is planned, the
outer SQL is bound against an empty relation of the inner's result schema (names and types from
the plan) — an outer query that cannot bind is refused (DP124) before any charge —, and for the
series limit the second query is decided (and the budget checked for both) before the first
release. A failure of the outer SQL after the charge depends only on noisy values: it is
reported with fixed text (DP125) and the charge stays recorded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.errors import DpsqlError, PostProcessingFailed
from dpsql.intercept import series_derived
from dpsql.intercept.series_derived import inner_note as _inner_note
from dpsql.intercept.answer_shapes import ANSWER, JOIN_HINT, Over, SeriesLimit, inner_errors, refuse, shape, with_of
from dpsql.ledger import answers
from dpsql.pipeline import reuse
from dpsql.pipeline.result import Explanation, Result
from dpsql.privacy.budget import fmt
from dpsql.session import Session
from dpsql.sql.parse import parse


# ---------------------------------------------------------------------- the outer SQL, on noisy rows
def _cte_of_answer(names: list[str], types: list[str], rows: bool) -> str:
    """The definition of :data:`ANSWER`: the released rows (registered as ``__noisy``, columns
    ``c0, c1, …``) cast to the inner's types, or with ``rows`` False an empty relation of them."""
    cols = ", ".join(f"CAST({f'c{i}' if rows else 'NULL'} AS {t}) AS {exp.to_identifier(n, quoted=True).sql('duckdb')}"
                     for i, (n, t) in enumerate(zip(names, types)))
    return f"SELECT {cols} FROM __noisy" if rows else f"SELECT {cols} LIMIT 0"


def outer_sql(over: Over, names: list[str], types: list[str], rows: bool) -> str:
    """The outer SQL as the finisher runs it: :data:`ANSWER` defined first."""
    tree = over.outer.copy()
    answer = exp.CTE(this=parse(_cte_of_answer(names, types, rows)), alias=exp.TableAlias(this=exp.to_identifier(ANSWER)))
    with_ = with_of(tree)
    if with_ is None:
        tree.set("with_" if "with_" in tree.arg_types else "with", exp.With(expressions=[answer]))
    else:
        with_.set("expressions", [answer, *with_.expressions])
    return tree.sql(dialect="duckdb")


def bind(session: Session, over: Over) -> tuple[list[str], list[str], list[str], list[str]]:
    """Phase 1 of the outer SQL: the inner's result schema from its plan, and the outer's, bound
    on an empty relation of it (DuckDB's message is shown: there is no row to quote). DP124 when
    it does not bind. Returns (inner names, inner types, outer names, outer types)."""
    with inner_errors(over):
        names, types = session.describe(over.inner)
    try:
        out_names, out_types, _ = session.finisher.run({}, outer_sql(over, names, types, rows=False))
    except DpsqlError:
        raise refuse("DP124", "the outer query does not run on the columns of the aggregate subquery's answer "
                               f"({', '.join(names)})", "refer only to the subquery's output columns, by their "
                               "names (alias an aggregate in the subquery to name it).") from None
    return names, types, out_names, out_types


def _registered(rows: list[tuple[Any, ...]], width: int) -> dict[str, list[Any]]:
    """The released rows by column ``c0, c1, …``; decimals as text (cast back exactly)."""
    cols: dict[str, list[Any]] = {f"c{i}": [r[i] for r in rows] for i in range(width)}
    return {k: [str(v) if isinstance(v, Decimal) else v for v in vs] if any(isinstance(v, Decimal) for v in vs) else vs
            for k, vs in cols.items()}


def run_outer(session: Session, over: Over, inner: Result, names: list[str], types: list[str]
              ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    """The outer SQL over ``inner``'s released (charged) rows, in the finisher, under the names
    and types it was bound to in phase 1 (an empty answer's keys are typed NULL; the plan's types
    hold); DP125 with fixed text when it fails (its failure depends on noisy values only, shown
    nowhere else)."""
    try:
        if not inner.rows:
            return session.finisher.run({}, outer_sql(over, names, types, rows=False))
        return session.finisher.run(_registered(inner.rows, len(names)), outer_sql(over, names, types, rows=True))
    except Exception:  # noqa: BLE001 - DuckDB's (or numpy's) message may quote a noisy value: fixed text
        charged = f"charged rho={fmt(inner.receipt.rho)}" if inner.receipt.charge_id is not None else "charged nothing now"
        raise PostProcessingFailed(
            f"the outer query failed on the released answer of its subquery (the subquery's release was {charged}; "
            "the charge stands, the released answer is kept and shown again for free)",
            hint="the failure depends on the noisy values only, which are not quoted: run the subquery alone "
                 "to see its rows, or make the outer query total (TRY_CAST, NULLIF).") from None


def execute_over(session: Session, over: Over, rho: Any = None, bound: tuple[list[str], ...] | None = None) -> Result:
    """Phase 1 of both parts (:func:`bind`, or ``bound``: its result for this statement), then the
    inner release through the session (charged or reused), then the outer SQL on its noisy rows:
    post-processing, charged 0."""
    names, types, _, _ = bound or bind(session, over)
    with inner_errors(over):
        inner = session.execute(over.inner, rho=rho)
    names, types, rows = run_outer(session, over, inner, names, types)
    notes = (_inner_note(inner, f"inner query ({over.inner})"),
             "outer query: post-processing of the released answer, charged 0; its values carry no error bars "
             "of their own (the inner's are in the receipt's noise terms)")
    receipt = replace(inner.receipt, columns={}, notes=notes + tuple(inner.receipt.notes))
    return Result(columns=tuple(names), types=tuple(types), rows=list(rows), receipt=receipt)


# ---------------------------------------------------------------------- the series limit: two releases
def _match(columns: list[exp.Column], values: list[tuple[Any, ...]]) -> exp.Expression:
    """``col IN (?, …)`` for one column, ``(c1 = ? AND c2 = ?) OR …`` for several, one ``?`` per value."""
    if len(columns) == 1:
        return exp.In(this=columns[0].copy(), expressions=[exp.Placeholder() for _ in values])
    return exp.or_(*(exp.and_(*(exp.EQ(this=c.copy(), expression=exp.Placeholder()) for c in columns)) for _ in values))


def _grouped(outer: exp.Select, col: exp.Column) -> bool:
    """Whether the outer query groups by ``col`` itself (by name, ordinal or output alias)."""
    group = outer.args.get("group")
    items = {i.alias_or_name.lower(): i for i in outer.expressions}
    for key in (group.expressions if group is not None else []):
        if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(outer.expressions):
            key = outer.expressions[int(key.this) - 1]
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in items:
            key = items[key.name.lower()]
        key = key.this if isinstance(key, exp.Alias) else key
        if isinstance(key, exp.Column) and key.name.lower() == col.name.lower():
            return True
    return False


def _in_released(series: SeriesLimit, values: list[tuple[Any, ...]] | None) -> tuple[str, list[Any]]:
    """The outer query with the join replaced by its groups over ``values`` (None: no condition,
    phase 1's form): a WHERE keeps the rows of the released groups and, where the outer query
    groups by a joined column, a HAVING keeps only those groups' rows of the answer (a public
    keyset is otherwise released whole, noise on zero for the other keys)."""
    outer = series.outer.copy()
    if values is None:
        return outer.sql(dialect="duckdb"), []
    columns = [c for c, _ in series.pairs]
    outer = outer.where(exp.Paren(this=_match(columns, values)), copy=False)
    params = [v for row in values for v in row]
    keyed = [i for i, c in enumerate(columns) if _grouped(outer, c)]
    if keyed:
        rows = sorted({tuple(row[i] for i in keyed) for row in values}, key=repr)
        outer = outer.having(exp.Paren(this=_match([exp.column(columns[i].name) for i in keyed], rows)), copy=False)
        params += [v for row in rows for v in row]
    return outer.sql(dialect="duckdb"), params


def _decide_series(session: Session, series: SeriesLimit, rho: Any = None) -> tuple[Any, Any, str]:
    """Phase 1 of both releases, before either runs: the subquery decided (and its join columns
    among its outputs, DP126), the outer query decided without its IN list (the list only narrows
    it). Returns both decisions and the outer query's text without the list."""
    with inner_errors(series):
        names, _ = session.describe(series.inner)
        d_inner = session.decide(series.inner, rho=rho, check_budget=False)
    if missing := [n for _, n in series.pairs if n not in [x.lower() for x in names]]:
        raise refuse("DP126", f"the subquery has no output column {missing[0]!r}", JOIN_HINT)
    plain, _ = _in_released(series, None)
    return d_inner, session.decide(plain, rho=rho, check_budget=False), plain


def derived(session: Session, series: SeriesLimit) -> series_derived.Derived | None:
    """The one release of a series limit whose ranking is read off the outer answer, or None (two
    releases: not derivable from the text, or ``SET dpsql.series_limit = 'separate'``)."""
    if session.output.series_limit != "derived":
        return None
    return series_derived.derivable(series.inner, series.outer, series.pairs)


def _execute_derived(session: Session, series: SeriesLimit, one: series_derived.Derived, rho: Any) -> Result:
    """Phase 1 (the subquery decided, refused as it would be alone; the one release decided and
    its budget checked by :meth:`Session.execute`), the one release, the ranking read from it."""
    with inner_errors(series):
        session.decide(series.inner, rho=rho, check_budget=False)
    base = session.execute(one.base, rho=rho)
    return series_derived.finish(one, base, series_derived.charge_note(base))


def execute_series(session: Session, series: SeriesLimit, rho: Any = None) -> Result:
    """One release when the ranking is derivable (:func:`derived`); else phase 1 for both releases
    (:func:`_decide_series`; the budget checked for both, the subquery free when it is shown
    again), then release 1, then release 2 with the released groups (an empty list: no rows, no
    second charge). Superset's "group others": :mod:`.series_others`."""
    if series.others is not None:
        from dpsql.intercept import series_others

        return series_others.execute(session, series, rho)
    if (one := derived(session, series)) is not None:
        return _execute_derived(session, series, one, rho)
    d_inner, d_outer, plain = _decide_series(session, series, rho)
    key = reuse.key(session.policy, session.analyst, session.database, d_inner.plan, d_inner.query, d_inner.allocs,
                    session.output.clamp_negative)
    free = answers.find(session.ledger, key, session.output.reuse) is not None
    session.ledger.check(d_outer.rho + (0 if free else d_inner.rho), d_outer.delta + (0 if free else d_inner.delta))

    with inner_errors(series):
        first = session.execute(series.inner, rho=rho)
    index = [[x.lower() for x in first.columns].index(n) for _, n in series.pairs]
    values = sorted({tuple(row[i] for i in index) for row in first.rows if all(row[i] is not None for i in index)},
                    key=repr)
    what1 = f"release 1 of 2, the series limit ({series.inner})"
    if not values:
        out_names, out_types = session.describe(plain)
        note = "release 2 of 2: not run, the series limit released no group (no rows, nothing charged)"
        receipt = replace(first.receipt, columns={}, notes=(_inner_note(first, what1), note))
        return Result(columns=tuple(out_names), types=tuple(out_types), rows=[], receipt=receipt)
    sql, params = _in_released(series, values)
    second = session.execute(sql, params, rho)
    what2 = f"release 2 of 2, the query over the {len(values)} released group(s) ({', '.join(n for _, n in series.pairs)})"
    charged = [r for r in (first.receipt, second.receipt) if r.charge_id is not None]  # a reused one has none
    receipt = replace(second.receipt, rho=sum((r.rho for r in charged), Fraction(0)),
                      delta=sum((r.delta for r in charged), Fraction(0)),
                      notes=(_inner_note(first, what1), _inner_note(second, what2), *second.receipt.notes))
    return replace(second, receipt=receipt)


def decide(session: Session, sql: str, rho: Any = None) -> Over | SeriesLimit | None:
    """Phase 1 alone, from public information: the shape, the subquery decided, the outer query
    bound (DP124) or decided; runs nothing, charges nothing. None for any other statement."""
    found = shape(sql, session)
    if isinstance(found, Over):
        bind(session, found)
        with inner_errors(found):
            session.decide(found.inner, rho=rho, check_budget=False)
    elif isinstance(found, SeriesLimit):
        if found.others is not None:
            from dpsql.intercept import series_others

            series_others.decide(session, found, rho)
        elif (one := derived(session, found)) is not None:
            with inner_errors(found):
                session.decide(found.inner, rho=rho, check_budget=False)
            session.decide(one.base, rho=rho, check_budget=False)
        else:
            _decide_series(session, found, rho)
    return found


#: phase 1's shape and bound schema of recent statements, per plan context (analyst, policy,
#: schema: :func:`dpsql.sql.plan_cache.context`) and error-columns mode: a dashboard repeats its
#: SQL, and the shape and the bind are functions of these alone (refusals are not remembered)
_DECIDED: OrderedDict[tuple[Any, ...], tuple[Over | SeriesLimit | None, tuple[list[str], ...] | None]] = OrderedDict()
_DECIDED_LOCK = threading.Lock()


def _prepared(session: Session, sql: str) -> tuple[Over | SeriesLimit | None, tuple[list[str], ...] | None]:
    context = getattr(session, "_plan_context", None)
    if context is None:  # no analyst's context to key on: never shared (its speed would tell others' texts)
        found = shape(sql, session)
        return found, bind(session, found) if isinstance(found, Over) else None
    key = (context, session.output.error_columns, sql)
    with _DECIDED_LOCK:
        if key in _DECIDED:
            _DECIDED.move_to_end(key)
            return _DECIDED[key]
    found = shape(sql, session)
    value = (found, bind(session, found) if isinstance(found, Over) else None)
    with _DECIDED_LOCK:
        _DECIDED[key] = value
        while len(_DECIDED) > 256:
            _DECIDED.popitem(last=False)
    return value


def answer(session: Session, sql: str, rho: Any = None) -> Result | None:
    """The answer of SQL over a released answer or of a series limit; None for any other statement."""
    found, bound = _prepared(session, sql)
    if found is None:
        return None
    return execute_over(session, found, rho, bound) if isinstance(found, Over) else execute_series(session, found, rho)


def describe(session: Session, sql: str) -> tuple[list[str], list[str]] | None:
    """(names, types) of the answer, from public information only (a wire client's Describe); None
    for any other statement."""
    found, bound = _prepared(session, sql)
    if found is None:
        return None
    if isinstance(found, Over):
        return tuple(bound[2:])  # type: ignore[index,return-value]
    return session.describe(_in_released(found, None)[0])


def explain(session: Session, sql: str) -> str | None:
    """EXPLAIN of SQL over a released answer (the inner's cost, the outer free) or of a series
    limit (both releases and their sum), from public information only; None for any other statement."""
    found = shape(sql, session)
    if found is None:
        return None
    if isinstance(found, SeriesLimit) and found.others is not None:  # Superset's "group others"
        from dpsql.intercept.series_others import explain_note

        return explain_note(session, found) + "\n\n" + _explain(session, found)
    return _explain(session, found)


def _explain(session: Session, found: Over | SeriesLimit) -> str:
    from dpsql.pipeline.format import explanation

    if isinstance(found, Over):
        bind(session, found)  # DP124 here too: EXPLAIN refuses what the query would be refused
        with inner_errors(found):
            inner = session.explain(found.inner)
        return "\n".join([
            f"SQL over a released answer: the subquery is one release (rho={fmt(inner.rho)}, or 0 when it was released "
            "before and is shown again); the outer query runs on its noisy rows only: post-processing, charged 0.",
            "", f"-- the subquery, an ordinary dpsql query: {found.inner}", explanation(inner), "",
            "-- the outer query, run on the released rows only (free):", found.outer.sql(dialect="duckdb") + ";"])
    if (one := derived(session, found)) is not None:
        with inner_errors(found):
            session.explain(found.inner)
        base = session.explain(one.base)
        return "\n".join([
            f"a series limit read from one release: rho={fmt(base.rho)} (0 when it was released before and is shown "
            f"again); the ranking ({one.what}) is the sum of each key's released cells of that release: "
            "post-processing, charged 0 (ties by key ascending). SET dpsql.series_limit = 'separate' for two releases.",
            "", "-- the one release, the query without its join, LIMIT and OFFSET:", one.base, explanation(base)])
    plain, _ = _in_released(found, None)
    with inner_errors(found):
        first = session.explain(found.inner)
    second = session.explain(plain)
    keys = ", ".join(f"{c.sql(dialect='duckdb')} = {n}" for c, n in found.pairs)
    return "\n".join([
        f"a join to an aggregate subquery (a series limit): two releases, rho={fmt(first.rho)} + {fmt(second.rho)} = "
        f"{fmt(first.rho + second.rho)} (the first 0 when it was released before and is shown again).",
        "", f"-- release 1 of 2, the subquery: {found.inner}", explanation(first), "",
        f"-- release 2 of 2, the query with its join replaced by the released groups ({keys}: "
        "an IN list of released, public values; no group released: no second release):", plain, explanation(second)])


def explanation(session: Session, sql: str) -> Explanation | None:
    """``Connection.explain`` of SQL over a released answer (the subquery's explanation, the outer
    query free) or of a series limit (the second release's, its ρ the sum of both, the first's 0
    when it would be shown again), so a face pricing a statement (the prompt's confirmation,
    ``dpsql explain --json``) sees its cost; None for any other statement."""
    found, _ = _prepared(session, sql)
    if isinstance(found, Over):
        with inner_errors(found):
            inner = session.explain(found.inner)
        return replace(inner, sql=sql, notes=(*inner.notes, "outer query: post-processing of the subquery's released "
                                              "answer, charged 0: " + found.outer.sql(dialect="duckdb")))
    if isinstance(found, SeriesLimit) and (one := derived(session, found)) is not None:
        with inner_errors(found):
            session.explain(found.inner)
        base = session.explain(one.base)
        return replace(base, sql=sql, notes=(f"a series limit read from one release: {one.what}, summed from the "
                                             "released cells (post-processing, charged 0)", *base.notes))
    if isinstance(found, SeriesLimit):
        with inner_errors(found):
            first = session.explain(found.inner)
        second = session.explain(_in_released(found, None)[0])
        again = any(n.startswith("reuse: would show") for n in first.notes)
        rho = second.rho + (0 if again else first.rho)
        notes = (f"a series limit: two releases, the subquery ({found.inner}: rho={fmt(first.rho)}"
                 f"{', would be shown again, 0' if again else ''}) then this query over its released groups "
                 f"(rho={fmt(second.rho)})", *(n for n in second.notes if not n.startswith("reuse:")))
        return replace(second, sql=sql, rho=rho, delta=second.delta + (0 if again else first.delta), notes=notes)
    return None
