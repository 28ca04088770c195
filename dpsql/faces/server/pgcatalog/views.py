"""PostgreSQL's catalog functions and ``information_schema`` as DuckDB macros and views.

The functions clients call in catalog queries (``format_type``, ``pg_get_indexdef``,
``obj_description``, ``pg_table_is_visible``, ``has_table_privilege``, the size functions, ...)
are macros in ``dpsql_catalog.pg`` reading only the emulated catalog; the rewrite
(:mod:`dpsql.faces.server.pgcatalog.catalog`) points calls at them. Sizes are 0 and statistics empty by
definition: none of them reads a table, so none can say anything about the data. The
``information_schema`` views are defined over the emulated ``pg_catalog``, as PostgreSQL
defines its own, so both always agree.
"""

from __future__ import annotations

_TRUE = ("pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible", "pg_collation_is_visible",
         "pg_conversion_is_visible", "pg_operator_is_visible", "pg_opclass_is_visible", "pg_opfamily_is_visible",
         "pg_ts_config_is_visible", "pg_ts_dict_is_visible", "pg_ts_parser_is_visible", "pg_ts_template_is_visible",
         "pg_statistics_obj_is_visible")
_NULL_1 = ("pg_get_viewdef", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_functiondef", "pg_get_function_result",
           "pg_get_partkeydef", "pg_get_statisticsobjdef", "pg_get_statisticsobjdef_columns",
           "pg_get_statisticsobjdef_expressions", "pg_get_partition_constraintdef", "shobj_description",
           "pg_get_function_sqlbody")
_EMPTY_1 = ("pg_get_function_arguments", "pg_get_function_identity_arguments", "pg_tablespace_location")
#: sizes of relations and databases: always 0, read from nothing (docs/server.md)
_ZERO_1 = ("pg_relation_size", "pg_total_relation_size", "pg_table_size", "pg_indexes_size", "pg_database_size",
           "pg_tablespace_size")
_PRIVILEGES = ("has_table_privilege", "has_schema_privilege", "has_database_privilege", "has_column_privilege",
               "has_any_column_privilege", "has_function_privilege", "has_sequence_privilege",
               "has_type_privilege", "has_tablespace_privilege", "has_language_privilege",
               "has_foreign_data_wrapper_privilege", "has_server_privilege")
#: what an analyst may do: read (SELECT, USAGE, CONNECT, EXECUTE); nothing else
_GRANTED = ("CASE WHEN upper(p) SIMILAR TO '.*(SELECT|USAGE|CONNECT|EXECUTE|REFERENCES).*' "
            "AND upper(p) NOT SIMILAR TO '.*(INSERT|UPDATE|DELETE|TRUNCATE|TRIGGER|CREATE|TEMP).*' "
            "THEN true ELSE false END")


def macros(pg: str) -> list[str]:
    """The macros of ``pg_catalog`` functions, in schema ``pg`` (``dpsql_catalog.pg``)."""
    out = [f"CREATE MACRO {pg}.{name}(a) AS true, (a, b) AS true" for name in _TRUE]
    out += [f"CREATE MACRO {pg}.{name}(a) AS NULL::VARCHAR, (a, b) AS NULL::VARCHAR, (a, b, c) AS NULL::VARCHAR"
            for name in _NULL_1]
    out += [f"CREATE MACRO {pg}.{name}(a) AS '', (a, b) AS ''" for name in _EMPTY_1]
    out += [f"CREATE MACRO {pg}.{name}(a) AS 0::BIGINT, (a, b) AS 0::BIGINT" for name in _ZERO_1]
    out += [f"CREATE MACRO {pg}.{name}(a, p) AS {_GRANTED}, (u, a, p) AS {_GRANTED}" for name in _PRIVILEGES]
    out += [
        f"CREATE MACRO {pg}.pg_has_role(a, b) AS true, (u, a, b) AS true",
        f"CREATE MACRO {pg}.pg_get_userbyid(x, analyst) AS CASE WHEN x = 10 THEN 'dpsql' "
        f"WHEN x = 16384 THEN analyst ELSE 'unknown (OID=' || x || ')' END",
        f"CREATE MACRO {pg}.pg_encoding_to_char(x) AS CASE WHEN x = 6 THEN 'UTF8' WHEN x = 0 THEN 'SQL_ASCII' ELSE '' END",
        f"CREATE MACRO {pg}.getdatabaseencoding() AS 'UTF8'",
        f"CREATE MACRO {pg}.pg_char_to_encoding(x) AS CASE WHEN upper(x) IN ('UTF8', 'UTF-8', 'UNICODE') THEN 6 "
        f"WHEN upper(x) = 'SQL_ASCII' THEN 0 ELSE -1 END",
        f"CREATE MACRO {pg}.format_type(t, m) AS (SELECT CASE "
        f"WHEN m IS NULL OR m < 0 THEN x.display "
        f"WHEN x.typname = 'numeric' THEN 'numeric(' || ((m - 4) // 65536) || ',' || ((m - 4) % 65536) || ')' "
        f"WHEN x.typname IN ('varchar', 'bpchar') THEN x.display || '(' || (m - 4) || ')' "
        f"WHEN x.typname IN ('timestamp', 'timestamptz', 'time', 'timetz') "
        f"THEN replace(x.display, ' ', '(' || m || ') ') "
        f"ELSE x.display END FROM {pg}.dpsql_type_names x WHERE x.oid = t)",
        f"CREATE MACRO {pg}.pg_get_expr(e, r) AS e, (e, r, p) AS e",
        f"CREATE MACRO {pg}.pg_get_indexdef(x) AS (SELECT definition FROM {pg}.dpsql_definitions WHERE oid = x), "
        f"(x, c, p) AS (SELECT CASE WHEN c = 0 THEN definition ELSE columns[c] END "
        f"FROM {pg}.dpsql_definitions WHERE oid = x)",
        f"CREATE MACRO {pg}.pg_get_constraintdef(x) AS (SELECT definition FROM {pg}.dpsql_definitions WHERE oid = x), "
        f"(x, p) AS (SELECT definition FROM {pg}.dpsql_definitions WHERE oid = x)",
        f"CREATE MACRO {pg}.obj_description(x) AS (SELECT max(description) FROM {pg}.pg_description "
        f"WHERE objoid = x AND objsubid = 0), (x, c) AS (SELECT max(description) FROM {pg}.pg_description "
        f"WHERE objoid = x AND objsubid = 0)",
        f"CREATE MACRO {pg}.col_description(x, n) AS (SELECT max(description) FROM {pg}.pg_description "
        f"WHERE objoid = x AND objsubid = n)",
        f"CREATE MACRO {pg}.pg_relation_is_publishable(x) AS false",
        f"CREATE MACRO {pg}.pg_is_in_recovery() AS false",
        f"CREATE MACRO {pg}.txid_current() AS 1::BIGINT",
        f"CREATE MACRO {pg}.pg_current_xact_id() AS 1::BIGINT",
        f"CREATE MACRO {pg}.pg_get_serial_sequence(t, c) AS NULL::VARCHAR",
        f"CREATE MACRO {pg}.array_lower(a, d) AS CASE WHEN len(a) > 0 THEN 1 END",
        f"CREATE MACRO {pg}.array_upper(a, d) AS CASE WHEN len(a) > 0 THEN len(a) END",
        f"CREATE MACRO {pg}.array_ndims(a) AS CASE WHEN len(a) > 0 THEN 1 END",
        f"CREATE MACRO {pg}.quote_ident(x) AS CASE WHEN regexp_full_match(x, '[a-z_][a-z0-9_$]*') THEN x "
        f"ELSE '\"' || replace(x, '\"', '\"\"') || '\"' END",
        f"CREATE MACRO {pg}.quote_literal(x) AS '''' || replace(x, '''', '''''') || ''''",
        f"CREATE MACRO {pg}.current_setting(x, settings) AS map_extract(settings, lower(x))[1], "
        f"(x, m, settings) AS map_extract(settings, lower(x))[1]",
        f"CREATE MACRO {pg}.regclass_out(x) AS coalesce((SELECT relname FROM {pg}.pg_class WHERE oid = x), x::VARCHAR)",
        f"CREATE MACRO {pg}.regtype_out(x) AS coalesce({pg}.format_type(x, NULL), x::VARCHAR)",
        f"CREATE MACRO {pg}.regproc_out(x) AS coalesce((SELECT proname FROM {pg}.pg_proc WHERE oid = x), "
        f"CASE WHEN x = 0 THEN '-' ELSE x::VARCHAR END)",
        f"CREATE MACRO {pg}.regnamespace_out(x) AS coalesce((SELECT nspname FROM {pg}.pg_namespace WHERE oid = x), "
        f"x::VARCHAR)",
        f"CREATE MACRO {pg}.regrole_out(x, analyst) AS {pg}.pg_get_userbyid(x, analyst)",
        f"CREATE MACRO {pg}.to_regclass(x) AS (SELECT min(oid) FROM {pg}.dpsql_relation_names "
        f"WHERE name = lower(replace(x, '\"', '')))",
        f"CREATE MACRO {pg}.to_regtype(x) AS (SELECT min(oid) FROM {pg}.dpsql_type_names WHERE typname = x OR display = x)",
        f"CREATE MACRO {pg}.to_regnamespace(x) AS (SELECT min(oid) FROM {pg}.pg_namespace WHERE nspname = x)",
        f"CREATE MACRO {pg}.to_regproc(x) AS NULL::BIGINT",
        f"CREATE MACRO {pg}.regclass_in(x) AS CASE WHEN regexp_full_match(x::VARCHAR, '[0-9]+') THEN x::UINTEGER "
        f"ELSE {pg}.to_regclass(x::VARCHAR) END",
        f"CREATE MACRO {pg}.regtype_in(x) AS CASE WHEN regexp_full_match(x::VARCHAR, '[0-9]+') THEN x::UINTEGER "
        f"ELSE {pg}.to_regtype(x::VARCHAR) END",
        f"CREATE MACRO {pg}.regnamespace_in(x) AS CASE WHEN regexp_full_match(x::VARCHAR, '[0-9]+') THEN x::UINTEGER "
        f"ELSE {pg}.to_regnamespace(x::VARCHAR) END",
        f"CREATE MACRO {pg}.pg_get_keywords() AS TABLE SELECT keyword_name AS word, "
        f"CASE keyword_category WHEN 'reserved' THEN 'R' WHEN 'unreserved' THEN 'U' "
        f"WHEN 'type_function' THEN 'T' ELSE 'C' END AS catcode, true AS barelabel, "
        f"keyword_category AS catdesc, 'can be bare label' AS baredesc FROM duckdb_keywords()",
    ]
    return out


def information_schema(pg: str, info: str, database: str) -> list[str]:
    """``information_schema`` views over the emulated ``pg_catalog``, in schema ``info``."""
    db = "'" + database.replace("'", "''") + "'"
    rel = (f"FROM {pg}.pg_class c JOIN {pg}.pg_namespace n ON n.oid = c.relnamespace "
           f"WHERE c.relkind IN ('r', 'v', 'p', 'f', 'm')")
    kcu = (f"SELECT {db} AS constraint_catalog, n.nspname AS constraint_schema, k.conname AS constraint_name, "
           f"{db} AS table_catalog, n.nspname AS table_schema, c.relname AS table_name, a.attname AS column_name, "
           f"k.ord::INTEGER AS ordinal_position, NULL::INTEGER AS position_in_unique_constraint "
           f"FROM (SELECT *, unnest(conkey) AS attnum, generate_subscripts(conkey, 1) AS ord FROM {pg}.pg_constraint "
           f"WHERE contype IN ('p', 'u', 'f')) k JOIN {pg}.pg_class c ON c.oid = k.conrelid "
           f"JOIN {pg}.pg_namespace n ON n.oid = c.relnamespace "
           f"JOIN {pg}.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.attnum")
    empty = {
        "views": "table_catalog, table_schema, table_name, view_definition, check_option, is_updatable, "
                 "is_insertable_into, is_trigger_updatable, is_trigger_deletable, is_trigger_insertable_into",
        "referential_constraints": "constraint_catalog, constraint_schema, constraint_name, "
                                   "unique_constraint_catalog, unique_constraint_schema, unique_constraint_name, "
                                   "match_option, update_rule, delete_rule",
        "check_constraints": "constraint_catalog, constraint_schema, constraint_name, check_clause",
        "routines": "specific_catalog, specific_schema, specific_name, routine_catalog, routine_schema, "
                    "routine_name, routine_type, data_type, type_udt_catalog, type_udt_schema, type_udt_name, "
                    "routine_body, routine_definition, external_name, external_language, parameter_style, "
                    "is_deterministic, sql_data_access, is_null_call, security_type",
        "parameters": "specific_catalog, specific_schema, specific_name, ordinal_position, parameter_mode, "
                      "is_result, as_locator, parameter_name, data_type, udt_catalog, udt_schema, udt_name, "
                      "parameter_default",
        "sequences": "sequence_catalog, sequence_schema, sequence_name, data_type, numeric_precision, "
                     "numeric_precision_radix, numeric_scale, start_value, minimum_value, maximum_value, increment, "
                     "cycle_option",
        "triggers": "trigger_catalog, trigger_schema, trigger_name, event_manipulation, event_object_catalog, "
                    "event_object_schema, event_object_table, action_order, action_condition, action_statement, "
                    "action_orientation, action_timing",
        "domains": "domain_catalog, domain_schema, domain_name, data_type, character_maximum_length, "
                   "numeric_precision, numeric_scale, domain_default",
        "user_defined_types": "user_defined_type_catalog, user_defined_type_schema, user_defined_type_name, "
                              "user_defined_type_category",
        "element_types": "object_catalog, object_schema, object_name, object_type, collection_type_identifier, "
                         "data_type",
    }
    views = {
        "tables": f"SELECT {db} AS table_catalog, n.nspname AS table_schema, c.relname AS table_name, "
                  f"CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'f' THEN 'FOREIGN' ELSE 'BASE TABLE' END AS table_type, "
                  f"NULL::VARCHAR AS self_referencing_column_name, NULL::VARCHAR AS reference_generation, "
                  f"NULL::VARCHAR AS user_defined_type_catalog, NULL::VARCHAR AS user_defined_type_schema, "
                  f"NULL::VARCHAR AS user_defined_type_name, 'NO' AS is_insertable_into, 'NO' AS is_typed, "
                  f"NULL::VARCHAR AS commit_action {rel}",
        "columns": f"SELECT {db} AS table_catalog, n.nspname AS table_schema, c.relname AS table_name, "
                   f"a.attname AS column_name, a.attnum::INTEGER AS ordinal_position, d.adbin AS column_default, "
                   f"CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS is_nullable, "
                   f"CASE WHEN t.typcategory = 'A' THEN 'ARRAY' ELSE regexp_replace(t.display, '^\"char\"$', 'char') "
                   f"END AS data_type, NULL::INTEGER AS character_maximum_length, "
                   f"CASE WHEN t.typname IN ('text', 'varchar') THEN 1073741824 END AS character_octet_length, "
                   f"CASE t.typname WHEN 'int2' THEN 16 WHEN 'int4' THEN 32 WHEN 'int8' THEN 64 WHEN 'float4' THEN 24 "
                   f"WHEN 'float8' THEN 53 WHEN 'numeric' THEN CASE WHEN a.atttypmod > 0 THEN (a.atttypmod - 4) // 65536 "
                   f"END END AS numeric_precision, CASE WHEN t.typname IN ('int2', 'int4', 'int8', 'float4', 'float8') "
                   f"THEN 2 WHEN t.typname = 'numeric' THEN 10 END AS numeric_precision_radix, "
                   f"CASE WHEN t.typname IN ('int2', 'int4', 'int8') THEN 0 WHEN t.typname = 'numeric' AND "
                   f"a.atttypmod > 0 THEN (a.atttypmod - 4) % 65536 END AS numeric_scale, "
                   f"CASE WHEN t.typname IN ('date', 'time', 'timetz', 'timestamp', 'timestamptz') THEN "
                   f"CASE WHEN t.typname = 'date' THEN 0 ELSE 6 END END AS datetime_precision, "
                   f"NULL::VARCHAR AS interval_type, NULL::INTEGER AS interval_precision, "
                   f"NULL::VARCHAR AS character_set_catalog, NULL::VARCHAR AS character_set_schema, "
                   f"NULL::VARCHAR AS character_set_name, NULL::VARCHAR AS collation_catalog, "
                   f"NULL::VARCHAR AS collation_schema, NULL::VARCHAR AS collation_name, "
                   f"NULL::VARCHAR AS domain_catalog, NULL::VARCHAR AS domain_schema, NULL::VARCHAR AS domain_name, "
                   f"{db} AS udt_catalog, 'pg_catalog' AS udt_schema, t.typname AS udt_name, "
                   f"NULL::VARCHAR AS scope_catalog, NULL::VARCHAR AS scope_schema, NULL::VARCHAR AS scope_name, "
                   f"NULL::INTEGER AS maximum_cardinality, a.attnum::VARCHAR AS dtd_identifier, "
                   f"'NO' AS is_self_referencing, 'NO' AS is_identity, NULL::VARCHAR AS identity_generation, "
                   f"NULL::VARCHAR AS identity_start, NULL::VARCHAR AS identity_increment, "
                   f"NULL::VARCHAR AS identity_maximum, NULL::VARCHAR AS identity_minimum, "
                   f"NULL::VARCHAR AS identity_cycle, 'NEVER' AS is_generated, NULL::VARCHAR AS generation_expression, "
                   f"'NO' AS is_updatable FROM {pg}.pg_attribute a JOIN {pg}.pg_class c ON c.oid = a.attrelid "
                   f"JOIN {pg}.pg_namespace n ON n.oid = c.relnamespace "
                   f"JOIN {pg}.dpsql_type_names t ON t.oid = a.atttypid "
                   f"LEFT JOIN {pg}.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                   f"WHERE a.attnum > 0 AND NOT a.attisdropped",
        "schemata": f"SELECT {db} AS catalog_name, nspname AS schema_name, 'dpsql' AS schema_owner, "
                    f"NULL::VARCHAR AS default_character_set_catalog, NULL::VARCHAR AS default_character_set_schema, "
                    f"NULL::VARCHAR AS default_character_set_name, NULL::VARCHAR AS sql_path FROM {pg}.pg_namespace",
        "table_constraints": f"SELECT {db} AS constraint_catalog, n.nspname AS constraint_schema, "
                             f"k.conname AS constraint_name, {db} AS table_catalog, n.nspname AS table_schema, "
                             f"c.relname AS table_name, CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' "
                             f"WHEN 'u' THEN 'UNIQUE' WHEN 'f' THEN 'FOREIGN KEY' ELSE 'CHECK' END AS constraint_type, "
                             f"'NO' AS is_deferrable, 'NO' AS initially_deferred, 'YES' AS enforced, "
                             f"'YES' AS nulls_distinct FROM {pg}.pg_constraint k "
                             f"JOIN {pg}.pg_class c ON c.oid = k.conrelid JOIN {pg}.pg_namespace n ON n.oid = c.relnamespace",
        "key_column_usage": kcu,
        "constraint_column_usage": f"SELECT table_catalog, table_schema, table_name, column_name, constraint_catalog, "
                                   f"constraint_schema, constraint_name FROM ({kcu})",
        "table_privileges": f"SELECT 'dpsql' AS grantor, 'PUBLIC' AS grantee, {db} AS table_catalog, "
                            f"n.nspname AS table_schema, c.relname AS table_name, 'SELECT' AS privilege_type, "
                            f"'NO' AS is_grantable, 'YES' AS with_hierarchy {rel}",
        "character_sets": f"SELECT NULL::VARCHAR AS character_set_catalog, NULL::VARCHAR AS character_set_schema, "
                          f"'UTF8' AS character_set_name, 'UCS' AS character_repertoire, 'UTF8' AS form_of_use, "
                          f"{db} AS default_collate_catalog, 'pg_catalog' AS default_collate_schema, "
                          f"'C' AS default_collate_name",
    }
    for name, cols in empty.items():
        views[name] = "SELECT " + ", ".join(f"NULL::VARCHAR AS {c.strip()}" for c in cols.split(",")) + " WHERE false"
    out = [f"CREATE VIEW {info}.{name} AS {sql}" for name, sql in views.items()]
    out.append(f"CREATE MACRO {info}._pg_expandarray(a) AS "
               f"unnest([{{'x': a[i], 'n': i}} for i in range(1, len(a) + 1)])")
    return out


#: ``information_schema`` relations dpsql defines (anything else there is DuckDB's own, over the twin)
INFORMATION_SCHEMA = ("tables", "columns", "schemata", "table_constraints", "key_column_usage",
                      "constraint_column_usage", "table_privileges", "character_sets", "views",
                      "referential_constraints", "check_constraints", "routines", "parameters", "sequences",
                      "triggers", "domains", "user_defined_types", "element_types")

#: functions the rewrite points at ``dpsql_catalog.pg``
FUNCTIONS = frozenset((
    *_TRUE, *_NULL_1, *_EMPTY_1, *_ZERO_1, *_PRIVILEGES,
    "pg_has_role", "pg_encoding_to_char", "pg_char_to_encoding", "getdatabaseencoding", "format_type",
    "pg_get_expr", "pg_get_indexdef", "pg_get_constraintdef", "obj_description", "col_description",
    "pg_relation_is_publishable", "pg_is_in_recovery", "txid_current", "pg_current_xact_id",
    "pg_get_serial_sequence", "array_lower", "array_upper", "array_ndims", "quote_ident", "quote_literal",
    "to_regclass", "to_regtype", "to_regnamespace", "to_regproc", "pg_get_keywords",
))
