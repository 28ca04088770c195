"""``dpsql init DATA``: your own data in minutes. A CSV file, a Parquet file or folder is read into
a DuckDB file dpsql owns (a DuckDB file is used as it is), and a starter policy is drafted from
its schema (:mod:`dpsql.faces.policy_draft`), checked by opening it as an analyst would, and only
then left in place: on any failure nothing new stays on disk.

The privacy unit is asked for (or given with ``--unit``); a column with no NULL and no repeated
value, named like an identifier, is offered as the default. Columns declared public
(``--public a,b``) get their keyset from the data; every other key is private.
"""

from __future__ import annotations

import argparse
import re
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from dpsql.backends.files import kind_of
from dpsql.errors import DatabaseFileError, PolicyFileError
from dpsql.faces.policy_draft import DRAFT_DELTA, DRAFT_RHO, DRAFT_SELECTION_EPSILON, DRAFT_TOTAL_RHO, TableDraft, is_date, is_integer, is_numeric, is_text, policy_text
from dpsql.policy.loader import default_policy_path

#: a keyset read from a public column may hold at most this many values
MAX_PUBLIC_VALUES = 10_000
_ID_NAME = re.compile(r"(^|_)(id|key|uuid|number|no)$", re.IGNORECASE)


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="make a database and a starter policy from a CSV, Parquet or DuckDB file",
                       description="Reads DATA (a CSV file, a Parquet file or folder, or a DuckDB file) into a DuckDB "
                                   "file dpsql owns and drafts its policy, every line commented for review. "
                                   "Example: dpsql init customers.csv --unit id --public region")
    p.add_argument("data", help="a .csv file, a .parquet file or folder of them, or a .duckdb file")
    p.add_argument("--unit", metavar="COLUMN", help="the privacy-unit column (one row per person, firm...); "
                                                    "asked when standard input is a terminal")
    p.add_argument("--public", metavar="COLS", default="",
                   help="comma-separated columns whose values are public: their keysets are read from the data")
    p.add_argument("--threshold", metavar="COL=T", action="append", default=[],
                   help="split threshold of a measure (repeatable); without it the draft writes a placeholder")
    p.add_argument("--table", help="table name for imported data (default: the file's name); for a DuckDB file, "
                                   "the one table to draft (default: every table with the unit column)")
    p.add_argument("--db", metavar="FILE", help="the DuckDB file to write (default: DATA with .duckdb)")
    p.add_argument("--policy", metavar="FILE", help="the policy to write (default: <db>.policy.toml beside it)")
    p.add_argument("--max-groups", metavar="K", type=int,
                   help="a unit may have many rows (visits, payments): each query keeps at most K of a unit's groups "
                        "(docs/policy.md, \"Many rows per unit\"); without it the unit must be one row")
    p.add_argument("--row-threshold", metavar="R", type=int,
                   help="with --max-groups: a unit's rows in a group are split at R when counted "
                        "(default: a placeholder, 10)")
    p.add_argument("--yes", action="store_true", help="accept the guessed unit column without asking")
    p.add_argument("--force", action="store_true", help="overwrite the database and policy if they exist")


def _table_name(path: Path) -> str:
    stem = path.name.split(".")[0] if path.is_file() else path.name
    name = re.sub(r"[^0-9A-Za-z_]", "_", stem).strip("_").lower() or "data"
    return name if not name[0].isdigit() else f"t_{name}"


def _thresholds(items: list[str]) -> dict[str, Decimal]:
    out = {}
    for item in items:
        col, _, value = item.partition("=")
        try:
            t = Decimal(value)
        except InvalidOperation:
            t = Decimal(0)
        if not col or t <= 0:
            raise PolicyFileError(f"--threshold {item!r}: write COLUMN=T with T a positive number, e.g. amount=500")
        out[col.strip()] = t
    return out


def _ask(question: str, default: str | None) -> str:
    suffix = f" [{default}]" if default else ""
    print(f"{question}{suffix}: ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip()
    return answer or (default or "")


def _unit(args: argparse.Namespace, ins: Any, table: str, columns: list[tuple[str, str]]) -> tuple[str, str]:
    """(the unit column, how it was chosen)."""
    names = [c for c, _ in columns]
    if args.unit:
        if args.unit not in names:
            raise PolicyFileError(f"--unit {args.unit}: table {table} has no such column",
                                  hint=f"its columns: {', '.join(names)}")
        return args.unit, "given with --unit"
    candidates = [c for c, t in columns if _ID_NAME.search(c) and (is_integer(t) or is_text(t))]
    guess = next((c for c in candidates if ins.identifies_rows(table, c)), None)
    interactive = sys.stdin.isatty() and not args.yes
    if interactive:
        print(f"Table {table}: columns {', '.join(names)}", file=sys.stderr)
        answer = _ask("Which column identifies the privacy unit (one row per person, firm, device)?", guess)
        if answer not in names:
            raise PolicyFileError(f"{answer or 'no column'!r} is not a column of {table}",
                                  hint=f"its columns: {', '.join(names)}")
        return answer, "chosen at the prompt"
    if guess is not None and args.yes:
        return guess, "guessed (no NULL, no repeated value) and accepted with --yes"
    hint = (f"dpsql guesses {guess} (no NULL, no repeated value): pass --unit {guess}, or --yes to accept it."
            if guess else f"its columns: {', '.join(names)}")
    raise PolicyFileError(f"which column of {table} identifies the privacy unit? give --unit COLUMN", hint=hint)


def init(args: argparse.Namespace) -> int:
    source = Path(args.data).expanduser()
    if not source.exists():
        raise DatabaseFileError(f"{source} does not exist", hint="give a CSV file, a Parquet file or folder, or a DuckDB file.")
    kind = kind_of(source)
    imported = kind != "duckdb"
    database = Path(args.db) if args.db else (source if not imported else source.with_name(_table_name(source) + ".duckdb"))
    policy = Path(args.policy) if args.policy else default_policy_path(database)
    for path in ([database] if imported else []) + [policy]:
        if path.exists() and not args.force:
            raise PolicyFileError(f"{path} exists already; dpsql init does not overwrite it",
                                  hint="pass --force to replace it, or --db / --policy to write elsewhere.")
    public = [c.strip() for c in args.public.split(",") if c.strip()]
    thresholds = _thresholds(args.threshold)
    ledger = policy.with_name(policy.stem + ".ledger.sqlite")  # made by the check below, if new
    written: list[Path] = [] if ledger.exists() else [ledger]
    try:
        if imported:
            table = args.table or _table_name(source)
            show = sys.stderr.isatty()
            print(f"reading {source} ({kind}) into {database} ...", file=sys.stderr, flush=True)
            from dpsql.backends.duckdb_files import import_table

            rows = import_table(source, database, table, progress=show, public=public)
            written.append(database)
            print(f"  table {table}: {rows:,} rows", file=sys.stderr)
        drafts = _drafts(args, database, public, thresholds)
        text = policy_text(database.name, args.data, drafts)
        partial = policy.with_name(f".{policy.name}.partial")
        partial.write_text(text + "\n", encoding="utf-8")
        partial.replace(policy)
        written.append(policy)
        _check(database, policy, drafts)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    _tell(database, policy, drafts, thresholds)
    return 0


def _drafts(args: argparse.Namespace, database: Path, public: list[str], thresholds: dict[str, Decimal]
            ) -> list[TableDraft]:
    from dpsql.backends.duckdb_files import Inspector  # duckdb: only when the command runs

    ins = Inspector(database)
    try:
        tables = [args.table] if args.table else ins.tables()
        if not tables or (args.table and args.table not in ins.tables()):
            raise DatabaseFileError(f"{database} has no table {args.table or ''}".strip(),
                                    hint=f"its tables: {', '.join(ins.tables()) or 'none'}")
        drafts = []
        for table in tables:
            columns = ins.columns(table)
            if args.unit and len(tables) > 1 and args.unit not in {c for c, _ in columns}:
                continue  # a DuckDB file's other tables (reference data, say) are left out
            unit, note = _unit(args, ins, table, columns)
            rows, units, no_unit = ins.unit_rows(table, unit)
            many = args.max_groups is not None or rows != units
            if args.row_threshold is not None and not many:
                raise PolicyFileError(f"--row-threshold applies to many rows per unit, and {table}.{unit} is one row "
                                      "per unit", hint="leave it out, or pass --max-groups K for a table whose unit repeats.")
            if many and args.max_groups is None:
                _many_rows_note(table, unit, rows, units, no_unit)
            draft = TableDraft(table, unit, note, columns, thresholds={c: t for c, t in thresholds.items()},
                               max_groups=args.max_groups, row_threshold=args.row_threshold, many_rows=many,
                               rows=rows, profile=ins.profile(table, [c for c, t in columns
                                                                      if c != unit and is_numeric(t)]))
            for col in public:
                typ = dict(columns).get(col)
                if typ is None:
                    continue
                if is_date(typ):
                    days = ins.day_range(table, col)
                    if days is None:
                        raise PolicyFileError(f"--public {col}: the column holds no date to take a range from")
                    draft.ranges[col] = days
                    continue
                if not (is_text(typ) or is_integer(typ)):
                    raise PolicyFileError(f"--public {col}: a public keyset is text, whole numbers or dates; {col} is {typ}")
                values = ins.values(table, col, MAX_PUBLIC_VALUES)
                if values is None:
                    raise PolicyFileError(f"--public {col}: more than {MAX_PUBLIC_VALUES:,} distinct values",
                                          hint="a public keyset lists every value; leave the column private "
                                               "(GROUP BY it goes through partition selection).")
                draft.public[col] = values
            drafts.append(draft)
        unknown = [c for c in public if not any(c in dict(d.columns) for d in drafts)]
        unknown += [c for c in thresholds if not any(c in dict(d.measures()) for d in drafts)]
        if unknown:
            raise PolicyFileError(f"no such column (or not a measure, for --threshold): {', '.join(unknown)}")
        if not drafts:
            raise PolicyFileError(f"no table of {database} has the column {args.unit}")
        return drafts
    finally:
        ins.close()


def _many_rows_note(table: str, unit: str, rows: int, units: int, no_unit: int) -> None:
    """Say, on the owner's terminal only, that the unit repeats and what the draft does about it."""
    what = "repeats" if rows - no_unit > units else "has NULLs (no unit repeats)"
    print(f"  {table}.{unit} {what}: {rows:,} rows of {units:,} units"
          + (f" ({no_unit:,} rows have no unit: they are left out of every answer)" if no_unit else "")
          + ".\n  Drafted as many rows per unit: max_groups and row_threshold are placeholders to review "
          "(dpsql advise --write sets them from DP quantiles). If each row should be its own unit, the column is "
          "not the privacy unit: pass the one that identifies a person (firm, device).", file=sys.stderr)


def _check(database: Path, policy: Path, drafts: list[TableDraft]) -> None:
    """Open the pair as an analyst would and explain a first query (free): the policy loads, the
    unit column is one row per unit, and a query over it plans."""
    from dpsql.faces.dbapi import connect

    with connect(database, policy) as con:
        for draft in drafts:
            con.session.check_unit_column(draft.name)
        con.explain(first_query(drafts[0]))


def first_query(t: TableDraft) -> str:
    keys = t.keys()
    measures = t.measures()
    select = ["COUNT(*) AS n"] + ([f'SUM("{measures[0][0]}") AS total'] if measures else [])
    if keys:
        key = f'"{keys[0][0]}"'
        return f"SELECT {key}, {', '.join(select)} FROM \"{t.name}\" GROUP BY {key}"
    return f"SELECT {', '.join(select)} FROM \"{t.name}\""


def budget_meaning(many_rows: bool) -> str:
    """The drafted budget in (ε, δ)-DP terms (the tight conversion of ρ-zCDP, paper 004 Lemma 4)."""
    from dpsql.privacy.accounting import epsilon_tight

    who = "a unit (with all its rows)" if many_rows else "a unit"
    per, total = (epsilon_tight(DRAFT_RHO, DRAFT_DELTA), epsilon_tight(DRAFT_TOTAL_RHO, DRAFT_DELTA))
    return (f"The drafted budget: each query rho={DRAFT_RHO:g}, that is ({per:.3g}, {DRAFT_DELTA:g})-DP for {who} whose "
            f"values no threshold splits; an analyst's total rho={DRAFT_TOTAL_RHO:g} ({DRAFT_TOTAL_RHO / DRAFT_RHO:.0f} such "
            f"queries), that is ({total:.3g}, {DRAFT_DELTA:g})-DP over every answer of a release period, plus the delta "
            f"of partition selections (total_delta; each GROUP BY of a private key also costs "
            f"{DRAFT_SELECTION_EPSILON ** 2 / 2:g} for its selection). A unit split into k parts pays k^2 times as much "
            "(dpsql policy shows P(r)). Why these values, and how to change them: docs/own_data.md, \"The drafted budget\".")


def _tell(database: Path, policy: Path, drafts: list[TableDraft], thresholds: dict[str, Decimal]) -> None:
    placeholders = [c for d in drafts for c, t in d.measures() if c not in thresholds and d.role(c, t) != "both"]
    placeholders += [f"{d.name}'s row_threshold" for d in drafts if d.many_rows and d.row_threshold is None]
    placeholders += [f"{d.name}'s max_groups" for d in drafts if d.many_rows and d.max_groups is None]
    print(f"database: {database}\npolicy:   {policy}")
    if placeholders:
        print(f"\nReview the policy first: the split thresholds of {', '.join(placeholders)} are placeholders "
              "(set them from DP quantiles with `dpsql advise TABLE --db DATABASE --write`, one charged query, or by "
              "hand: docs/own_data.md, choosing T).")
    print("\n" + budget_meaning(any(d.many_rows for d in drafts)))
    print(f"\nNext: dpsql {database}                      (the prompt)\n"
          f"      dpsql query '{first_query(drafts[0])}' {database}")
