"""The one orchestrator: ``Session.execute(sql) -> Result``.

parse -> validate -> plan -> rewrite -> execute (exact, inside the engine) -> protect (noise)
-> account (charge BEFORE release) -> finish (HAVING / ORDER BY / LIMIT on noisy values) ->
rows + receipt. Exact values live only in local variables of :meth:`Session.execute` and are
dropped before anything is returned.
"""

from __future__ import annotations

import getpass
import itertools
import math
import threading
import time
import uuid
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from sqlglot import exp

from dpsql.backends import duckdb as engine_mod
from dpsql.errors import DatabaseFileError, DpsqlError, PolicyFileError, QueryFailed, QueryRefused
from dpsql.intercept import settings as set_statements  # noqa: F401 - registers SET / RESET / SHOW dpsql.*
from dpsql.intercept import intercept
from dpsql.intercept import probes  # noqa: F401 - registers the zero-cost answers to BI tools' probes
from dpsql.intercept import information_schema  # noqa: F401 - then information_schema listings (after probes)
from dpsql.ledger import Charge, Ledger, ledger_path
from dpsql.privacy.budget import fmt, parse_rho
from dpsql.privacy.allocate import Allocation, Settings, allocate
from dpsql.sql.parse import parameter_position, parse
from dpsql.sql.plan import GroupKey, Plan, Primitive, build_plan, inline_derived_tables, hidden_columns
from dpsql.policy import Policy
from dpsql.policy_file import default_policy_path, load_policy
from dpsql.privacy.randomness import RandomSource, default_random
from dpsql.result import ColumnError, Explanation, NoiseTerm, Receipt, Result
from dpsql.sql.rewrite import INTEGER_TYPES, exact_sql, key_sql, reference_sql
from dpsql.privacy.mechanisms import discrete_laplace_variance
from dpsql.privacy.selection import midpoint, tsgd_threshold
from dpsql.sql.validate import check_statement
from dpsql import release as release_mod
from dpsql.release import MAX_CELLS, TSGD, Decision, sort_key

NUMERIC_TYPES = INTEGER_TYPES + ("DOUBLE", "FLOAT", "REAL")


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (some containers): one shared analyst
        return "analyst"


class Session:
    """One analyst's connection to one database under one policy."""

    def __init__(
        self,
        database: str | Path | None = None,
        policy: str | Path | None = None,
        *,
        rho: Any = None,
        random_source: RandomSource | None = None,
        threads: int | None = None,
        analyst: str = "",
    ) -> None:
        if database is None:
            from dpsql.demo_db import ensure_demo

            demo_db, demo_policy = ensure_demo()
            database = demo_db
            policy = policy if policy is not None else demo_policy
        database = Path(database)
        if policy is None:
            policy = default_policy_path(database)
            if not policy.is_file():
                raise PolicyFileError(f"no policy given and none found beside the database at {policy}",
                                      hint="pass policy=PATH (or --policy PATH) naming the data owner's policy file.")
        self.policy: Policy = load_policy(policy)
        self.engine = engine_mod.Engine(database, threads=threads)
        try:
            self.schema = self.engine.schema([*self.policy.tables, *self.policy.public_tables])
            self.not_null = self.engine.not_null_columns([*self.policy.tables, *self.policy.public_tables])
            self._check_catalog()
        except Exception:
            self.engine.close()
            raise
        self.settings = self.default_settings()
        if rho is not None:
            self.set_rho(rho)
        self.analyst = analyst or _os_user()
        self.session_id = uuid.uuid4().hex[:12]
        budget = self.policy.budget
        try:
            self.ledger = Ledger(ledger_path(self.policy), self.analyst, budget.total_rho, budget.dataset_rho,
                                 total_delta=budget.total_delta, dataset_delta=budget.dataset_delta)
        except Exception:
            self.engine.close()
            raise
        self.rng = random_source if random_source is not None else default_random()
        self._units_checked: set[str] = set()
        self._public_values: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._images: dict[tuple[str, str], tuple[Any, ...]] = {}
        self.database = database
        self.finisher = engine_mod.Finisher()
        self._lock = threading.RLock()  # one query at a time: threads sharing a connection cannot interleave

    def close(self) -> None:
        self.engine.close()
        self.finisher.close()
        self.ledger.close()

    def set_rho(self, rho: Any) -> None:
        self.settings = replace(self.settings, rho=parse_rho(rho))

    # ------------------------------------------------------------------ checks of the policy against the file
    def _check_catalog(self) -> None:
        where = str(self.policy.path or "<policy>")
        for name, tp in self.policy.tables.items():
            cols = self.schema.get(name) or {}
            if not cols:
                raise DatabaseFileError(f"{where}: table {name!r} of the policy does not exist in {self.engine.path}")
            for col, role in [(tp.privacy_unit, "privacy_unit"), *((m, "measures") for m in tp.measures),
                              *((k, "keys") for k in tp.keys)]:
                if col not in cols:
                    raise PolicyFileError(f"{where}: field 'tables.{name}.{role}' names column {col!r}, "
                                          f"which table {name!r} does not have (columns: {', '.join(cols)})")
            for m in tp.measures.values():
                if not cols[m.name].upper().startswith(NUMERIC_TYPES) and not cols[m.name].upper().startswith("DECIMAL"):
                    raise PolicyFileError(f"{where}: field 'tables.{name}.measures.{m.name}': column type "
                                          f"{cols[m.name]} is not numeric")
                if m.override and m.override.key not in cols:
                    raise PolicyFileError(f"{where}: field 'tables.{name}.measures.{m.name}.overrides.key' is not a column")
            for k in tp.keys.values():
                if not k.public:
                    continue
                is_int = cols[k.name].upper() in INTEGER_TYPES
                if not all(isinstance(v, int) == is_int for v in k.keyset or ()):
                    want = "integers" if is_int else "strings"
                    raise PolicyFileError(f"{where}: field 'tables.{name}.keys.{k.name}.keyset' must hold {want} "
                                          f"(column type {cols[k.name]})")

        for name, pt in self.policy.public_tables.items():
            cols = self.schema.get(name) or {}
            if not cols:
                raise DatabaseFileError(f"{where}: public table {name!r} of the policy does not exist in {self.engine.path}")
            if pt.key not in cols:
                raise PolicyFileError(f"{where}: field 'public_tables.{name}.key' names column {pt.key!r}, "
                                      f"which table {name!r} does not have (columns: {', '.join(cols)})")
            # A join is a lookup only if the key is unique: else one private row would meet
            # several public rows and be counted several times. The table is public: say so plainly.
            if not self.engine.units_unique(name, pt.key):
                raise PolicyFileError(f"{where}: field 'public_tables.{name}.key': column {pt.key!r} has repeated or "
                                      "NULL values, so a private row could join several of its rows",
                                      hint="declare a column that identifies one row of the public table.")

    def _check_units(self, table: str) -> None:
        if table in self._units_checked:
            return
        tp = self.policy.tables[table]
        if not self.engine.units_unique(table, tp.privacy_unit):
            raise PolicyFileError(
                f"table {table!r}: the privacy unit {tp.privacy_unit!r} does not identify one row per unit; "
                "dpsql refuses to answer because its sensitivity analysis assumes one row per unit",
                hint="the data owner must aggregate rows per unit or declare the right unit column.")
        self._units_checked.add(table)

    # ------------------------------------------------------------------ planning
    def plan(self, sql: str, parameters: Any = None) -> Plan:
        tree = parse(sql)
        placeholders = list(tree.find_all(exp.Placeholder))
        if any(p.this is not None for p in placeholders):
            # $1 / :name would bind in order of appearance, not by number or name: refuse them.
            line, column = parameter_position(sql)
            raise QueryRefused("numbered or named parameters ($1, :name) are not supported", code="DP118",
                               line=line, column=column,
                               hint="dpsql's paramstyle is qmark: write ? for each value and pass the values in order.")
        if parameters is not None:
            tree = bind_parameters(tree, parameters)
        elif placeholders:
            line, column = parameter_position(sql)
            raise QueryRefused("the query has ? parameters but no values were given", code="DP118", line=line, column=column,
                               hint="pass the values with the query (cursor.execute(sql, [value, ...])) or write literals.")
        select = check_statement(inline_derived_tables(tree, sql), sql)
        return build_plan(select, sql, self.policy, self.schema, self.not_null)

    def default_settings(self) -> Settings:
        """The policy's defaults: its mechanism and per-query budget, equal weights, no MOE target."""
        b = self.policy.budget
        return Settings(mechanism=self.policy.mechanism, rho=b.default_rho, epsilon=b.default_epsilon)

    @property
    def rho(self) -> Fraction:
        return self.settings.rho

    def _allocations(self, plan: Plan, rho: Any = None) -> list[Allocation]:
        """Each primitive's mechanism and budget (``allocate.py``; docs/privacy.md).

        With truncated-geometric selection on private keys only, the count of units is the
        selection's own noisy count (paper 002 Theorem 6): it costs nothing more.

        ``rho`` is the noise's budget. A partition selection (GROUP BY a private key) costs its
        ε²/2 on top, and the receipt, EXPLAIN and the prompt show the total and the breakdown:
        making ``rho`` the total would refuse every private-key query at the default ρ = 0.1
        (below the default selection's 0.125)."""
        settings = self.settings if rho is None else replace(self.settings, rho=parse_rho(rho))
        shared = self._shared_count(plan)
        rest = tuple(p for p in plan.primitives if p != shared)
        sens = {p: (1 if p.kind == "count" else plan.table.measures[p.column].max_threshold) for p in rest}
        gran = {p: (Fraction(1) if p.kind == "count" else plan.table.measures[p.column].granularity) for p in rest}
        allocs = iter(allocate(rest, settings, sens, gran)) if rest else iter(())
        return [Allocation(p, TSGD, Fraction(0)) if p == shared else next(allocs) for p in plan.primitives]

    def _shared_count(self, plan: Plan) -> Primitive | None:
        sel = self.policy.selection
        count = Primitive("count")
        if (plan.private_keys and len(plan.private_keys) == len(plan.keys) and sel.method == "truncated_geometric"
                and sel.count == "units" and count in plan.primitives):
            return count
        return None

    def _source_keyset(self, plan: Plan, column: str) -> tuple[Any, ...]:
        """The public keyset of one column: the policy's list for a key of the private table;
        the distinct values of a column of a joined public table (public data, read directly)."""
        if column in plan.public_columns:
            table, col = plan.public_columns[column]
            if (table, col) not in self._public_values:
                self._public_values[(table, col)] = tuple(self.engine.public_values(table, col))
            return self._public_values[(table, col)]
        return plan.table.keys[column].keyset or ()

    def _keyset(self, plan: Plan, key: GroupKey) -> tuple[Any, ...]:
        """A public key's keyset. For an expression of keys it is the expression's image over
        the product of its columns' keysets, computed by DuckDB from public values only (no
        private row is read), so the released groups are exactly what the rows could fall in."""
        if key.plain:
            return self._source_keyset(plan, key.sources[0])
        cache = (plan.table.name, key.expr.sql("duckdb"))
        if cache not in self._images:
            keysets = [self._source_keyset(plan, c) for c in key.sources]
            size = math.prod(len(ks) for ks in keysets)
            if size > MAX_CELLS:
                raise QueryRefused(f"the GROUP BY expression {key.label} ranges over {size} combinations of public "
                                   f"keys, more than {MAX_CELLS}", code="DP207", hint="group by fewer keys.")
            product = list(itertools.product(*keysets))
            if not product:
                self._images[cache] = ()
                return ()
            types = {**self.schema[plan.table.name], **plan.public_types}
            columns = {f"__c{i}": [row[i] for row in product] for i in range(len(key.sources))}
            typed = ", ".join(f'CAST("__c{i}" AS {types[c]}) AS "{c}"' for i, c in enumerate(key.sources))
            self._images[cache] = self.finisher.image(columns, f"SELECT DISTINCT {key_sql(key)} FROM "
                                                      f"(SELECT {typed} FROM __noisy)")
        return self._images[cache]

    def _public_blocks(self, plan: Plan) -> list[tuple[list[int], list[tuple[Any, ...]]]]:
        """The public keys' values, in blocks whose product is the public part of the domain:
        (positions in ``plan.keys``, rows of values). Keys that read columns of one joined
        public table form one block of the combinations that table holds (region and division
        of ``states`` give its 9 pairs, not 4 × 9); each other key is a block of its keyset."""
        blocks: list[tuple[list[int], list[tuple[Any, ...]]]] = []
        by_table: dict[str, list[int]] = {}
        for i, k in enumerate(plan.keys):
            if not k.public:
                continue
            tables = {plan.public_columns[c][0] if c in plan.public_columns else None for c in k.sources}
            if len(tables) == 1 and None not in tables:
                by_table.setdefault(tables.pop(), []).append(i)
            else:
                blocks.append(([i], [(v,) for v in self._keyset(plan, k)]))
        for table, idx in by_table.items():
            keys = [plan.keys[i] for i in idx]
            cache = (table, tuple(k.expr.sql("duckdb") for k in keys))
            if cache not in self._images:
                join = next(j for j in plan.joins if j.table == table)
                cols = ", ".join(f'"{c}" AS "{join.internal(c)}"' for c in self.schema[table])
                plain = [k.expr.sql("duckdb") for k in keys if k.plain]
                where = f" WHERE {' AND '.join(f'{c} IS NOT NULL' for c in plain)}" if plain else ""
                rows = self.engine.run(f'SELECT DISTINCT {", ".join(key_sql(k) for k in keys)} '
                                       f'FROM (SELECT {cols} FROM "{table}"){where}')  # public rows only
                self._images[cache] = tuple(sorted(rows, key=sort_key))
            blocks.append((idx, list(self._images[cache])))
        return blocks

    def _selection_info(self, d: Decision, released: list[tuple[Any, ...]] | None) -> dict[str, Any] | None:
        if released is None:
            return None
        info = {**self._selection_params(d.plan), "released_groups": len(released)}
        if len(released) == d.max_released:
            info["note"] = (f"at most {d.max_released} groups are shown (dpsql's limit of {MAX_CELLS} cells); "
                            "more may have been selected")
        return info

    def _selection_params(self, plan: Plan) -> dict[str, Any]:
        """The public parameters of a query's partition selection (receipt and explain)."""
        sel = self.policy.selection
        return {"keys": [k.label for k in plan.private_keys], "method": sel.method, "count": sel.count,
                "epsilon": fmt(sel.epsilon), "delta": f"{float(sel.delta):.3g}", "rho": fmt(sel.epsilon**2 / 2)}

    def _policy_terms(self, plan: Plan, allocs: list[Allocation]) -> tuple[dict[str, Any], ...]:
        """The terms this query adds to the public policy function P(r) (paper 000 Lemma 5.1,
        Lemma 5.6, Table 3): Σ ρ_sum · |A(r)|² + Σ ρ_count. A pure ε-DP release enters as its
        zCDP equivalent ε²/2; a record with k splits then pays (kε)²/2 (group privacy).

        Partition selection (ε, δ) enters as ρ = ε²/2 and δ. Counting units it is the same
        for every record; counting split rows, a record with k = |A(r)| splits moves a count by
        k and pays (kε, k·e^((k−1)ε)·δ) by group privacy, i.e. ε²/2·|A(r)|² and that δ."""
        sum_rho = sum((a.rho for a in allocs if a.primitive.kind == "sum"), Fraction(0))
        count_rho = sum((a.rho for a in allocs if a.primitive.kind == "count"), Fraction(0))
        sel = self.policy.selection if plan.private_keys else None
        split_selection = sel is not None and sel.count == "split_rows" and bool(plan.split_measures)
        terms: list[dict[str, Any]] = []
        split_rho = sum_rho + (sel.epsilon**2 / 2 if split_selection else 0)
        if split_rho:
            thresholds: dict[str, Any] = {}
            for name in plan.split_measures:
                m = plan.table.measures[name]
                thresholds[name] = m.display(m.threshold)
                if m.override:
                    thresholds[f"{name} by {m.override.key}"] = {str(k): m.display(v) for k, v in m.override.thresholds.items()}
            term: dict[str, Any] = {"rho": fmt(split_rho), "rho_exact": str(split_rho), "scale": "|A(r)|^2",
                                    "table": plan.table.name, "measures": list(plan.split_measures),
                                    "thresholds": thresholds,
                                    "splits": "|A(r)| = max(1, " + ", ".join(f"ceil(|{n}|/T({n}))" for n in plan.split_measures) + ")"}
            if split_selection:
                term.update({"delta_exact": str(sel.delta), "delta_epsilon": str(sel.epsilon),
                             "delta_scale": "|A(r)|*exp((|A(r)|-1)*epsilon)"})
            if plan.table.max_splits:
                term["max_splits"] = plan.table.max_splits
            terms.append(term)
        const_rho = count_rho + (sel.epsilon**2 / 2 if sel is not None and not split_selection else 0)
        if const_rho:
            term = {"rho": fmt(const_rho), "rho_exact": str(const_rho), "scale": "1", "table": plan.table.name}
            if sel is not None and not split_selection:
                term["delta_exact"] = str(sel.delta)
            terms.append(term)
        return tuple(terms)

    # ------------------------------------------------------------------ explain
    def explain(self, sql: str, rho: Any = None) -> Explanation:
        plan = self.plan(sql)
        allocs = self._allocations(plan, rho)
        schema = self.schema[plan.table.name]
        noise = []
        for a in allocs:
            p = a.primitive
            if a.mechanism == TSGD:
                sel = self.policy.selection
                noise.append({"aggregate": p.label, "mechanism": TSGD, "rho": "0 (the partition selection's noisy count)",
                              "sensitivity": [1.0], "sigma": [math.sqrt(discrete_laplace_variance(1 / sel.epsilon))],
                              "moe95": [float(tsgd_threshold(sel.epsilon, sel.delta))]})
                continue
            m = plan.table.measures.get(p.column) if p.kind == "sum" else None
            g = m.granularity if m else Fraction(1)
            sens = sorted(set(m.thresholds())) if m else [1]
            entry = {"aggregate": p.label, "mechanism": a.mechanism, "rho": fmt(a.rho),
                     "sensitivity": [float(s * g) for s in sens],
                     "sigma": [a.sigma(s) * float(g) for s in sens],
                     "moe95": [a.moe(s) * float(g) for s in sens]}
            if a.epsilon is not None:
                entry["epsilon"] = fmt(a.epsilon)
            noise.append(entry)
        public = {k.label: len(self._keyset(plan, k)) for k in plan.keys if k.public}
        notes = ["every key of the public keysets is returned (empty groups as noise on zero); other keys are dropped"] if public else []
        selection = None
        rho_sel = Fraction(0)
        if plan.private_keys:
            sel = self.policy.selection
            rho_sel = sel.epsilon**2 / 2
            selection = {**self._selection_params(plan), "midpoint": midpoint(sel.epsilon, sel.delta)}
            notes.append(f"groups of {', '.join(k.label for k in plan.private_keys)} are released by DP partition selection "
                         f"(paper 002 Theorem 1): a group with n {'units' if sel.count == 'units' else 'split rows'} "
                         f"is released with probability pi(n); pi reaches 1/2 at n = {selection['midpoint']}")
        if plan.joins:
            notes.append("joined public tables: " + ", ".join(f"{j.table} ({j.side} JOIN on its key {j.key})" for j in plan.joins)
                         + "; each private row meets at most one of their rows, so nothing costs more")
        return Explanation(sql=sql, table=plan.table.name, keys=tuple(k.label for k in plan.keys), public_keys=public,
                           exact_sql=exact_sql(plan, schema), reference_sql=reference_sql(plan, schema),
                           selection=selection, delta=self.policy.selection.delta if plan.private_keys else Fraction(0),
                           noise=tuple(noise), rho=sum((a.rho for a in allocs), Fraction(0)) + rho_sel,
                           policy_terms=self._policy_terms(plan, allocs),
                           finish_sql=plan.finish.sql("duckdb", pretty=False), notes=tuple(notes))

    # ------------------------------------------------------------------ execute
    def execute(self, sql: str, parameters: Any = None, rho: Any = None) -> Result:
        """Answer one statement, in the phases of docs/privacy.md ("Phases of a query"):

        1. decide from public information only (every refusal happens here);
        2. compute the exact per-group values (a total query: no row can make it fail);
        3. release (selection, noise), charge durably, finish on noisy values.

        After phase 2 begins the only outcomes are a charged noisy answer or — if anything
        still fails (memory, an interrupt, a bug) — a charge and a fixed message. One query at
        a time per session: threads sharing a connection are serialised."""
        with self._lock:
            if parameters is None and (answered := intercept(self, sql)) is not None:
                return answered
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            d = self._decide(sql, parameters, rho)
            timings["plan"] = time.perf_counter() - t0
            try:
                columns, noise_terms, released = self._compute_and_release(d, timings)
            except BaseException as exc:  # noqa: BLE001 - the backstop: charge, then a fixed message
                raise self._charged_failure(d, exc) from None

            t0 = time.perf_counter()  # charge BEFORE anything derived from the noisy values is returned
            charge_id = self.ledger.charge(self._charge(d))
            timings["charge"] = time.perf_counter() - t0

            t0 = time.perf_counter()
            plan = d.plan
            n_visible = len(plan.outputs)
            hidden = [exp.column(c, quoted=True) for c in hidden_columns(len(plan.primitives))]
            finish = plan.finish.copy().select(*hidden)
            names, types, rows = self.finisher.run(columns, finish.sql("duckdb"))
            col_errors = _column_errors(plan, rows, n_visible)
            visible = [tuple(r[:n_visible]) for r in rows]
            timings["finish"] = time.perf_counter() - t0

            receipt = Receipt(rho=d.rho, delta=d.delta, epsilon=d.epsilon, mechanism=d.mechanism, table=plan.table.name,
                              selection=self._selection_info(d, released),
                              noise=tuple(noise_terms), columns=col_errors, policy_terms=d.terms,
                              budget_spent=self.ledger.spent, budget_total=self.ledger.total_rho,
                              budget_remaining=self.ledger.remaining, charge_id=charge_id)
            return Result(columns=tuple(names[:n_visible]), types=tuple(types[:n_visible]), rows=visible,
                          receipt=receipt, timings=timings)

    def _decide(self, sql: str, parameters: Any, rho: Any) -> Decision:
        """Phase 1: everything that can refuse, from the query, the policy, the schema, public
        tables and the budget — no private row is read (the unit check reads the data owner's
        declaration once per table, the same for every query)."""
        plan = self.plan(sql, parameters)
        allocs = self._allocations(plan, rho)
        sel = self.policy.selection if plan.private_keys else None
        rho_sel = sel.epsilon**2 / 2 if sel else Fraction(0)  # (ε, δ)-DP is δ-approx. ε²/2-zCDP
        delta_q = sel.delta if sel else Fraction(0)
        rho_q = sum((a.rho for a in allocs), Fraction(0)) + rho_sel
        eps_q = (sum((a.epsilon or Fraction(0) for a in allocs), Fraction(0))
                 if any(a.epsilon is not None for a in allocs) else None)
        blocks = self._public_blocks(plan)
        public_cells = math.prod(len(rows) for _, rows in blocks)
        if public_cells > MAX_CELLS:
            raise QueryRefused(f"the public keys {', '.join(k.label for k in plan.keys if k.public)} make {public_cells} "
                               f"groups, more than {MAX_CELLS}", code="DP207", hint="group by fewer keys or filter with WHERE.")
        query = exact_sql(plan, self.schema[plan.table.name])
        self.engine.check(query)  # errors that do not depend on the rows: refused here, free
        self._check_units(plan.table.name)
        self.ledger.check(rho_q, delta_q)  # refuse early; the binding check is the charge itself
        return Decision(sql=sql, plan=plan, allocs=tuple(allocs), selection=sel, rho=rho_q, delta=delta_q, epsilon=eps_q,
                        mechanism=next((a.mechanism for a in allocs if a.mechanism != TSGD), TSGD),
                        terms=self._policy_terms(plan, allocs), query=query, blocks=blocks,
                        max_released=MAX_CELLS // max(public_cells, 1))

    def _compute_and_release(self, d: Decision, timings: dict[str, float]
                             ) -> tuple[dict[str, Any], list[NoiseTerm], list[tuple[Any, ...]] | None]:
        """Phases 2-3 up to the charge: the exact query, partition selection, noise. Exact values
        live only in this frame and in ``release.release``, and are dropped before it returns."""
        t0 = time.perf_counter()
        exact_rows = self.engine.run(d.query)
        timings["execute"] = time.perf_counter() - t0
        return release_mod.release(d, exact_rows, self.rng, timings)

    def _charge(self, d: Decision) -> Charge:
        return Charge(query=d.sql, rho=d.rho, delta=d.delta, epsilon=d.epsilon, mechanism=d.mechanism,
                      policy_terms=d.terms, analyst=self.analyst, session=self.session_id, dataset=str(self.database))

    def _charged_failure(self, d: Decision, exc: BaseException) -> BaseException:
        """The backstop: something failed after private rows were read. Its full cost is charged
        before any message leaves, and the message is fixed text that depends on nothing in the
        data (the original exception is dropped: its text or traceback could carry values).
        An interrupt that stopped the exact query before it started read nothing: not charged."""
        if isinstance(exc, engine_mod.InterruptedBeforeStart):
            return KeyboardInterrupt("cancelled before any private row was read; nothing was charged")
        try:
            charge_id: int | None = self.ledger.charge(self._charge(d))
        except DpsqlError:
            charge_id = None  # the budget or the ledger refused: nothing was released either way
        charged = (f"its full cost (rho={fmt(d.rho)}) was charged" if charge_id is not None
                   else "it could not be charged (the ledger refused)")
        if isinstance(exc, KeyboardInterrupt):
            out = KeyboardInterrupt(f"interrupted after private rows were read; {charged} and nothing was released")
            out.dpsql_charged = charge_id is not None  # type: ignore[attr-defined]
            return out
        return QueryFailed(f"the query failed after private rows were read; {charged} and nothing was released",
                           hint="this should not happen: please report it to the data owner. The failure's details "
                                "are withheld because they could depend on private values.")


def _column_errors(plan: Plan, rows: list[tuple[Any, ...]], n_visible: int) -> dict[str, Any]:
    """Per-row σ and 95% MOE of each visible column, read from the hidden columns the finish
    query carried along (so they follow HAVING / ORDER BY / LIMIT)."""

    def hidden(r: tuple[Any, ...], i: int, k: int) -> Any:  # k: 0 noisy value, 1 σ, 2 MOE
        return r[n_visible + 3 * i + k]

    out = {}
    for oc in plan.outputs:
        if oc.primitive is not None:
            i = oc.primitive
            out[oc.name] = ColumnError(oc.name, tuple(float(hidden(r, i, 1)) for r in rows),
                                       tuple(float(hidden(r, i, 2)) for r in rows))
        elif oc.ratio is not None:
            s_i, c_i = oc.ratio
            sig_list: list[float | None] = []
            for r in rows:
                s, s_sig = hidden(r, s_i, 0), hidden(r, s_i, 1)
                c, c_sig = hidden(r, c_i, 0), hidden(r, c_i, 1)
                if c is None or c < 1:
                    sig_list.append(None)
                else:
                    # Delta method for S/C with independent noise: computed from noisy values only.
                    sig_list.append(math.sqrt(s_sig**2 + (float(s) / c) ** 2 * c_sig**2) / c)
            out[oc.name] = ColumnError(oc.name, tuple(sig_list), tuple(None if s is None else 1.96 * s for s in sig_list),
                                       note="approximate (delta method on noisy SUM / noisy COUNT)")
    return out


def bind_parameters(tree: exp.Expression, parameters: Any) -> exp.Expression:
    """Replace ``?`` placeholders (paramstyle ``qmark``) by literals, in order."""
    values = list(parameters)
    placeholders = list(tree.find_all(exp.Placeholder))
    if len(placeholders) != len(values):
        raise QueryRefused(f"the query has {len(placeholders)} parameter(s) but {len(values)} value(s) were given",
                           code="DP118")
    for node, value in zip(placeholders, values):
        if value is None:
            lit: exp.Expression = exp.Null()
        elif isinstance(value, bool):
            lit = exp.Boolean(this=value)
        elif isinstance(value, (int, float)):
            lit = exp.Literal.number(value)
        elif isinstance(value, str):
            lit = exp.Literal.string(value)
        else:
            raise QueryRefused(f"parameter values must be numbers, strings or None, got {type(value).__name__}", code="DP118")
        node.replace(lit)
    return tree
