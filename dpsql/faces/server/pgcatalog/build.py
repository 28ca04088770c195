"""Build the emulated PostgreSQL catalog in the catalog twin, from the schema and the policy.

:func:`build` creates database ``dpsql_catalog`` beside the served one in the twin, with schema
``pg`` (PostgreSQL 15's ``pg_catalog`` relations, :mod:`~dpsql.faces.server.pgcatalog.schema`;
the functions and ``information_schema``, :mod:`~dpsql.faces.server.pgcatalog.views`), and fills
the relations that describe the served tables: ``pg_class``, ``pg_attribute``, ``pg_index`` and
``pg_constraint`` (primary keys and unique constraints), ``pg_description`` (what the policy lets
an analyst do with each table and column). Everything it reads is public: the twin's schema
(``duckdb_columns()``, ``duckdb_constraints()`` of a database holding no private row), the
policy, and the number of rows of the policy's *public* tables. ``reltuples`` of a private table
is 0, its pages 0, and the statistics relations have no row at all. It returns the
:class:`Names` the rewrite resolves ``'name'::regclass`` and its kin with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpsql.backends import PublicCatalog
from dpsql.faces.server import pgtypes
from dpsql.faces.server.pgcatalog.schema import (
    ACCESS_METHODS, COLLATIONS, DATABASE, DATABASE_OID, FIRST_RELATION_OID, INFO, LANGUAGES, NAMESPACES,
    NS_MAIN, NS_PG_CATALOG, OWNER_OID, PG, RELATIONS, TABLESPACES, TYPE_ALIASES, TYPES, VIEWS, columns)
from dpsql.faces.server.pgcatalog.views import information_schema, macros

#: OIDs of PostgreSQL's own catalogs, for ``'pg_catalog.pg_class'::regclass`` and ``classoid``
SYSTEM_RELATIONS = {
    "pg_class": 1259, "pg_type": 1247, "pg_proc": 1255, "pg_attribute": 1249, "pg_namespace": 2615,
    "pg_constraint": 2606, "pg_database": 1262, "pg_extension": 3079, "pg_description": 2609, "pg_am": 2601,
    "pg_index": 2610, "pg_trigger": 2620, "pg_collation": 3456, "pg_operator": 2617, "pg_opclass": 2616,
    "pg_authid": 1260, "pg_tablespace": 1213, "pg_rewrite": 2618, "pg_event_trigger": 3466,
    "pg_foreign_data_wrapper": 2328, "pg_foreign_server": 1417, "pg_language": 2612, "pg_largeobject": 2613,
    "pg_cast": 2605, "pg_conversion": 2607, "pg_ts_config": 3602, "pg_ts_dict": 3600, "pg_ts_parser": 3601,
    "pg_ts_template": 3764, "pg_publication": 6104, "pg_subscription": 6100, "pg_statistic_ext": 3381,
    "pg_policy": 3256, "pg_default_acl": 826, "pg_enum": 3501, "pg_range": 3541, "pg_inherits": 2611,
    "pg_aggregate": 2600, "pg_attrdef": 2604, "pg_depend": 2608, "pg_opfamily": 2753, "pg_sequence": 2224,
    "pg_init_privs": 3394, "pg_seclabel": 3596, "pg_shdescription": 2396, "pg_transform": 3576,
    "pg_auth_members": 1261, "pg_roles": 12001, "pg_settings": 12002, "pg_tables": 12003,
}


#: every served table's ACL: its owner and everyone (PUBLIC) may read it, and nothing else
READ_ONLY = ["dpsql=r/dpsql", "=r/dpsql"]


@dataclass
class Names:
    """Name -> OID maps the rewrite resolves ``::regclass``, ``::regtype``, ``::regnamespace`` with."""

    database: str
    relations: dict[str, int] = field(default_factory=dict)  # "t" and "schema.t", lower case
    types: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, int] = field(default_factory=dict)
    tables: set[str] = field(default_factory=set)  # the served tables (names a query may not shadow)
    procs: set[str] = field(default_factory=set)  # functions named in the catalog (pg_type.typinput, ...)


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _typmod(duck: str) -> int:
    """PostgreSQL's atttypmod of a DuckDB column type: precision and scale of a DECIMAL."""
    upper = duck.upper()
    if upper.startswith("DECIMAL(") and upper.endswith(")"):
        precision, _, scale = upper[8:-1].partition(",")
        return (int(precision) << 16) + int(scale or 0) + 4
    return -1


def _insert(catalog: PublicCatalog, table: str, rows: list[tuple[Any, ...]]) -> None:
    width = len(columns(RELATIONS[table])) if table in RELATIONS else len(rows[0]) if rows else 0
    catalog.define(f"INSERT INTO {DATABASE}.{PG}.{table} VALUES ({', '.join('?' * width)})", rows)


def _row(table: str, **values: Any) -> tuple[Any, ...]:
    """A row of ``table`` with the given columns set and every other at its neutral value."""
    neutral = {"BOOLEAN": False, "UINTEGER": 0, "BIGINT": 0, "INTEGER": 0, "SMALLINT": 0, "REAL": 0.0, "DOUBLE": 0.0}
    out = []
    for name, duck in columns(RELATIONS[table]):
        out.append(values[name] if name in values else neutral.get(duck))
    missing = set(values) - {n for n, _ in columns(RELATIONS[table])}
    assert not missing, f"{table} has no column {missing}"
    return tuple(out)


def _types(catalog: PublicCatalog, names: Names) -> None:
    rows, display = [], []
    for oid, name, length, byval, category, array, shown, align, preferred in TYPES:
        kind = "p" if category == "P" else "b"
        rows.append(_row("pg_type", oid=oid, typname=name, typnamespace=NS_PG_CATALOG, typowner=OWNER_OID, typlen=length,
                         typbyval=byval, typtype=kind, typcategory=category, typispreferred=preferred,
                         typisdefined=True, typdelim=",", typsubscript="-", typarray=array,
                         typinput=f"{name}in", typoutput=f"{name}out", typreceive=f"{name}recv", typsend=f"{name}send",
                         typmodin="-", typmodout="-", typanalyze="-", typalign=align, typstorage="p" if length > 0 else "x",
                         typtypmod=-1, typcollation=100 if category == "S" and name != "char" else 0))
        display.append((oid, name, shown))
        names.types[name] = oid
        names.types[shown.strip('"')] = oid
        if array:
            rows.append(_row("pg_type", oid=array, typname="_" + name, typnamespace=NS_PG_CATALOG, typowner=OWNER_OID,
                             typlen=-1, typtype="b", typcategory="A", typisdefined=True, typdelim=",",
                             typsubscript="array_subscript_handler", typelem=oid, typinput="array_in",
                             typoutput="array_out", typreceive="array_recv", typsend="array_send", typmodin="-",
                             typmodout="-", typanalyze="array_typanalyze", typalign=align if align == "d" else "i",
                             typstorage="x", typtypmod=-1, typcollation=100 if category == "S" and name != "char" else 0))
            display.append((array, "_" + name, shown + "[]"))
            names.types["_" + name] = names.types[shown.strip('"') + "[]"] = array
    for alias, name in TYPE_ALIASES.items():
        names.types.setdefault(alias, names.types[name])
    _insert(catalog, "pg_type", rows)
    names.procs = {r[i] for r in rows for i in range(15, 20) if r[i] not in (None, "-")}
    catalog.define(f"CREATE TABLE {DATABASE}.{PG}.dpsql_type_names (oid BIGINT, typname VARCHAR, display VARCHAR, "
                   f"typcategory VARCHAR)")
    category = {r[0]: r[7] for r in rows}
    catalog.define(f"INSERT INTO {DATABASE}.{PG}.dpsql_type_names VALUES (?, ?, ?, ?)",
                   [(oid, name, shown, category[oid]) for oid, name, shown in display])


def _fixed(catalog: PublicCatalog, names: Names) -> None:
    _insert(catalog, "pg_namespace", [(oid, name, OWNER_OID, None) for oid, name in NAMESPACES])
    names.namespaces.update({name: oid for oid, name in NAMESPACES})
    _insert(catalog, "pg_am", list(ACCESS_METHODS))
    _insert(catalog, "pg_tablespace", [(oid, name, OWNER_OID, None, None) for oid, name in TABLESPACES])
    _insert(catalog, "pg_collation", [_row("pg_collation", oid=oid, collname=name, collnamespace=NS_PG_CATALOG,
                                           collowner=OWNER_OID, collprovider=provider, collisdeterministic=True,
                                           collencoding=-1, collcollate=locale, collctype=locale)
                                      for oid, name, provider, locale in COLLATIONS])
    _insert(catalog, "pg_language", [_row("pg_language", oid=oid, lanname=name, lanowner=OWNER_OID, lanpltrusted=trusted)
                                     for oid, name, trusted in LANGUAGES])
    _insert(catalog, "pg_database", [_row(
        "pg_database", oid=DATABASE_OID, datname=names.database, datdba=OWNER_OID, encoding=6, datlocprovider="c",
        datallowconn=True, datconnlimit=-1, dattablespace=1663, datcollate="C", datctype="C")])
    _insert(catalog, "pg_roles", [_row("pg_roles", rolname="dpsql", rolinherit=True, rolconnlimit=-1, oid=OWNER_OID)])
    _insert(catalog, "pg_user", [_row("pg_user", usename="dpsql", usesysid=OWNER_OID)])
    names.relations.update(SYSTEM_RELATIONS)
    names.relations.update({f"pg_catalog.{k}": v for k, v in SYSTEM_RELATIONS.items()})


def _tables(catalog: PublicCatalog, names: Names, public: set[str], comments: dict[tuple[str, str], str]) -> None:
    """pg_class, pg_attribute, pg_attrdef, indexes and constraints, descriptions, stat rows."""
    _, _, cols = catalog.run(
        "SELECT table_name, column_name, column_index, data_type, is_nullable, column_default FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index")
    _, _, keys = catalog.run(
        "SELECT table_name, constraint_type, constraint_column_names, constraint_index FROM duckdb_constraints() "
        "WHERE database_name = current_database() AND schema_name = 'main' "
        "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') ORDER BY table_name, constraint_index")
    by_table: dict[str, list[tuple[Any, ...]]] = {}
    for row in cols:
        by_table.setdefault(row[0], []).append(row)
    tables = sorted(by_table)
    oid_of = {t: FIRST_RELATION_OID + i for i, t in enumerate(tables)}
    next_oid = FIRST_RELATION_OID + len(tables)
    classes, attributes, defaults, indexes, constraints, definitions, descriptions, stats = [], [], [], [], [], [], [], []
    keyed = {k[0] for k in keys}
    for table in tables:
        oid = oid_of[table]
        rows = 0
        if table.lower() in public:
            rows = catalog.run(f'SELECT count(*) FROM "{table}"')[2][0][0]  # a public table: its size is public
        classes.append(_row("pg_class", oid=oid, relname=table, relnamespace=NS_MAIN, relowner=OWNER_OID, relam=2,
                            relfilenode=oid, reltuples=float(rows), relhasindex=table in keyed, relpersistence="p",
                            relacl=READ_ONLY,
                            relkind="r", relnatts=len(by_table[table]), relispopulated=True, relreplident="d"))
        names.relations[table.lower()] = names.relations[f"main.{table.lower()}"] = oid
        names.tables.add(table.lower())
        for _, column, index, duck, nullable, default in by_table[table]:
            type_oid = pgtypes.oid_of(duck)
            length = next((t[2] for t in TYPES if t[0] == type_oid), -1)
            attributes.append(_row("pg_attribute", attrelid=oid, attname=column, atttypid=type_oid, attstattarget=-1,
                                   attlen=length, attnum=index, attcacheoff=-1, atttypmod=_typmod(duck),
                                   attbyval=length in (1, 2, 4, 8), attalign="i", attstorage="p" if length > 0 else "x",
                                   attnotnull=not nullable, atthasdef=default is not None, attidentity="",
                                   attgenerated="", attislocal=True,
                                   attcollation=100 if type_oid in (pgtypes.TEXT, pgtypes.VARCHAR) else 0))
            if default is not None:
                defaults.append((next_oid, oid, index, str(default)))
                next_oid += 1
            if (table, column) in comments:
                descriptions.append((oid, 1259, index, comments[(table, column)]))
        if (table, "") in comments:
            descriptions.append((oid, 1259, 0, comments[(table, "")]))
        stats.append((oid, "main", table))
    for table, kind, key_columns, _ in keys:
        if table not in oid_of:
            continue
        index_oid, constraint_oid = next_oid, next_oid + 1
        next_oid += 2
        suffix = "pkey" if kind == "PRIMARY KEY" else "_".join(key_columns) + "_key"
        name = f"{table}_{suffix}"
        position = {r[1]: r[2] for r in by_table[table]}  # duckdb_columns counts from 1, as attnum does
        attnums = [position[c] for c in key_columns]
        listed = ", ".join(key_columns)
        classes.append(_row("pg_class", oid=index_oid, relname=name, relnamespace=NS_MAIN, relowner=OWNER_OID,
                            relam=403, relfilenode=index_oid, relpersistence="p", relkind="i", relnatts=len(attnums),
                            relispopulated=True, relreplident="n"))
        names.relations[name.lower()] = names.relations[f"main.{name.lower()}"] = index_oid
        indexes.append(_row("pg_index", indexrelid=index_oid, indrelid=oid_of[table], indnatts=len(attnums),
                            indnkeyatts=len(attnums), indisunique=True, indisprimary=kind == "PRIMARY KEY",
                            indimmediate=True, indisvalid=True, indisready=True, indislive=True, indkey=attnums,
                            indcollation=[0] * len(attnums), indclass=[0] * len(attnums), indoption=[0] * len(attnums)))
        constraints.append(_row("pg_constraint", oid=constraint_oid, conname=name, connamespace=NS_MAIN,
                                contype="p" if kind == "PRIMARY KEY" else "u", convalidated=True, conrelid=oid_of[table],
                                conindid=index_oid, conislocal=True, connoinherit=True, conkey=attnums))
        definitions.append((index_oid, f'CREATE UNIQUE INDEX {name} ON main.{table} USING btree ({listed})', key_columns))
        definitions.append((constraint_oid, f"{kind} ({listed})", key_columns))
        stats_index = (oid_of[table], index_oid, "main", table, name)
        catalog.define(f"INSERT INTO {DATABASE}.{PG}.pg_stat_user_indexes VALUES (?, ?, ?, ?, ?, 0, 0, 0)", [stats_index])
        catalog.define(f"INSERT INTO {DATABASE}.{PG}.pg_stat_all_indexes VALUES (?, ?, ?, ?, ?, 0, 0, 0)", [stats_index])
    _insert(catalog, "pg_class", classes)
    _insert(catalog, "pg_attribute", attributes)
    _insert(catalog, "pg_attrdef", defaults)
    _insert(catalog, "pg_index", indexes)
    _insert(catalog, "pg_constraint", constraints)
    _insert(catalog, "pg_description", descriptions)
    catalog.define(f"INSERT INTO {DATABASE}.{PG}.dpsql_definitions VALUES (?, ?, ?)", definitions)
    # every counter of every statistics view is zero: none of them is read from the data
    for view in ("pg_stat_user_tables", "pg_stat_all_tables"):
        catalog.define(f"INSERT INTO {DATABASE}.{PG}.{view} (relid, schemaname, relname, seq_scan, seq_tup_read, "
                       f"idx_scan, idx_tup_fetch, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd, n_live_tup, "
                       f"n_dead_tup, n_mod_since_analyze, n_ins_since_vacuum, vacuum_count, autovacuum_count, "
                       f"analyze_count, autoanalyze_count) VALUES (?, ?, ?, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)",
                       stats)
    for view in ("pg_statio_user_tables", "pg_statio_all_tables"):
        catalog.define(f"INSERT INTO {DATABASE}.{PG}.{view} VALUES (?, ?, ?, 0, 0, 0, 0, 0, 0, 0, 0)", stats)
    catalog.define(f"INSERT INTO {DATABASE}.{PG}.pg_stat_database (datid, datname, numbackends, xact_commit, "
                   f"xact_rollback, blks_read, blks_hit, tup_returned, tup_fetched, tup_inserted, tup_updated, "
                   f"tup_deleted, conflicts, temp_files, temp_bytes, deadlocks, checksum_failures) "
                   f"VALUES (?, ?, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)", [(DATABASE_OID, names.database)])


def build(catalog: PublicCatalog, database: str, public: set[str], comments: dict[tuple[str, str], str]) -> Names:
    """Create and fill ``dpsql_catalog`` in the twin (see the module docstring). ``public``: the
    policy's public tables (lower case); ``comments``: (table, column or "") -> description."""
    names = Names(database)
    catalog.define(f"ATTACH ':memory:' AS {DATABASE}")
    for schema in (PG, INFO):
        catalog.define(f"CREATE SCHEMA {DATABASE}.{schema}")
    for name, spec in RELATIONS.items():
        body = ", ".join(f'"{col}" {duck}' for col, duck in columns(spec))
        catalog.define(f"CREATE TABLE {DATABASE}.{PG}.{name} ({body})")
    catalog.define(f"CREATE TABLE {DATABASE}.{PG}.dpsql_definitions (oid BIGINT, definition VARCHAR, columns VARCHAR[])")
    _types(catalog, names)
    _fixed(catalog, names)
    _tables(catalog, names, public, comments)
    catalog.define(f"CREATE TABLE {DATABASE}.{PG}.dpsql_relation_names (name VARCHAR, oid BIGINT)")
    catalog.define(f"INSERT INTO {DATABASE}.{PG}.dpsql_relation_names VALUES (?, ?)", sorted(names.relations.items()))
    pg = f"{DATABASE}.{PG}"
    for name, sql in VIEWS.items():
        catalog.define(f"CREATE VIEW {pg}.{name} AS " + sql.format(pg=pg, owner="dpsql"))
    for sql in macros(pg):
        catalog.define(sql)
    for sql in information_schema(pg, f"{DATABASE}.{INFO}", database):
        catalog.define(sql)
    return names
