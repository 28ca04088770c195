"""The one orchestrator: ``Session.execute(sql) -> Result``, the phases of a query in order.

1. **decide** from public information only (:meth:`Session.decide`): plan, budget shares, the
   public domain, the exact SQL checked on an empty twin of the schema, the unit check, the
   budget left — every refusal happens here;
2. **compute** the exact per-group values with a total query (:mod:`dpsql.backends`);
3. **release**: partition selection and noise (:mod:`dpsql.pipeline.release`);
4. **charge** durably (:mod:`dpsql.ledger.book`; the answer kept for reuse in the same commit),
   before anything derived from the noisy values leaves;
5. **finish** on noisy values only (:mod:`dpsql.pipeline.finish`) and return rows with their receipt.

After phase 2 begins the only outcomes are a charged noisy answer or a charged fixed-text
failure (:meth:`Session._charged_failure`). Exact values live only in the frame of
:meth:`Session._compute_and_release` and in :func:`dpsql.pipeline.release.release`. Statements dpsql
answers itself (SET, probes) never get here: :func:`dpsql.intercept.execute` answers them first.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpsql.records import catalog as catalog_record
from dpsql.records import check as check_record
from dpsql.pipeline import output, reuse
from dpsql.records import plan as plan_record
from dpsql.backends import InterruptedBeforeStart, PublicCatalog, open_engine, open_finisher
from dpsql.backends.files import kind_of
from dpsql.sql.salt import salted
from dpsql.pipeline.decide import (Decision, allocations, check_query_cap, check_split_selection, decision,
                                   selection_info, settings_for)
from dpsql.pipeline.domain import PublicDomain, file_identity
from dpsql.errors import DatabaseFileError, DpsqlError, PolicyFileError, QueryFailed
from dpsql.pipeline.finish import check_finish, describe
from dpsql.ledger import answers
from dpsql.ledger.book import Charge, Ledger, ledger_path, os_user
from dpsql.policy.model import Policy
from dpsql.policy.check import check_catalog, check_units
from dpsql.policy.memo import default_policy_path, load_policy  # validated once per content
from dpsql.privacy.allocate import Settings
from dpsql.privacy.budget import fmt, parse_rho
from dpsql.privacy.randomness import RandomSource, default_random
from dpsql.pipeline.release import fetch, release
from dpsql.pipeline.result import Explanation, NoiseTerm, Receipt, Result
from dpsql.sql import plan_cache
from dpsql.sql.plan import Plan


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
        ledger: str | Path | None = None,
        error_columns: Any = None,
        clamp_negative: Any = None,
        engine: str | None = None,
        spark_master: str | None = None,
        memory_limit: int | None = None,
    ) -> None:
        # The CLI's --engine / --spark-master set these for every session of the process.
        engine = engine or os.environ.get("DPSQL_ENGINE") or "duckdb"
        spark_master = spark_master or os.environ.get("DPSQL_SPARK_MASTER") or None
        if database is None and policy is None and engine == "spark":
            from dpsql.demo_db import ensure_demo_parquet

            policy = ensure_demo_parquet()[1]
        parquet = load_policy(policy).parquet if database is None and policy is not None else {}
        if database is None and not parquet:
            from dpsql.demo_db import ensure_demo

            demo_db, demo_policy = ensure_demo()
            database = demo_db
            policy = policy if policy is not None else demo_policy
        # Over Parquet the data is where the policy says and the policy file stands for it.
        database = Path(database) if database is not None else Path(policy)
        if not parquet and kind_of(database) != "duckdb":  # a CSV or Parquet file: dpsql init makes a database of it
            raise DatabaseFileError(f"{database} is a {kind_of(database)} file, not a DuckDB database",
                                    hint=f"dpsql init {database} reads it into a DuckDB file and drafts its policy "
                                         "(docs/own_data.md).")
        # The database first: a missing or unreadable file is the error to report (DP402), not
        # the policy that would sit beside it.
        self.engine = open_engine(database, threads=threads, parquet=parquet, engine=engine, spark_master=spark_master,
                                  memory_limit=memory_limit)
        try:
            catalog_record.use(self.engine)  # the file's catalog as an earlier process read it, if unchanged
            if policy is None:
                policy = default_policy_path(database)
                if not policy.is_file():
                    raise PolicyFileError(f"no policy given and none found beside the database at {policy}",
                                          hint="pass policy=PATH (or --policy PATH) naming the data owner's policy file.")
            self.policy: Policy = load_policy(policy)
            tables = [*self.policy.tables, *self.policy.public_tables]
            self.schema = self.engine.schema(tables)
            self.not_null = self.engine.not_null_columns(tables)
            self.nonnegative = self.engine.nonnegative_columns(tables)  # post-processing only (output.py)
            check_catalog(self.policy, self.engine, self.schema)
            self.settings = self.default_settings()
            if rho is not None:
                self.set_rho(rho)
            self.default_output = output.Output(
                error_columns=output.error_columns_mode(error_columns) if error_columns is not None else "off",
                clamp_negative=output.switch(clamp_negative, "clamp_negative") if clamp_negative is not None else False)
            self.output = self.default_output  # SET dpsql.error_columns / clamp_negative change it
            self.analyst = analyst or os_user()
            self.session_id = uuid.uuid4().hex[:12]
            budget = self.policy.budget
            total_rho, total_delta = budget.walls(self.analyst)
            self.ledger = Ledger(Path(ledger) if ledger is not None else ledger_path(self.policy), self.analyst,
                                 total_rho, budget.dataset_rho, total_delta=total_delta, dataset_delta=budget.dataset_delta)
        except Exception:
            self.engine.close()
            raise
        self.rng = random_source if random_source is not None else default_random()
        self.database = database
        self.finisher = open_finisher(self.engine)
        self._plan_context = plan_cache.context(self.policy, self.schema, self.not_null, self.analyst)  # _planned's cache key
        # Public values are shared by the sessions of one plan context on one unchanged data file
        # (a DuckDB file: it is open read-only, so no writer can change it while a session holds it).
        shared = isinstance(self._plan_context, str) and not self.policy.parquet
        self.domain = PublicDomain(self.engine, self.finisher, self.schema,
                                   scope=(self._plan_context, file_identity(database)) if shared else None)
        self._units_checked: set[str] = set()
        self._twin_checked: set[str] = set()  # this session's (a process-wide set would tell others' texts by timing)
        self._lock = threading.RLock()  # one query at a time: threads sharing a connection cannot interleave
        self._public: PublicCatalog | None = None  # public_database(), built on first use

    def close(self) -> None:
        if self._public is not None:
            self._public.close()
        self.engine.close()
        self.finisher.close()
        self.ledger.close()

    def public_database(self) -> PublicCatalog:
        """A separate in-memory database holding the rows of the policy's public tables and
        nothing else (no private table, not even empty), locked down like the engine; built on
        first use. Queries over public tables only run there (:mod:`dpsql.intercept.public_tables`)."""
        if self._public is None:
            public = list(self.policy.public_tables)
            self._public = self.engine.public_catalog(public, public, self.database.stem)
        return self._public

    @property
    def lock(self) -> threading.RLock:
        """Held while a statement runs (re-entrant): one statement at a time per session."""
        return self._lock

    def set_rho(self, rho: Any) -> None:
        self.settings = replace(self.settings, rho=parse_rho(rho))

    def set_max_groups(self, k: int | None) -> None:  # SET / RESET dpsql.max_groups (sql/session_cap.py)
        self.policy = replace(self.policy, max_groups_cap=k)
        self._plan_context = plan_cache.context(self.policy, self.schema, self.not_null, self.analyst)  # keyed by the cap

    def default_settings(self) -> Settings:
        """The policy's defaults: its mechanism and per-query budget, equal weights, no MOE target."""
        b = self.policy.budget
        return Settings(mechanism=self.policy.mechanism, rho=b.default_rho, epsilon=b.default_epsilon)

    @property
    def rho(self) -> Fraction:
        return self.settings.rho

    # ------------------------------------------------------------------ public information only
    def plan(self, sql: str, parameters: Any = None) -> Plan:
        from dpsql.sql.query import plan_query  # sqlglot: not imported to run a recorded plan
        return plan_query(sql, parameters, self.policy, self.schema, self.not_null)

    def explain(self, sql: str, rho: Any = None, parameters: Any = None, settings: Settings | None = None) -> Explanation:
        """What ``sql`` would cost and release; charges nothing, reads no private row.
        ``settings`` (a workload's per-query budget or MOE target) replaces the connection's."""
        from dpsql.pipeline.explain import explain

        plan = self.plan(sql, parameters)
        allocs = allocations(plan, settings or settings_for(self.settings, rho), self.policy)
        ex = explain(sql, plan, allocs, self.policy, self.domain, self.schema[plan.table.name])
        key = reuse.key(self.policy, self.analyst, self.database, plan, ex.exact_sql, allocs, self.output.clamp_negative)
        return replace(ex, notes=(*ex.notes, reuse.would(answers.find(self.ledger, key, self.output.reuse), key)))

    def describe(self, sql: str, parameters: Any = None) -> tuple[list[str], list[str]]:
        """The answer's column names and types from the plan alone (a wire Describe): charges nothing, reads no row."""
        with self._lock:
            plan, query = self._planned(sql, parameters)
            key_types = self.engine.describe(query)[:len(plan.keys)]
            names, types = describe(plan, key_types, self.finisher)
            return output.error_column_types(plan, names, types, self.output.error_columns)

    def decide(self, sql: str, parameters: Any = None, rho: Any = None, settings: Settings | None = None,
               check_budget: bool = True, planned: tuple[Plan, str] | None = None) -> Decision:
        """Phase 1: everything that can refuse, from the query, the policy, the schema, public
        tables and the budget — no private row is read (the unit check reads the data owner's
        declaration once per table, the same for every query). ``planned``: the plan and exact
        SQL of ``sql`` read from its record (:meth:`recorded`)."""
        plan, query = planned or self._planned(sql, parameters)
        allocs = allocations(plan, settings or settings_for(self.settings, rho), self.policy)
        blocks = self.domain.blocks(plan)
        d = decision(sql, plan, allocs, self.policy, blocks, query)
        check_split_selection(plan, self.policy, self.ledger.total_delta)
        self.check_unit_column(plan.table.name, *(j.table for j in plan.joins if j.table in self.policy.tables))  # first
        self._check(d.query)  # errors that do not depend on the rows: refused here, free
        if plan.finish is not None and plan.projection is None:  # and the finish's, on one row (finish.py)
            self._check(f"{d.query}\n-- finish: {plan.finish_sql}",
                        lambda: check_finish(plan, self.engine.describe(d.query)[:len(plan.keys)], self.finisher))
        check_query_cap(d, self.policy)  # budget.max_query_rho: public, per query, workloads too
        if check_budget:  # a workload checks its whole charge instead (dpsql/workload/run.py)
            self.ledger.check(d.rho, d.delta)  # refuse early; the binding check is the charge itself
        return d

    def on_part(self, d: Decision, salt: int, parts: int, part: int) -> Decision:
        """``d`` answered on one part of a secret partition of the units: the rows whose unit
        hashes, with ``salt``, to ``part`` modulo ``parts`` (:func:`dpsql.sql.partition.part_condition`,
        docs/workloads.md). The condition is total and checked on the empty twin."""
        from sqlglot import exp

        from dpsql.sql.partition import part_condition
        from dpsql.sql.rewrite import exact_sql

        assert d.plan.finish is not None, "a workload plans from the text, never from a record"
        cond = part_condition(d.plan.table.privacy_unit, salt, parts, part)
        plan = replace(d.plan, where=cond if d.plan.where is None else exp.and_(d.plan.where, cond))
        query = exact_sql(plan, self.schema[plan.table.name])
        self.engine.check(query)
        return replace(d, plan=plan, query=query)

    def _check(self, query: str, run: Callable[[], None] | None = None) -> None:
        """The engine's check on the empty twin (or ``run``, a check of what ``query`` names), once per
        session; not at all when an earlier process recorded a pass in the same context (records/check.py)."""
        if query in self._twin_checked:
            return
        key = check_record.key(self._plan_context, self.engine.check_identity, query)
        if key is None or key not in check_record.RECORDS:
            run() if run is not None else self.engine.check(query)
            if key is not None:
                check_record.RECORDS.add(key)
        self._twin_checked.add(query)

    def check_unit_column(self, *tables: str) -> None:
        """The data owner's declaration that the privacy unit is one row, checked once per table
        (and, in the engine, once per process and data file): of every private table a plan reads."""
        for table in (t for t in tables if t not in self._units_checked):
            check_units(self.policy, self.engine, table)
            self._units_checked.add(table)

    def _planned(self, sql: str, parameters: Any) -> tuple[Plan, str]:
        """The plan of ``sql`` and its exact SQL, remembered for the process
        (:mod:`dpsql.sql.plan_cache`): both are functions of the text, the policy and the schema
        alone, which do not change while the session is open (the file is read-only, the policy
        loaded once). Settings (ρ, weights, MOE targets) are applied afterwards, on every query.
        A query with parameters is kept under its text and its values (plan_cache.key)."""
        if (key := plan_cache.key(sql, parameters)) is not None and (hit := plan_cache.get(self._plan_context, key)):
            return hit
        from dpsql.sql.rewrite import exact_sql

        plan = self.plan(sql, parameters)
        planned = (plan, exact_sql(plan, self.schema[plan.table.name]))
        if key is not None:
            plan_cache.put(self._plan_context, key, planned)
        return planned

    def recorded(self, sql: str) -> tuple[Plan, str] | None:
        """The plan and exact SQL of a statement this analyst ran through
        :func:`dpsql.intercept.execute` before, in this context and with this code, read from
        its record (:mod:`dpsql.records.plan`), or None."""
        return plan_record.load(self._plan_context, sql, self.policy)

    # ------------------------------------------------------------------ the phases
    def execute(self, sql: str, parameters: Any = None, rho: Any = None, *,
                planned: tuple[Plan, str] | None = None, record: bool = False) -> Result:
        """Answer one statement, in the phases of docs/privacy.md ("Phases of a query"):
        decide; compute the exact values (a total query); release (selection, noise); charge
        durably; finish on noisy values. One query at a time per session: threads sharing a
        connection are serialised. ``planned``: the statement's recorded plan (:meth:`recorded`);
        ``record``: remember its plan once decided (only :func:`dpsql.intercept.execute`, which
        has seen that no handler answers the text, records)."""
        with self._lock:
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            d = self.decide(sql, parameters, rho, planned=planned, check_budget=False)
            if record and planned is None and parameters is None:
                plan_record.save(self._plan_context, sql, (d.plan, d.query))
            key = reuse.key(self.policy, self.analyst, self.database, d.plan, d.query, d.allocs, self.output.clamp_negative)
            if (again := reuse.reused(answers.find(self.ledger, key, self.output.reuse, self.policy.budget), d.plan, self)):
                return again  # released before: shown again, charged nothing (pipeline/reuse.py)
            self.ledger.check(d.rho, d.delta)  # refuse early; the binding check is the charge itself
            timings["plan"] = time.perf_counter() - t0

            failure: BaseException | None = None
            try:
                columns, noise_terms, released = self._compute_and_release(d)
                prepared = self._prepared(d, columns, noise_terms, released, timings, key if d.reads_rows else None)
            except BaseException as exc:  # noqa: BLE001 - the backstop: charge, then a fixed message
                failure = self._charged_failure(d, exc)
            if failure is not None:
                # Raised outside the handler, so it has no __context__: the original exception (and
                # the frames of its traceback, which hold exact values) is not reachable from it.
                raise failure from None

            t0 = time.perf_counter()  # charge BEFORE anything derived from the noisy values is returned
            charge_id = self.ledger.charge(self._charge(d), prepared[-1]) if d.reads_rows else None  # public keysets only: nothing
            timings["charge"] = time.perf_counter() - t0
            return self._finished(d, prepared, charge_id, timings)

    def execute_decided(self, decisions: list[Decision], charge: Charge) -> list[Result]:
        """A workload's phases 2-5 (dpsql/workload/run.py): every decided query computed and
        released, then ONE durable charge for all of them (``charge``, its composed cost), then
        each finished. A failure after the first exact query began charges the whole workload
        and is reported with fixed text, as for one query."""
        with self._lock:
            released_all = []
            failure: BaseException | None = None
            for d in decisions:
                timings: dict[str, float] = {}
                try:
                    released_all.append((d, self._prepared(d, *self._compute_and_release(d), timings), timings))
                except BaseException as exc:  # noqa: BLE001 - the backstop, as in execute()
                    read = bool(released_all) or not isinstance(exc, InterruptedBeforeStart)
                    failure = self._charged_failure(d, exc, charge if read else None)
                    break
            if failure is not None:
                raise failure from None
            charge_id = self.ledger.charge(charge)  # before anything derived from noisy values leaves
            return [self._finished(d, prepared, charge_id, timings) for d, prepared, timings in released_all]

    def _prepared(self, d: Decision, columns: dict[str, Any], noise_terms: list[NoiseTerm],
                  released: list[tuple[Any, ...]] | None, timings: dict[str, float], key: str | None = None) -> tuple[Any, ...]:
        """Phase 5's first steps, on noisy values only, before the charge (in the backstop: a failure
        here is charged); the answer under ``key`` is kept in the charge's transaction (answers.kept)."""
        t0 = time.perf_counter()  # from here on, noisy values only: dpsql/pipeline/output.py
        prims, clamped = output.nonnegative_primitives(d.plan, self.nonnegative), None
        if self.output.clamp_negative:
            columns, clamped = output.clamp(columns, d.plan, prims)
        selection = selection_info(d, self.policy, released)  # the cells are kept: every page is shown from them
        keep = answers.kept(self.ledger, key, lambda: reuse.encode(d, columns, clamped, noise_terms, selection), self.policy.budget)
        timings["finish"] = time.perf_counter() - t0
        return columns, clamped, prims, selection, noise_terms, keep

    def _finished(self, d: Decision, prepared: tuple[Any, ...], charge_id: int | None, timings: dict[str, float]) -> Result:
        """Phase 5 on charged noisy values only (``prepared``: :meth:`_prepared`'s)."""
        t0 = time.perf_counter()
        columns, clamped, prims, selection, noise_terms, _ = prepared
        names, types, rows, errors, notes = reuse.finished(d.plan, columns, clamped, prims, self.finisher)
        names, types, rows = output.with_error_columns(names, types, rows, errors, self.output.error_columns)
        timings["finish"] = timings.pop("finish") + time.perf_counter() - t0  # shown after the charge

        spent, remaining = self.ledger.rho_spent_and_left(after=charge_id)  # as its charge's commit left them
        receipt = Receipt(rho=d.rho, delta=d.delta, epsilon=d.epsilon, mechanism=d.mechanism, table=d.plan.table.name,
                          selection=selection, noise=tuple(noise_terms),
                          columns={e.column: e for e in errors if e is not None}, policy_terms=d.terms,
                          budget_spent=spent, budget_total=self.ledger.total_rho,
                          budget_remaining=remaining, charge_id=charge_id, notes=notes)
        return Result(columns=tuple(names), types=tuple(types), rows=rows, receipt=receipt, timings=timings)

    def _compute_and_release(self, d: Decision) -> tuple[dict[str, Any], list[NoiseTerm], list[tuple[Any, ...]] | None]:
        """Phases 2-3 up to the charge: the exact query, partition selection, noise. Exact values
        live only in this frame and in ``release.release``, and are dropped before it returns.
        Never timed on its own: its time depends on private rows (``Result.timings``)."""
        exact_rows = fetch(self.engine, d, salted(d.query, self.rng) if d.plan.table.many_rows else d.query) if d.reads_rows else []
        return release(d, exact_rows, self.rng)

    def _charge(self, d: Decision) -> Charge:
        return Charge(query=d.sql, rho=d.rho, delta=d.delta, epsilon=d.epsilon, mechanism=d.mechanism,
                      policy_terms=d.terms, analyst=self.analyst, session=self.session_id, dataset=str(self.database))

    def _charged_failure(self, d: Decision, exc: BaseException, charge: Charge | None = None) -> BaseException:
        """The backstop: something failed after private rows were read. Its full cost is charged
        before any message leaves, and the message is fixed text that depends on nothing in the
        data (the original exception is dropped: its text or traceback could carry values).
        An interrupt that stopped the exact query before it started read nothing: not charged."""
        if isinstance(exc, InterruptedBeforeStart) and charge is None:
            return KeyboardInterrupt("cancelled before any private row was read; nothing was charged")
        charge = charge or self._charge(d)
        try:
            charge_id: int | None = self.ledger.charge(charge)
        except DpsqlError:
            charge_id = None  # the budget or the ledger refused: nothing was released either way
        charged = (f"its full cost (rho={fmt(charge.rho)}) was charged" if charge_id is not None
                   else "it could not be charged (the ledger refused)")
        if isinstance(exc, KeyboardInterrupt):
            out = KeyboardInterrupt(f"interrupted after private rows were read; {charged} and nothing was released")
            out.dpsql_charged = charge_id is not None  # type: ignore[attr-defined]
            return out
        return QueryFailed(f"the query failed after private rows were read; {charged} and nothing was released",
                           hint="this should not happen: please report it to the data owner. The failure's details "
                                "are withheld because they could depend on private values.")
