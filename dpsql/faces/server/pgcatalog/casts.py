"""Casts in catalog statements: PostgreSQL's ``reg*`` types and its own types, in DuckDB.

``'establishments'::regclass`` becomes the table's OID (and an unknown name fails as
PostgreSQL fails, ``relation "x" does not exist``); ``c.oid::regclass`` shown in a result becomes
the name; ``x::oid`` an unsigned 32-bit number; ``'{a,b}'::text[]`` a DuckDB list.
:func:`array_casts` fixes, on sqlglot's tokens, two spellings sqlglot cannot parse.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from dpsql.faces.server.pgcatalog.rules import QUALIFIED, CatalogLookupError, Context, call
from dpsql.faces.server.pgcatalog.schema import ANALYST_OID

_REG = ("regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole", "regoper", "regoperator",
        "regconfig", "regdictionary", "regcollation")
_IN = ("regclass", "regtype", "regnamespace")
_PG_TYPES = {"oid": "UINTEGER", "xid": "BIGINT", "xid8": "BIGINT", "cid": "BIGINT", "tid": "VARCHAR", "name": "VARCHAR",
             "char": "VARCHAR", "bpchar": "VARCHAR", "text": "VARCHAR", "varchar": "VARCHAR", "pg_node_tree": "VARCHAR",
             "int2vector": "SMALLINT[]", "oidvector": "BIGINT[]", "aclitem": "VARCHAR", "int2": "SMALLINT",
             "int4": "INTEGER", "int8": "BIGINT", "float4": "REAL", "float8": "DOUBLE", "bool": "BOOLEAN",
             "sql_identifier": "VARCHAR", "character_data": "VARCHAR", "yes_or_no": "VARCHAR",
             "cardinal_number": "INTEGER", "time_stamp": "TIMESTAMPTZ", "json": "VARCHAR", "jsonb": "VARCHAR",
             "regconfig": "BIGINT", "pg_lsn": "VARCHAR", "inet": "VARCHAR", "anyarray": "VARCHAR[]"}


def _type_name(to: exp.Expression) -> tuple[str, bool]:
    """(PostgreSQL type name without schema, is an array) of a cast's target."""
    if isinstance(to, exp.ObjectIdentifier):
        return to.name.lower(), False
    if isinstance(to, exp.DataType):
        if to.this == exp.DataType.Type.ARRAY and to.expressions:
            return _type_name(to.expressions[0])[0], True
        if to.this == exp.DataType.Type.USERDEFINED:
            kind = to.args.get("kind")
            name = kind.name if isinstance(kind, exp.Dot) else kind.name if kind is not None else ""
            return name.lower(), False
        if to.this == exp.DataType.Type.NAME:
            return "name", False
        if to.this in (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR):
            return "text", False
    return "", False


def _displayed(cast: exp.Cast) -> bool:
    """Whether a reg* value is shown (PostgreSQL prints its name) rather than compared as an OID."""
    parent = cast.parent
    if isinstance(parent, exp.Alias):
        parent = parent.parent
    return isinstance(parent, (exp.Select, exp.DPipe, exp.Concat)) or (
        isinstance(parent, exp.Cast) and _type_name(parent.to)[0] in ("text", "varchar", "name", "")
        and not parent.to.is_type(*exp.DataType.INTEGER_TYPES))


def _resolve(kind: str, text: str, ctx: Context) -> int:
    names = ctx.names
    if kind == "regclass":
        parts = [p.strip('"') if p.startswith('"') else p.lower() for p in re.findall(r'"[^"]*"|[^.]+', text.strip())]
        key = ".".join(parts[-2:])
        if key in names.relations:
            return names.relations[key]
        raise CatalogLookupError(f'relation "{text}" does not exist', "42P01")
    if kind == "regtype":
        key = re.sub(r"\s+", " ", text.strip().lower()).removeprefix("pg_catalog.")
        key = re.sub(r"\(.*?\)", "", key).strip()
        if key in names.types:
            return names.types[key]
        raise CatalogLookupError(f'type "{text}" does not exist', "42704")
    if kind == "regnamespace":
        if text.strip('"') in names.namespaces:
            return names.namespaces[text.strip('"')]
        raise CatalogLookupError(f'schema "{text}" does not exist', "3F000")
    if kind == "regrole":
        if text == "dpsql" or text == ctx.user:
            return 10 if text == "dpsql" else ANALYST_OID
        raise CatalogLookupError(f'role "{text}" does not exist', "42704")
    if kind in ("regproc", "regprocedure"):
        raise CatalogLookupError(f'function "{text}" does not exist', "42883")
    raise CatalogLookupError(f'{kind} "{text}" does not exist', "42704")


def _array_literal(text: str, element: str) -> exp.Expression:
    """PostgreSQL's array text ``{a,"b c"}`` as a DuckDB list."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise CatalogLookupError(f'malformed array literal: "{text}"', "22P02")
    items = [m.group(1).replace('\\"', '"') if m.group(1) is not None else m.group(2).strip()
             for m in re.finditer(r'"((?:[^"\\]|\\.)*)"|([^,]+)', body[1:-1])]
    return exp.Array(expressions=[exp.cast(exp.Literal.string(i), element, dialect="duckdb") for i in items])


def resolve_casts(tree: exp.Expression, ctx: Context) -> exp.Expression:
    for quantified in list(tree.find_all(exp.Any, exp.All)):
        # `relkind = ANY('{r,p}')`: an untyped array text, as psycopg's sql.Literal writes a list
        # (pgcli's \dt); PostgreSQL reads it as an array of the left side's type, DuckDB as text
        inner = quantified.this.unnest() if isinstance(quantified.this, exp.Paren) else quantified.this
        if isinstance(inner, exp.Literal) and inner.is_string and inner.this.strip().startswith("{"):
            inner.replace(_array_literal(inner.this, "VARCHAR"))
    for cast in list(tree.find_all(exp.Cast)):
        kind, array = _type_name(cast.to)
        value = cast.this
        if array and isinstance(value, exp.Literal) and value.is_string:
            element = ("UINTEGER" if kind in _REG else _PG_TYPES.get(kind)
                       or cast.to.expressions[0].sql("duckdb"))
            cast.replace(_array_literal(value.this, element))
        elif kind in _REG and not array:
            proc = value.this.strip().removeprefix("pg_catalog.") if isinstance(value, exp.Literal) else ""
            if kind in ("regproc", "regprocedure") and proc in ctx.names.procs:
                cast.replace(exp.Literal.string(proc))  # the catalog's function columns hold names
            elif isinstance(value, exp.Literal) and value.is_string and not value.this.strip().isdigit():
                oid = _resolve(kind, value.this, ctx)
                shown = _displayed(cast) and kind in ("regclass", "regnamespace", "regrole")
                cast.replace(exp.Literal.string(value.this.strip()) if shown else exp.Literal.number(oid))
            elif isinstance(value, exp.Literal):
                cast.replace(exp.Literal.number(int(value.this)))
            elif isinstance(value, (exp.Parameter, exp.Placeholder)):  # $1::regclass: a name or a number
                cast.replace(call(f"{QUALIFIED}.{kind}_in", value) if kind in _IN
                             else exp.cast(value, "UINTEGER", dialect="duckdb"))
            elif _displayed(cast):
                out = {"regclass": "regclass_out", "regtype": "regtype_out", "regnamespace": "regnamespace_out",
                       "regrole": "regrole_out"}.get(kind, "regproc_out")
                args = [value, exp.Literal.string(ctx.user)] if kind == "regrole" else [value]
                cast.replace(call(f"{QUALIFIED}.{out}", *args))
            elif kind in _IN:  # an OID, or a name computed by the query (format('%I.%I', ...)::regclass)
                cast.replace(call(f"{QUALIFIED}.{kind}_in", value))
            else:
                cast.set("to", exp.DataType.build("UINTEGER", dialect="duckdb"))
        elif kind in _REG or kind in _PG_TYPES:
            duck = "UINTEGER" if kind in _REG else _PG_TYPES[kind]
            cast.set("to", exp.DataType.build(duck + ("[]" if array and not duck.endswith("]") else ""), dialect="duckdb"))
    return tree


_ARRAY_OF = {"oid": "UINTEGER", "regclass": "UINTEGER", "regtype": "UINTEGER", "regproc": "UINTEGER",
             "regprocedure": "UINTEGER", "regnamespace": "UINTEGER", "regrole": "UINTEGER", "xid": "BIGINT",
             "name": "VARCHAR", "char": "VARCHAR", "aclitem": "VARCHAR"}


def array_casts(sql: str) -> str:
    """``sql`` with two PostgreSQL spellings sqlglot cannot parse made plain, working on sqlglot's
    tokens so that nothing inside a string or a quoted identifier changes:

    * ``x::oid[]`` becomes ``x::UINTEGER[]`` (sqlglot reads an array of a type it does not
      know, ``oid[]``, ``regtype[]``, ``"char"[]``, as a subscript);
    * a keyword as a column label, ``... AS update,`` (Metabase's), is quoted: ``AS "update"``.
    """
    try:
        tokens = sqlglot.Dialect.get_or_raise("postgres").tokenize(sql)
    except sqlglot.errors.SqlglotError:
        return sql
    kinds = sqlglot.tokens.TokenType
    edits = []
    casts: list[bool] = []  # for each open parenthesis: does it belong to CAST(... AS type)?
    for i, token in enumerate(tokens):
        if token.token_type == kinds.L_PAREN:
            casts.append(i > 0 and tokens[i - 1].text.upper() in ("CAST", "TRY_CAST"))
        elif token.token_type == kinds.R_PAREN and casts:
            casts.pop()
        elif token.token_type == kinds.ALIAS and i + 1 < len(tokens) and not (casts and casts[-1]):
            label, after = tokens[i + 1], tokens[i + 2] if i + 2 < len(tokens) else None
            if (label.token_type not in (kinds.VAR, kinds.IDENTIFIER) and label.text.isidentifier()
                    and (after is None or after.token_type in (kinds.COMMA, kinds.FROM, kinds.R_PAREN, kinds.SEMICOLON))):
                edits.append((label.start, label.end + 1, f'"{label.text.lower()}"'))
        elif token.token_type == kinds.DCOLON:
            j = i + 1
            if j + 1 < len(tokens) and tokens[j].text.lower() == "pg_catalog" and tokens[j + 1].token_type == kinds.DOT:
                j += 2
            if (j + 2 < len(tokens) and tokens[j].text.lower() in _ARRAY_OF
                    and tokens[j + 1].token_type == kinds.L_BRACKET and tokens[j + 2].token_type == kinds.R_BRACKET):
                edits.append((tokens[i + 1].start, tokens[j + 2].end + 1, _ARRAY_OF[tokens[j].text.lower()] + "[]"))
    for start, stop, text in reversed(edits):
        sql = sql[:start] + text + sql[stop:]
    return sql
