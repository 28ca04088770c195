"""The two shapes of SQL over released answers, read from the text (issue 32;
:mod:`dpsql.intercept.over_answers` answers them): an outer query whose only input is one
aggregate subquery or CTE (:class:`Over`), and a private table joined to an aggregate subquery of
it on the subquery's GROUP BY keys, Superset's series limit (:class:`SeriesLimit`). Public
information only: the text, the policy and the schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dpsql.errors import DpsqlError, QueryRefused
from dpsql.intercept.probes import parsed
from dpsql.session import Session
from dpsql.sql.parse import parse

#: the relation the outer SQL reads the released answer from, in the finisher
ANSWER = "__dpsql_answer"

OVER_HINT = ("an outer query may read one aggregate subquery (or one CTE holding it) and nothing else: "
              "SELECT COUNT(*) FROM (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state) AS t.")
OTHERS_HINT = ("write Superset's \"group others\" as it does: every series column in SELECT and GROUP BY as CASE WHEN "
               "series_limit.k__ IS NOT NULL THEN k ELSE 'Others' END, the subquery LEFT JOINed on every key.")
JOIN_HINT = ("join a table to an aggregate subquery of it on every GROUP BY key of the subquery, and use the "
              "subquery's columns in ON only: FROM t JOIN (SELECT k AS k__, COUNT(*) AS c FROM t GROUP BY k "
              "ORDER BY c DESC LIMIT 5) AS s ON k = k__.")


@dataclass(frozen=True)
class Over:
    """An outer query over one aggregate subquery: the inner's text, and the outer's tree with the
    inner replaced by a read of :data:`ANSWER`."""

    inner: str
    outer: exp.Expression
    sql: str = ""  # the whole statement, and where the inner's text starts in it (None: rendered)
    offset: int | None = None


@dataclass(frozen=True)
class SeriesLimit:
    """A private table joined to an aggregate subquery of it: the subquery's text, the outer query
    without the join, and the pairs (outer column, the subquery's output column) of its ON."""

    inner: str
    outer: exp.Select
    pairs: tuple[tuple[exp.Column, str], ...]
    sql: str = ""
    offset: int | None = None
    #: Superset's "group others": the label of the rows of the keys outside the top n (series_others.py)
    others: str | None = None


# ---------------------------------------------------------------------- shapes, from the text
def _aggregates(node: exp.Expression | None) -> bool:
    """Whether ``node`` is a SELECT that releases an aggregate answer: GROUP BY, DISTINCT or an
    aggregate function in its own SELECT list (not in a nested query)."""
    if not isinstance(node, exp.Select):
        return False
    if node.args.get("group") or node.args.get("distinct"):
        return True
    return any(isinstance(n, exp.AggFunc) and n.find_ancestor(exp.Select) is node
               for item in node.expressions for n in item.walk())


def with_of(node: exp.Expression) -> exp.With | None:
    return node.args.get("with_") or node.args.get("with")


def _from(node: exp.Expression) -> exp.From | None:
    return node.args.get("from_") or node.args.get("from")


def _text(node: exp.Expression, sql: str) -> tuple[str, int | None]:
    """The text of ``node`` as the query wrote it and where it starts (so a refusal of the inner
    points into the statement: :func:`inner_errors`), or sqlglot's rendering and None when no
    parenthesised span of ``sql`` parses to it."""
    from sqlglot.tokens import TokenType

    from dpsql.sql.parse import _tokens

    tokens = _tokens(sql)
    for i, tok in enumerate(tokens):
        if tok.token_type != TokenType.L_PAREN or i + 1 >= len(tokens) or \
                tokens[i + 1].token_type not in (TokenType.SELECT, TokenType.WITH):
            continue
        depth = 0
        for j in range(i, len(tokens)):
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[j].token_type, 0)
            if depth == 0:
                text = sql[tokens[i + 1].start:tokens[j - 1].end + 1]
                try:
                    if parse(text) == node:
                        return text, tokens[i + 1].start
                except DpsqlError:
                    pass
                break
    return node.sql(dialect="duckdb"), None


@contextmanager
def inner_errors(found: Over | SeriesLimit) -> Iterator[None]:
    """A refusal of the inner statement, its line and column moved from the inner's text to the
    whole statement's."""
    try:
        yield
    except DpsqlError as exc:
        if exc.line and found.offset is not None:
            lines = found.inner.split("\n")
            index = found.offset + sum(len(ln) + 1 for ln in lines[:exc.line - 1]) + (exc.column or 1) - 1
            exc.line = found.sql.count("\n", 0, index) + 1
            exc.column = index - (found.sql.rfind("\n", 0, index) + 1) + 1
        raise


def _at(node: exp.Expression, sql: str, outer: exp.Expression) -> tuple[Any, ...]:
    text, offset = _text(node, sql)
    return text, outer, sql, offset


def _names_cte(table: exp.Table, name: str) -> bool:
    return isinstance(table.this, exp.Identifier) and not table.args.get("db") and not table.args.get("catalog") \
        and table.name.lower() == name


def shape(sql: str, session: Session) -> Over | SeriesLimit | None:
    """The shape of ``sql`` when it is SQL over a released answer or a series limit, else None
    (the pipeline answers or refuses it). Raises DP126 / DP127 for a near miss: a form of these
    shapes dpsql cannot answer, named."""
    tree = parsed(sql, session.analyst)
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return None
    with_ = with_of(tree)
    if with_ is not None:
        ctes = list(with_.expressions)
        if with_.args.get("recursive") or len(ctes) != 1 or not _aggregates(ctes[0].this):
            return None
        name = ctes[0].alias_or_name.lower()
        outer = tree.copy()
        with_of(outer).expressions[0].this.replace(_read_answer())
        others = [t for t in outer.find_all(exp.Table) if not _names_cte(t, name) and t.name != ANSWER]
        if others:
            raise refuse("DP127", f"the query reads {others[0].sql('duckdb')} besides the answer of the CTE {name!r}",
                          OVER_HINT)
        return Over(*_at(ctes[0].this, sql, outer))
    subqueries = [s for s in tree.find_all(exp.Subquery) if _aggregates(s.this)]
    ids = {id(s) for s in subqueries}
    outermost = [s for s in subqueries if not any(id(a) in ids for a in _ancestors(s))]
    if not outermost:
        return None
    if isinstance(tree, exp.Select) and len(outermost) == 1 and isinstance(outermost[0].parent, exp.Join):
        return _series_limit(tree, outermost[0], sql, session)
    if len(outermost) != 1 or not isinstance(outermost[0].parent, exp.From):
        if any(isinstance(s.parent, exp.From) for s in outermost):
            raise refuse("DP127", "the query reads more than one aggregate subquery", OVER_HINT)
        return None
    inner = outermost[0]
    outer = tree.copy()
    place = next(i for i, s in enumerate(tree.find_all(exp.Subquery)) if s is inner)
    target = list(outer.find_all(exp.Subquery))[place]  # the same node of the copy (the parsed tree is shared)
    target.this.replace(_read_answer())
    others = [t for t in outer.find_all(exp.Table) if t.name != ANSWER or not isinstance(t.this, exp.Identifier)]
    if others:
        raise refuse("DP127", f"the query reads {others[0].sql('duckdb')} besides the aggregate subquery's answer",
                      OVER_HINT)
    return Over(*_at(inner.this, sql, outer))


def _ancestors(node: exp.Expression):
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _read_answer() -> exp.Select:
    return exp.select("*").from_(exp.to_table(ANSWER))


def refuse(code: str, message: str, hint: str) -> QueryRefused:
    return QueryRefused(message, code=code, hint=hint)


def _series_limit(tree: exp.Select, sub: exp.Subquery, sql: str, session: Session) -> SeriesLimit:
    """The series-limit join (module docstring), or DP126 naming what is not of that shape."""
    join = sub.parent
    base = _from(tree).this if _from(tree) is not None else None
    side, kind = (str(join.args.get(k) or "").upper() for k in ("side", "kind"))
    if len(tree.args.get("joins") or []) != 1 or side not in ("", "LEFT") or kind not in ("", "INNER", "OUTER") \
            or side and kind == "INNER" or join.args.get("using"):
        raise refuse("DP126", "an aggregate subquery may be joined alone, by an INNER JOIN ... ON (or a LEFT JOIN "
                              "for Superset's \"group others\")", JOIN_HINT)
    virtual = _virtual(base.this, session) if isinstance(base, exp.Subquery) else None
    if virtual is not None:  # a virtual dataset: FROM (SELECT cols FROM t WHERE …) AS virtual_table
        base_names = {base.alias.lower()} - {""}
        base, (table, columns) = _from(base.this).this, virtual
    elif not _plain_table(base):
        raise refuse("DP126", "an aggregate subquery may be joined to one table of the policy, or to a plain "
                              "row-level SELECT of one (a virtual dataset)", JOIN_HINT)
    else:
        table = base.name.lower()
        columns = _private_columns(session, table)
        base_names = {table, base.alias.lower()} - {""}
    if not columns:
        raise refuse("DP126", f"{base.name!r} is not a private table of the policy", JOIN_HINT)
    alias = sub.alias.lower()
    inner = sub.this
    outputs = {item.alias_or_name.lower(): item for item in inner.expressions}

    def inner_name(col: exp.Expression) -> str | None:
        if not isinstance(col, exp.Column) or isinstance(col.this, exp.Star):
            return None
        if col.table:
            return col.name.lower() if col.table.lower() == alias else None
        return col.name.lower() if col.name.lower() in outputs and col.name.lower() not in columns else None

    def outer_column(col: exp.Expression) -> bool:
        return isinstance(col, exp.Column) and col.name.lower() in columns and \
            (not col.table or col.table.lower() in base_names) and inner_name(col) is None

    on = join.args.get("on")
    conds = list(on.flatten()) if isinstance(on, exp.And) else [on]
    pairs = []
    for cond in conds:
        if not isinstance(cond, exp.EQ):
            raise refuse("DP126", "the ON of a join to an aggregate subquery must be equalities joined by AND", JOIN_HINT)
        left, right = cond.this, cond.expression
        if inner_name(right) is not None and outer_column(left):
            pairs.append((left, inner_name(right)))
        elif inner_name(left) is not None and outer_column(right):
            pairs.append((right, inner_name(left)))
        else:
            raise refuse("DP126", f"{cond.sql('duckdb')} does not match a column of {base.name!r} with one of the "
                                   "subquery's", JOIN_HINT)
    keys = _group_outputs(inner)
    joined = {name for _, name in pairs}
    if keys is None or not keys <= joined or not joined <= set(outputs):
        raise refuse("DP126", "the join must match every GROUP BY key of the aggregate subquery, by its output names "
                               "(each released row is then one group, and the join keeps the table's rows of the "
                               "released groups)", JOIN_HINT)
    outer = tree.copy()
    outer.set("joins", None)
    label = unwrap(outer, lambda c: isinstance(c, exp.Column) and inner_name(c) in joined, [c for c, _ in pairs])
    if side and label is None:
        raise refuse("DP126", "a LEFT JOIN to an aggregate subquery is read only as Superset's \"group others\" "
                              "(CASE WHEN <its column> IS NOT NULL THEN <key> ELSE 'Others' END)", JOIN_HINT)
    for col in outer.find_all(exp.Column):
        if inner_name(col) is not None:
            raise refuse("DP126", f"the query uses the subquery's column {col.sql('duckdb')} outside ON; "
                                   "only its groups can be joined", JOIN_HINT)
    text, offset = _text(inner, sql)
    return SeriesLimit(text, outer, tuple((c.copy(), n) for c, n in pairs), sql, offset, label if side else None)


def _is_matched(cond: exp.Expression, joined: Callable[[exp.Expression], bool]) -> bool:
    """``<the subquery's join column> IS NOT NULL`` (parenthesised or not)."""
    cond = cond.unnest() if isinstance(cond, exp.Paren) else cond
    if not isinstance(cond, exp.Not):
        return False
    inner = cond.this.unnest() if isinstance(cond.this, exp.Paren) else cond.this
    return isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null) and joined(inner.this)


def unwrap(outer: exp.Select, joined: Callable[[exp.Expression], bool], series: list[exp.Column]) -> str | None:
    """Replace, in ``outer``, each ``CASE WHEN <joined column> IS NOT NULL THEN k ELSE '<label>' END``
    (k a series column) by ``k``; the label, or None when there is no such CASE. DP126 when the
    CASEs do not wrap every series column of the SELECT list under one label (Superset wraps
    them all)."""
    names = {c.name.lower() for c in series}
    labels, wrapped = set(), set()
    for case in list(outer.find_all(exp.Case)):
        ifs, default = case.args.get("ifs") or [], case.args.get("default")
        if not any(_is_matched(i.this, joined) for i in ifs):
            continue
        then = ifs[0].args.get("true") if len(ifs) == 1 else None
        if not (_is_matched(ifs[0].this, joined) and isinstance(then, exp.Column) and then.name.lower() in names
                and isinstance(default, exp.Literal) and default.is_string):
            raise QueryRefused("a CASE on the series-limit subquery's column must be CASE WHEN <its column> IS NOT "
                               "NULL THEN <the series column> ELSE '<label>' END", code="DP126", hint=OTHERS_HINT)
        labels.add(default.this)
        if case.find_ancestor(exp.Group, exp.Where, exp.Order, exp.Having) is None:  # in the SELECT list
            wrapped.add(then.name.lower())
        case.replace(then.copy())
    if not labels:
        return None
    if len(labels) > 1 or wrapped != names:
        raise QueryRefused("\"group others\" must wrap every series column in one CASE with one label", code="DP126",
                           hint=OTHERS_HINT)
    return labels.pop()


def _plain_table(node: exp.Expression | None) -> bool:
    """A table by its name alone, or ``main.t`` (the planner reads it as ``t``: Superset)."""
    db = node.args.get("db") if isinstance(node, exp.Table) else None
    return isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and not node.args.get("catalog") \
        and (db is None or db.name.lower() == "main")


def _private_columns(session: Session, table: str) -> set[str]:
    return {c.lower() for c in session.schema.get(table, {})} if table in {t.lower() for t in session.policy.tables} \
        else set()


def _virtual(select: exp.Expression, session: Session) -> tuple[str, set[str]] | None:
    """(table, output columns) of a virtual dataset's SQL that is a plain row-level SELECT of one
    private table: columns (renamed or not, or ``*``) and a WHERE, nothing else; or None. The
    pipeline then decides it as any FROM subquery (sql/inline.py)."""
    if not isinstance(select, exp.Select) or _from(select) is None or not _plain_table(_from(select).this):
        return None
    if any(select.args.get(k) for k in ("joins", "group", "having", "distinct", "order", "limit", "offset", "qualify",
                                        "with_", "with")):
        return None
    table = _from(select).this.name.lower()
    columns = _private_columns(session, table)
    outputs: set[str] = set()
    for item in select.expressions:
        value = item.this if isinstance(item, exp.Alias) else item
        if isinstance(value, exp.Star) or isinstance(value, exp.Column) and isinstance(value.this, exp.Star):
            outputs |= columns
        elif isinstance(value, exp.Column) and value.name.lower() in columns:
            outputs.add(item.alias_or_name.lower())
        else:
            return None
    return (table, outputs) if columns and outputs else None


def _group_outputs(inner: exp.Select) -> set[str] | None:
    """The output names of the inner's GROUP BY keys (each key must be an output), or None."""
    group = inner.args.get("group")
    items = inner.expressions
    names: set[str] = set()
    for key in (group.expressions if group is not None else []):
        if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(items):
            names.add(items[int(key.this) - 1].alias_or_name.lower())
            continue
        match = [i for i in items if (i.this if isinstance(i, exp.Alias) else i) == key
                 or isinstance(key, exp.Column) and not key.table and i.alias_or_name.lower() == key.name.lower()]
        if not match:
            return None
        names.add(match[0].alias_or_name.lower())
    return names if names else None
