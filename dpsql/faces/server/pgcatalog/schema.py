"""The shape of PostgreSQL 15's catalog as dpsql serves it: relations, types, fixed rows.

Each relation of ``pg_catalog`` a client may read is declared here with PostgreSQL 15's own
column names and types (``RELATIONS``, written as the PostgreSQL documentation writes them), so
that a query written for PostgreSQL binds. :mod:`dpsql.faces.server.pgcatalog.build` creates
them in a database of the catalog twin of their own (``dpsql_catalog``, schema ``pg``) and fills
the few that describe the served schema; every other one stays empty. ``TYPES`` are
PostgreSQL's built-in types with their real OIDs, so drivers that map OIDs to their own types
(pgjdbc, asyncpg, psycopg) recognise every column. Nothing here depends on the data.
"""

from __future__ import annotations

#: where the emulated catalog lives in the twin: ``DATABASE.PG.relation``, ``DATABASE.INFO.view``
DATABASE, PG, INFO = "dpsql_catalog", "pg", "info"

#: OIDs of the fixed objects (PostgreSQL's own where it has one)
NS_PG_CATALOG, NS_INFORMATION_SCHEMA, NS_MAIN = 11, 13000, 2200
OWNER_OID, ANALYST_OID, DATABASE_OID, FIRST_RELATION_OID = 10, 16384, 16384, 16385
OWNER = "dpsql"

#: a catalog type -> its DuckDB type (an OID is a UINTEGER, which the wire announces as oid)
_TYPE = {"oid": "UINTEGER", "name": "VARCHAR", "text": "VARCHAR", "char": "VARCHAR", "bool": "BOOLEAN",
         "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "REAL", "float8": "DOUBLE",
         "timestamptz": "TIMESTAMPTZ", "inet": "VARCHAR", "interval": "INTERVAL"}

#: PostgreSQL 15's catalog relations and views that clients read, column by column
RELATIONS: dict[str, str] = {
    "pg_namespace": "oid oid, nspname name, nspowner oid, nspacl text[]",
    "pg_class": (
        "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, "
        "relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, "
        "reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, relnatts int2, "
        "relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, "
        "relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool, relrewrite oid, "
        "relfrozenxid int8, relminmxid int8, relacl text[], reloptions text[], relpartbound text, relhasoids bool"),
    "pg_attribute": (
        "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, attndims int4, "
        "attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, attcompression char, "
        "attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, "
        "attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, attacl text[], "
        "attoptions text[], attfdwoptions text[], attmissingval text"),
    "pg_type": (
        "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, "
        "typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, "
        "typsubscript text, typelem oid, typarray oid, typinput text, typoutput text, typreceive text, "
        "typsend text, typmodin text, typmodout text, typanalyze text, typalign char, typstorage char, "
        "typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, typcollation oid, "
        "typdefaultbin text, typdefault text, typacl text[]"),
    "pg_database": (
        "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, "
        "datallowconn bool, datconnlimit int4, datfrozenxid int8, datminmxid int8, dattablespace oid, "
        "datcollate text, datctype text, daticulocale text, datcollversion text, datacl text[]"),
    "pg_index": (
        "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, "
        "indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, "
        "indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, "
        "indisreplident bool, indkey int2[], indcollation oid[], indclass oid[], indoption int2[], "
        "indexprs text, indpred text"),
    "pg_constraint": (
        "oid oid, conname name, connamespace oid, contype char, condeferrable bool, condeferred bool, "
        "convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid, confrelid oid, "
        "confupdtype char, confdeltype char, confmatchtype char, conislocal bool, coninhcount int4, "
        "connoinherit bool, conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], conffeqop oid[], "
        "confdelsetcols int2[], conexclop oid[], conbin text"),
    "pg_attrdef": "oid oid, adrelid oid, adnum int2, adbin text",
    "pg_description": "objoid oid, classoid oid, objsubid int4, description text",
    "pg_shdescription": "objoid oid, classoid oid, description text",
    "pg_am": "oid oid, amname name, amhandler text, amtype char",
    "pg_proc": (
        "oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, prorows float4, "
        "provariadic oid, prosupport text, prokind char, prosecdef bool, proleakproof bool, proisstrict bool, "
        "proretset bool, provolatile char, proparallel char, pronargs int2, pronargdefaults int2, "
        "prorettype oid, proargtypes oid[], proallargtypes oid[], proargmodes char[], proargnames text[], "
        "proargdefaults text, protrftypes oid[], prosrc text, probin text, prosqlbody text, proconfig text[], "
        "proacl text[]"),
    "pg_roles": (
        "rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, rolcanlogin bool, "
        "rolreplication bool, rolconnlimit int4, rolpassword text, rolvaliduntil timestamptz, rolbypassrls bool, "
        "rolconfig text[], oid oid"),
    "pg_user": (
        "usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, usebypassrls bool, "
        "passwd text, valuntil timestamptz, useconfig text[]"),
    "pg_auth_members": "roleid oid, member oid, grantor oid, admin_option bool",
    "pg_settings": (
        "name text, setting text, unit text, category text, short_desc text, extra_desc text, context text, "
        "vartype text, source text, min_val text, max_val text, enumvals text[], boot_val text, reset_val text, "
        "sourcefile text, sourceline int4, pending_restart bool"),
    "pg_tablespace": "oid oid, spcname name, spcowner oid, spcacl text[], spcoptions text[]",
    "pg_inherits": "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool",
    "pg_trigger": (
        "oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2, tgenabled char, "
        "tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid, tgdeferrable bool, "
        "tginitdeferred bool, tgnargs int2, tgattr int2[], tgargs text, tgqual text, tgoldtable name, "
        "tgnewtable name"),
    "pg_rewrite": "oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char, is_instead bool, "
                  "ev_qual text, ev_action text",
    "pg_policy": "oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles oid[], "
                 "polqual text, polwithcheck text",
    "pg_extension": "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, "
                    "extversion text, extconfig oid[], extcondition text[]",
    "pg_statistic_ext": "oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, "
                        "stxstattarget int4, stxkeys int2[], stxkind char[], stxexprs text",
    "pg_publication": "oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool, pubupdate bool, "
                      "pubdelete bool, pubtruncate bool, pubviaroot bool",
    "pg_publication_rel": "oid oid, prpubid oid, prrelid oid, prqual text, prattrs int2[]",
    "pg_publication_namespace": "oid oid, pnpubid oid, pnnspid oid",
    "pg_subscription": "oid oid, subdbid oid, subskiplsn text, subname name, subowner oid, subenabled bool, "
                       "subbinary bool, substream bool, subtwophasestate char, subdisableonerr bool, "
                       "subconninfo text, subslotname name, subsynccommit text, subpublications text[]",
    "pg_foreign_table": "ftrelid oid, ftserver oid, ftoptions text[]",
    "pg_foreign_server": "oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text, srvversion text, "
                         "srvacl text[], srvoptions text[]",
    "pg_foreign_data_wrapper": "oid oid, fdwname name, fdwowner oid, fdwhandler oid, fdwvalidator oid, "
                               "fdwacl text[], fdwoptions text[]",
    "pg_user_mappings": "umid oid, srvid oid, srvname name, umuser oid, usename name, umoptions text[]",
    "pg_partitioned_table": "partrelid oid, partstrat char, partnatts int2, partdefid oid, partattrs int2[], "
                            "partclass oid[], partcollation oid[], partexprs text",
    "pg_collation": "oid oid, collname name, collnamespace oid, collowner oid, collprovider char, "
                    "collisdeterministic bool, collencoding int4, collcollate text, collctype text, "
                    "colliculocale text, collversion text",
    "pg_range": "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, "
                "rngcanonical text, rngsubdiff text",
    "pg_event_trigger": "oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid, evtenabled char, "
                        "evttags text[]",
    "pg_operator": "oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind char, oprcanmerge bool, "
                   "oprcanhash bool, oprleft oid, oprright oid, oprresult oid, oprcom oid, oprnegate oid, "
                   "oprcode text, oprrest text, oprjoin text",
    "pg_cast": "oid oid, castsource oid, casttarget oid, castfunc oid, castcontext char, castmethod char",
    "pg_conversion": "oid oid, conname name, connamespace oid, conowner oid, conforencoding int4, "
                     "contoencoding int4, conproc text, condefault bool",
    "pg_ts_config": "oid oid, cfgname name, cfgnamespace oid, cfgowner oid, cfgparser oid",
    "pg_ts_dict": "oid oid, dictname name, dictnamespace oid, dictowner oid, dicttemplate oid, dictinitoption text",
    "pg_ts_parser": "oid oid, prsname name, prsnamespace oid, prsstart text, prstoken text, prsend text, "
                    "prsheadline text, prslextype text",
    "pg_ts_template": "oid oid, tmplname name, tmplnamespace oid, tmplinit text, tmpllexize text",
    "pg_language": "oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, lanplcallfoid oid, "
                   "laninline oid, lanvalidator oid, lanacl text[]",
    "pg_opclass": "oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid, opcfamily oid, "
                  "opcintype oid, opcdefault bool, opckeytype oid",
    "pg_opfamily": "oid oid, opfmethod oid, opfname name, opfnamespace oid, opfowner oid",
    "pg_enum": "oid oid, enumtypid oid, enumsortorder float4, enumlabel name",
    "pg_depend": "classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, refobjsubid int4, "
                 "deptype char",
    "pg_shdepend": "dbid oid, classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, deptype char",
    "pg_sequence": "seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, seqmin int8, "
                   "seqcache int8, seqcycle bool",
    "pg_aggregate": "aggfnoid oid, aggkind char, aggnumdirectargs int2, aggtransfn text, aggfinalfn text, "
                    "aggsortop oid, aggtranstype oid, agginitval text",
    "pg_default_acl": "oid oid, defaclrole oid, defaclnamespace oid, defaclobjtype char, defaclacl text[]",
    "pg_init_privs": "objoid oid, classoid oid, objsubid int4, privtype char, initprivs text[]",
    "pg_db_role_setting": "setdatabase oid, setrole oid, setconfig text[]",
    "pg_seclabel": "objoid oid, classoid oid, objsubid int4, provider text, label text",
    "pg_shseclabel": "objoid oid, classoid oid, provider text, label text",
    "pg_largeobject_metadata": "oid oid, lomowner oid, lomacl text[]",
    "pg_transform": "oid oid, trftype oid, trflang oid, trffromsql text, trftosql text",
    # statistics: the statistics views have their columns and no row (docs/server.md); the
    # per-table counters are zero, read from nothing
    "pg_statistic": "starelid oid, staattnum int2, stainherit bool, stanullfrac float4, stawidth int4, "
                    "stadistinct float4",
    "pg_stats": "schemaname name, tablename name, attname name, inherited bool, null_frac float4, "
                "avg_width int4, n_distinct float4, most_common_vals text, most_common_freqs float4[], "
                "histogram_bounds text, correlation float4, most_common_elems text, "
                "most_common_elem_freqs float4[], elem_count_histogram float4[]",
    "pg_stats_ext": "schemaname name, tablename name, statistics_schemaname name, statistics_name name, "
                    "statistics_owner name, attnames name[], exprs text[], kinds char[], n_distinct text, "
                    "dependencies text, most_common_vals text[], most_common_val_nulls bool[], "
                    "most_common_freqs float8[], most_common_base_freqs float8[]",
    "pg_stat_activity": "datid oid, datname name, pid int4, leader_pid int4, usesysid oid, usename name, "
                        "application_name text, client_addr inet, client_hostname text, client_port int4, "
                        "backend_start timestamptz, xact_start timestamptz, query_start timestamptz, "
                        "state_change timestamptz, wait_event_type text, wait_event text, state text, "
                        "backend_xid int8, backend_xmin int8, query_id int8, query text, backend_type text",
    "pg_locks": "locktype text, database oid, relation oid, page int4, tuple int2, virtualxid text, "
                "transactionid int8, classid oid, objid oid, objsubid int2, virtualtransaction text, pid int4, "
                "mode text, granted bool, fastpath bool, waitstart timestamptz",
    "pg_available_extensions": "name name, default_version text, installed_version text, comment text",
    "pg_prepared_xacts": "transaction int8, gid text, prepared timestamptz, owner name, database name",
    "pg_timezone_names": "name text, abbrev text, utc_offset interval, is_dst bool",
}

_STAT_TABLE = ("relid oid, schemaname name, relname name, seq_scan int8, seq_tup_read int8, idx_scan int8, "
               "idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8, n_tup_del int8, n_tup_hot_upd int8, "
               "n_live_tup int8, n_dead_tup int8, n_mod_since_analyze int8, n_ins_since_vacuum int8, "
               "last_vacuum timestamptz, last_autovacuum timestamptz, last_analyze timestamptz, "
               "last_autoanalyze timestamptz, vacuum_count int8, autovacuum_count int8, analyze_count int8, "
               "autoanalyze_count int8")
_STATIO_TABLE = ("relid oid, schemaname name, relname name, heap_blks_read int8, heap_blks_hit int8, "
                 "idx_blks_read int8, idx_blks_hit int8, toast_blks_read int8, toast_blks_hit int8, "
                 "tidx_blks_read int8, tidx_blks_hit int8")
_STAT_INDEX = ("relid oid, indexrelid oid, schemaname name, relname name, indexrelname name, idx_scan int8, "
               "idx_tup_read int8, idx_tup_fetch int8")
for _kind in ("all", "user", "sys"):
    RELATIONS[f"pg_stat_{_kind}_tables"] = _STAT_TABLE
    RELATIONS[f"pg_statio_{_kind}_tables"] = _STATIO_TABLE
    RELATIONS[f"pg_stat_{_kind}_indexes"] = _STAT_INDEX
RELATIONS["pg_stat_database"] = (
    "datid oid, datname name, numbackends int4, xact_commit int8, xact_rollback int8, blks_read int8, "
    "blks_hit int8, tup_returned int8, tup_fetched int8, tup_inserted int8, tup_updated int8, tup_deleted int8, "
    "conflicts int8, temp_files int8, temp_bytes int8, deadlocks int8, checksum_failures int8, "
    "checksum_last_failure timestamptz, blk_read_time float8, blk_write_time float8, session_time float8, "
    "active_time float8, idle_in_transaction_time float8, sessions int8, sessions_abandoned int8, "
    "sessions_fatal int8, sessions_killed int8, stats_reset timestamptz")

#: relations whose rows depend on the connection (the analyst, its settings): the rewrite adds them
PER_CONNECTION = ("pg_settings", "pg_roles", "pg_user")

#: views of ``pg_catalog`` defined over the relations above (their rows follow the served schema)
VIEWS: dict[str, str] = {
    "pg_tables": "SELECT n.nspname AS schemaname, c.relname AS tablename, '{owner}' AS tableowner, "
                 "NULL::VARCHAR AS tablespace, c.relhasindex AS hasindexes, false AS hasrules, "
                 "false AS hastriggers, false AS rowsecurity FROM {pg}.pg_class c "
                 "JOIN {pg}.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p')",
    "pg_views": "SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS viewname, ''::VARCHAR AS viewowner, "
                "''::VARCHAR AS definition WHERE false",
    "pg_matviews": "SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS matviewname, ''::VARCHAR AS matviewowner, "
                   "NULL::VARCHAR AS tablespace, false AS hasindexes, false AS ispopulated, "
                   "''::VARCHAR AS definition WHERE false",
    "pg_sequences": "SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS sequencename, ''::VARCHAR AS sequenceowner, "
                    "0::BIGINT AS data_type, 0::BIGINT AS start_value, 0::BIGINT AS min_value, "
                    "0::BIGINT AS max_value, 0::BIGINT AS increment_by, false AS cycle, 0::BIGINT AS cache_size, "
                    "0::BIGINT AS last_value WHERE false",
    "pg_indexes": "SELECT n.nspname AS schemaname, t.relname AS tablename, i.relname AS indexname, "
                  "NULL::VARCHAR AS tablespace, d.definition AS indexdef FROM {pg}.pg_index x "
                  "JOIN {pg}.pg_class i ON i.oid = x.indexrelid JOIN {pg}.pg_class t ON t.oid = x.indrelid "
                  "JOIN {pg}.pg_namespace n ON n.oid = t.relnamespace JOIN {pg}.dpsql_definitions d ON d.oid = i.oid",
    "pg_policies": "SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS tablename, ''::VARCHAR AS policyname, "
                   "''::VARCHAR AS permissive, NULL::VARCHAR[] AS roles, ''::VARCHAR AS cmd, NULL::VARCHAR AS qual, "
                   "NULL::VARCHAR AS with_check WHERE false",
    "pg_rules": "SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS tablename, ''::VARCHAR AS rulename, "
                "''::VARCHAR AS definition WHERE false",
    "pg_authid": "SELECT oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, "
                 "rolreplication, rolbypassrls, rolconnlimit, NULL::VARCHAR AS rolpassword, rolvaliduntil "
                 "FROM {pg}.pg_roles",
    "pg_shadow": "SELECT usename, usesysid, usecreatedb, usesuper, userepl, usebypassrls, "
                 "NULL::VARCHAR AS passwd, valuntil, useconfig FROM {pg}.pg_user",
}


def columns(spec: str) -> list[tuple[str, str]]:
    """(name, DuckDB type) of each column of a ``RELATIONS`` entry."""
    out = []
    for part in spec.split(","):
        name, kind = part.split()
        array = kind.endswith("[]")
        duck = _TYPE[kind.removesuffix("[]")]
        out.append((name, duck + ("[]" if array else "")))
    return out


#: PostgreSQL's built-in types: (oid, typname, typlen, typbyval, typcategory, array oid, format_type
#: name, typalign, preferred); each gets its array type ``_typname`` (category A) besides
TYPES: tuple[tuple[int, str, int, bool, str, int, str, str, bool], ...] = (
    (16, "bool", 1, True, "B", 1000, "boolean", "c", True),
    (17, "bytea", -1, False, "U", 1001, "bytea", "i", False),
    (18, "char", 1, True, "Z", 1002, '"char"', "c", False),
    (19, "name", 64, False, "S", 1003, "name", "c", False),
    (20, "int8", 8, True, "N", 1016, "bigint", "d", False),
    (21, "int2", 2, True, "N", 1005, "smallint", "s", False),
    (22, "int2vector", -1, False, "A", 1006, "int2vector", "i", False),
    (23, "int4", 4, True, "N", 1007, "integer", "i", False),
    (24, "regproc", 4, True, "N", 1008, "regproc", "i", False),
    (25, "text", -1, False, "S", 1009, "text", "i", True),
    (26, "oid", 4, True, "N", 1028, "oid", "i", True),
    (27, "tid", 6, False, "U", 1010, "tid", "s", False),
    (28, "xid", 4, True, "U", 1011, "xid", "i", False),
    (29, "cid", 4, True, "U", 1012, "cid", "i", False),
    (30, "oidvector", -1, False, "A", 1013, "oidvector", "i", False),
    (114, "json", -1, False, "U", 199, "json", "i", False),
    (142, "xml", -1, False, "U", 143, "xml", "i", False),
    (194, "pg_node_tree", -1, False, "Z", 0, "pg_node_tree", "i", False),
    (600, "point", 16, False, "G", 1017, "point", "d", False),
    (650, "cidr", -1, False, "I", 651, "cidr", "i", False),
    (700, "float4", 4, True, "N", 1021, "real", "i", False),
    (701, "float8", 8, True, "N", 1022, "double precision", "d", True),
    (705, "unknown", -2, False, "X", 0, "unknown", "c", False),
    (790, "money", 8, True, "N", 791, "money", "d", False),
    (829, "macaddr", 6, False, "U", 1040, "macaddr", "i", False),
    (869, "inet", -1, False, "I", 1041, "inet", "i", True),
    (1033, "aclitem", 12, False, "U", 1034, "aclitem", "d", False),
    (1042, "bpchar", -1, False, "S", 1014, "character", "i", False),
    (1043, "varchar", -1, False, "S", 1015, "character varying", "i", False),
    (1082, "date", 4, True, "D", 1182, "date", "i", False),
    (1083, "time", 8, True, "D", 1183, "time without time zone", "d", False),
    (1114, "timestamp", 8, True, "D", 1115, "timestamp without time zone", "d", False),
    (1184, "timestamptz", 8, True, "D", 1185, "timestamp with time zone", "d", True),
    (1186, "interval", 16, False, "T", 1187, "interval", "d", True),
    (1266, "timetz", 12, False, "D", 1270, "time with time zone", "d", False),
    (1560, "bit", -1, False, "V", 1561, "bit", "i", False),
    (1562, "varbit", -1, False, "V", 1563, "bit varying", "i", True),
    (1700, "numeric", -1, False, "N", 1231, "numeric", "i", False),
    (1790, "refcursor", -1, False, "U", 2201, "refcursor", "i", False),
    (2202, "regprocedure", 4, True, "N", 2207, "regprocedure", "i", False),
    (2203, "regoper", 4, True, "N", 2208, "regoper", "i", False),
    (2204, "regoperator", 4, True, "N", 2209, "regoperator", "i", False),
    (2205, "regclass", 4, True, "N", 2210, "regclass", "i", False),
    (2206, "regtype", 4, True, "N", 2211, "regtype", "i", False),
    (2249, "record", -1, False, "P", 2287, "record", "d", False),
    (2275, "cstring", -2, False, "P", 1263, "cstring", "c", False),
    (2276, "any", 4, True, "P", 0, '"any"', "i", False),
    (2277, "anyarray", -1, False, "P", 0, "anyarray", "d", False),
    (2278, "void", 4, True, "P", 0, "void", "i", False),
    (2279, "trigger", 4, True, "P", 0, "trigger", "i", False),
    (2283, "anyelement", 4, True, "P", 0, "anyelement", "i", False),
    (2950, "uuid", 16, False, "U", 2951, "uuid", "c", False),
    (3220, "pg_lsn", 8, True, "U", 3221, "pg_lsn", "d", False),
    (3614, "tsvector", -1, False, "U", 3643, "tsvector", "i", False),
    (3802, "jsonb", -1, False, "U", 3807, "jsonb", "i", False),
    (4089, "regnamespace", 4, True, "N", 4090, "regnamespace", "i", False),
    (4096, "regrole", 4, True, "N", 4097, "regrole", "i", False),
)

#: names PostgreSQL also accepts for a type (``'integer'::regtype``, ``x::double precision``)
TYPE_ALIASES = {"boolean": "bool", "smallint": "int2", "integer": "int4", "int": "int4", "bigint": "int8",
                "real": "float4", "double precision": "float8", "float": "float8", "decimal": "numeric",
                "character varying": "varchar", "character": "bpchar", "char": "bpchar",
                "timestamp without time zone": "timestamp", "timestamp with time zone": "timestamptz",
                "time without time zone": "time", "time with time zone": "timetz", "bit varying": "varbit",
                '"char"': "char"}

#: fixed rows: namespaces, access methods, tablespaces, collations, languages
NAMESPACES = ((NS_PG_CATALOG, "pg_catalog"), (NS_INFORMATION_SCHEMA, "information_schema"), (NS_MAIN, "main"))
ACCESS_METHODS = ((2, "heap", "heap_tableam_handler", "t"), (403, "btree", "bthandler", "i"))
TABLESPACES = ((1663, "pg_default"), (1664, "pg_global"))
COLLATIONS = ((100, "default", "d", None), (950, "C", "c", "C"), (951, "POSIX", "c", "POSIX"))
LANGUAGES = ((12, "internal", False), (13, "c", False), (14, "sql", True))
