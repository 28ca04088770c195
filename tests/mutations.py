"""Privacy-critical mutations of dpsql, and the tests that must kill them.

    python tests/mutations.py --list              # the mutations and their killing tests
    python tests/mutations.py                     # run them all (a few minutes)
    python tests/mutations.py NAME [NAME ...]     # run some
    python tests/mutations.py -j 4 --timeout 300  # in parallel; per-run time limit in seconds

Each mutation is a small patch that weakens the privacy guarantee while the code still runs (σ
halved in the release path, the charge-time budget check removed, ...), with the test node ids
that must fail once it is applied. For each one the repository is copied to a temporary
directory — the working tree is never touched — the patch is applied there (a patch whose old
text does not occur exactly once fails loudly: the list must follow the code as it moves), and
the killing tests run there:

    python -m pytest -q -x -n 0 -p no:cacheprovider <ids>      (cwd and PYTHONPATH: the copy)

A mutation is *killed* when pytest reports failing tests (exit code 1), *survived* when they
pass, and an *error* otherwise (the ids do not exist, collection broke, the run timed out): the
list then needs fixing. Before the mutations, the killing tests run once on an unmutated copy
and must pass (else "killed" would mean nothing). Exit code: 0 when every mutation selected was
killed, 1 when one survived, 2 on an error.

Each patch's old text is one line, so that it is easy to update when the code is reworked;
``tests/test_mutations_list.py`` checks on every test run that each still occurs exactly once.
This file is not collected by pytest (its name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPREAD = "tests/test_release_spread.py"
REFUSALS = "tests/test_refusals.py"
KAPPA = "tests/test_selection_kappa.py"
MANY = "tests/test_many_rows.py"


@dataclass(frozen=True)
class Patch:
    file: str  # relative to the repository root
    old: str  # must occur exactly once in the file
    new: str


@dataclass(frozen=True)
class Mutation:
    name: str
    why: str  # the guarantee it breaks
    patches: tuple[Patch, ...]
    killers: tuple[str, ...]  # pytest node ids, relative to the repository root


MUTATIONS: tuple[Mutation, ...] = (
    # ------------------------------------------------------------------ the noise actually added
    Mutation("release_noise_halved",
             "each released cell gets half the noise its receipt (and its charge) states",
             (Patch("dpsql/pipeline/release.py", "noisy = exact + noise\n", "noisy = exact + noise // 2\n"),),
             (f"{SPREAD}::test_count_spread_including_empty_groups",)),
    Mutation("release_noise_0_8",
             "each released cell gets 0.8 of the noise its receipt states",
             (Patch("dpsql/pipeline/release.py", "noisy = exact + noise\n", "noisy = exact + np.round(noise * 0.8).astype(np.int64)\n"),),
             (f"{SPREAD}::test_count_spread_including_empty_groups", f"{SPREAD}::test_granular_sum_spread")),
    Mutation("release_noise_1_25",
             "1.25 of the stated noise: the receipt's error bars are wrong the other way",
             (Patch("dpsql/pipeline/release.py", "noisy = exact + noise\n", "noisy = exact + np.round(noise * 1.25).astype(np.int64)\n"),),
             (f"{SPREAD}::test_count_spread_including_empty_groups",)),
    Mutation("release_scale_quartered",
             "the sampler gets a quarter of the σ² (Gaussian; a quarter of b, geometric) the receipt uses",
             (Patch("dpsql/pipeline/release.py", "by_sens = {s: a.scale(s) for s in set(sens)}",
                    "by_sens = {s: a.scale(s) / 4 for s in set(sens)}"),),
             (f"{SPREAD}::test_granular_sum_spread", f"{SPREAD}::test_geometric_spread")),
    Mutation("receipt_sigma_doubled",
             "the receipt states twice the σ that is drawn (a MOE claim the release does not meet)",
             (Patch("dpsql/privacy/allocate.py",
                    "return math.sqrt(s) if self.mechanism == GAUSSIAN else math.sqrt(discrete_laplace_variance(s))",
                    "return 2 * math.sqrt(s) if self.mechanism == GAUSSIAN else math.sqrt(discrete_laplace_variance(s))"),),
             (f"{SPREAD}::test_avg_parts_spread",)),
    Mutation("per_group_noise_uses_smallest_threshold",
             "per-group thresholds: every cell is noised for the smallest T while its receipt states its own",
             (Patch("dpsql/pipeline/release.py", "            groups.append([slot[s] for s in sens])",
                    "            groups.append([slot[min(sens)] for s in sens])"),),
             (f"{SPREAD}::test_per_group_threshold_sum_spread",)),
    Mutation("ungrouped_cell_uses_default_threshold",
             "a cell not grouped by the override key is noised for the default T, not the largest",
             (Patch("dpsql/pipeline/release.py", "return [m.max_threshold] * len(domain)",
                    "return [m.threshold] * len(domain)"),),
             ("tests/test_release.py::test_per_group_sensitivity",)),
    Mutation("sigma2_formula_quartered",
             "σ² = Δ²/(8ρ) instead of Δ²/(2ρ): receipts and noise agree, but the charge is 4× too small",
             (Patch("dpsql/privacy/mechanisms.py", "return Fraction(delta * delta) / (2 * exact_positive(rho, \"rho\"))",
                    "return Fraction(delta * delta) / (8 * exact_positive(rho, \"rho\"))"),),
             ("tests/test_release.py::test_receipt_sigma_for_sum_and_count",
              "tests/test_mechanisms.py::test_gaussian_sigma2_and_geometric_scale_exact")),
    Mutation("tsgd_noise_halved",
             "the truncated-geometric count (released as the COUNT) gets about half its noise",
             (Patch("dpsql/privacy/tsgd.py", "noisy = flat + sample_truncated_geometric(eps, k, rng, size=flat.size)",
                    "noisy = flat + sample_truncated_geometric(eps * 2, k, rng, size=flat.size)"),),
             (f"{SPREAD}::test_thresholded_count_spread",)),
    Mutation("empty_groups_not_noised",
             "cells of a public keyset with no unit are released as an exact 0",
             (Patch("dpsql/pipeline/release.py", "noisy = exact + noise\n", "noisy = np.where(exact != 0, exact + noise, 0)\n"),),
             (f"{SPREAD}::test_count_spread_including_empty_groups",)),
    Mutation("finish_on_exact_values",
             "the finish stage (HAVING / ORDER BY / LIMIT and the output) runs on the exact values",
             (Patch("dpsql/pipeline/release.py", "columns[primitive_column(i)] = as_array(noisy, g)",
                    "columns[primitive_column(i)] = as_array(exact, g)"),
              Patch("dpsql/pipeline/release.py", "        del exact\n", "        pass\n")),
             (f"{SPREAD}::test_count_spread_including_empty_groups",
              "tests/test_fuzz.py::test_released_values_are_never_the_exact_answer")),
    # ------------------------------------------------------------------ partition selection
    Mutation("tsgd_threshold_weakened",
             "truncated-geometric selection releases groups whose noisy count is up to 3 below k",
             (Patch("dpsql/privacy/tsgd.py", "released = noisy > k", "released = noisy > k - 3"),),
             ("tests/test_selection.py::test_thresholded_release_frequency_matches_eq8",
              f"{SPREAD}::test_thresholded_count_spread")),
    Mutation("optimal_selection_weakened",
             "the optimal selection keeps a group of n units with probability π(2n)",
             (Patch("dpsql/privacy/selection.py", "idx = np.minimum(flat, tab.ones)", "idx = np.minimum(2 * flat, tab.ones)"),),
             ("tests/test_selection.py::test_select_frequency_matches_pi",)),
    # units in up to kappa groups (issue 31): selection_kappa.py and P(u) in policy_function.py, not yet on the query path
    Mutation("kappa_selection_ignores_kappa",
             "pi_opt for units in kappa groups runs every group at the whole (ε, δ) instead of (ε/κ, δ/κ)",
             (Patch("dpsql/privacy/selection_kappa.py", "return per_partition_budget(epsilon, delta, _kappa(kappa))",
                    "return per_partition_budget(epsilon, delta, 1)"),),
             (f"{KAPPA}::test_budget_is_divided_by_kappa",
              f"{KAPPA}::test_select_kappa_keeps_with_pi_at_the_divided_budget")),
    Mutation("kappa_gaussian_sensitivity_1",
             "Gaussian thresholding calibrates σ to L2 sensitivity 1 although a unit moves κ counts (√κ)",
             (Patch("dpsql/privacy/selection_kappa.py", "sigma = analytic_gaussian_sigma(eps, noise_delta, math.sqrt(kappa))",
                    "sigma = analytic_gaussian_sigma(eps, noise_delta, 1.0)"),),
             (f"{KAPPA}::test_gaussian_thresholding_parameters",)),
    Mutation("kappa_threshold_delta_not_split",
             "Gaussian thresholding gives each of a unit's κ new groups the whole threshold δ",
             (Patch("dpsql/privacy/selection_kappa.py", "p = -math.expm1(math.log1p(-threshold_delta) / kappa)",
                    "p = threshold_delta"),),
             (f"{KAPPA}::test_gaussian_thresholding_parameters",
              f"{KAPPA}::test_gaussian_thresholding_simulated_on_neighbours")),
    Mutation("unit_policy_loss_not_summed",
             "P(u) counts only the last of a unit's groups instead of Σ_g ρ·|A_g(u)|²",
             (Patch("dpsql/privacy/policy_function.py", "total += r * int(a) * int(a)", "total = r * int(a) * int(a)"),),
             (f"{KAPPA}::test_unit_policy_loss_sums_squares_over_groups",
              f"{KAPPA}::test_unit_policy_loss_is_the_renyi_divergence_of_the_gaussian_cells",
              f"{MANY}::test_policy_function_of_a_unit_over_its_groups")),
    # ------------------------------------------------------------------ many rows per unit (sql/units.py)
    Mutation("many_rows_bounding_skipped",
             "a unit with many rows keeps all its groups, not κ: it moves more cells than P(u) states",
             (Patch("dpsql/sql/units.py", "ORDER BY {hashed}, {', '.join(names)}) <= {t.max_groups}",
                    "ORDER BY {hashed}, {', '.join(names)}) <= {t.max_groups} + 1000"),),
             (f"{MANY}::test_a_unit_in_ten_groups_with_kappa_three_is_in_exactly_three",)),
    Mutation("many_rows_totals_not_top_coded",
             "a (unit, group) record's total is not top-coded at max_splits·T: |A_g(u)| exceeds max_splits",
             (Patch("dpsql/sql/units.py", "    if k is None:", "    if True:"),),
             (f"{MANY}::test_a_unit_in_ten_groups_with_kappa_three_is_in_exactly_three",)),
    Mutation("many_rows_salt_fixed",
             "the bounding's salt is a constant instead of a fresh secret per query: the kept groups are predictable",
             (Patch("dpsql/sql/units.py", "salt = int(rng.bits63(1)[0])", "salt = 0"),),
             (f"{MANY}::test_the_salt_is_drawn_per_query",)),
    Mutation("many_rows_row_count_sensitivity_one",
             "COUNT(*) over many rows is calibrated to sensitivity 1 although a split carries row_threshold rows",
             (Patch("dpsql/policy/model.py", "return Measure(name, self.row_threshold)", "return Measure(name, 1)"),),
             (f"{MANY}::test_receipt_states_the_per_unit_bound_and_row_sensitivity",
              f"{MANY}::test_row_count_noise_has_the_stated_spread")),
    Mutation("many_rows_unit_check_skipped",
             "repeated units are accepted although the table does not declare max_groups (single-row sensitivity)",
             (Patch("dpsql/policy/check.py", "    if tp.many_rows:", "    if True:"),),
             (f"{MANY}::test_repeated_units_without_max_groups_are_still_refused",)),
    Mutation("many_rows_unit_bound_not_times_kappa",
             "the receipt's per-unit bound forgets that a unit pays in each of its κ groups",
             (Patch("dpsql/pipeline/decide.py", "bound = k * table.max_splits**2 * rho if table.max_splits else None",
                    "bound = table.max_splits**2 * rho if table.max_splits else None"),),
             (f"{MANY}::test_receipt_states_the_per_unit_bound_and_row_sensitivity",)),
    Mutation("many_rows_safetab_accepted",
             "SafeTab runs on a table of many rows per unit although its levels' composition assumes one row per person",
             (Patch("dpsql/workload/safetab.py", "    if d.plan.table.many_rows:", "    if False:"),),
             ("tests/test_workload.py::test_safetab_on_a_many_row_table_is_refused_before_reading",)),
    Mutation("many_rows_selection_kappa_ignored",
             "partition selection on a many-row table keeps each group at (ε, δ) although a unit is in κ groups",
             (Patch("dpsql/pipeline/release.py", "keep = select_kappa(n, sel.epsilon, sel.delta, kappa, rng)",
                    "keep = select_kappa(n, sel.epsilon, sel.delta, 1, rng)"),),
             (f"{MANY}::test_selection_runs_at_epsilon_over_kappa",)),
    Mutation("capped_null_becomes_minus_cap",
             "with max_splits a NULL measure is top-coded to −K·T (DuckDB's GREATEST skips NULL): its record moves "
             "a SUM by K splits while P(r) charges one",
             (Patch("dpsql/sql/rewrite.py",
                    'value = f"CASE WHEN {value} < -{cap} THEN -{cap} WHEN {value} > {cap} THEN {cap} ELSE {value} END"',
                    'value = f"LEAST(GREATEST({value}, -{cap}), {cap})"'),),
             ("tests/test_splitting.py::test_a_null_measure_adds_nothing_under_max_splits",)),
    Mutation("session_selection_delta_raised",
             "the session runs the selection with 10× the δ the policy states and the ledger charges",
             (Patch("dpsql/pipeline/release.py", "keep = select(n, sel.epsilon, sel.delta, rng)",
                    "keep = select(n, sel.epsilon, sel.delta * 10, rng)"),),
             (f"{SPREAD}::test_optimal_selection_release_rate",)),
    # ------------------------------------------------------------------ the budget
    Mutation("charge_check_removed",
             "Ledger.charge records a charge the remaining budget cannot cover (the binding check)",
             (Patch("dpsql/ledger/book.py", "refusal = self._refusal(charge.rho, charge.delta, s)", "refusal = None"),),
             (f"{REFUSALS}::test_ledger_charge_refuses_over_budget_and_records_nothing",
              f"{REFUSALS}::test_charge_is_binding_when_two_sessions_pass_the_early_check",
              f"{REFUSALS}::test_charge_is_binding_when_the_early_check_is_bypassed")),
    Mutation("charge_check_removed_two_sessions",
             "as charge_check_removed, caught end to end: two sessions that both passed the early check",
             (Patch("dpsql/ledger/book.py", "refusal = self._refusal(charge.rho, charge.delta, s)", "refusal = None"),),
             (f"{REFUSALS}::test_charge_is_binding_when_two_sessions_pass_the_early_check",)),
    # ------------------------------------------------------------------ the privacy unit
    Mutation("unit_check_skipped",
             "a private table whose unit repeats is answered (every sensitivity is then wrong)",
             (Patch("dpsql/policy/check.py", "if not engine.units_unique(table, tp.privacy_unit):", "if False:"),),
             (f"{REFUSALS}::test_repeated_units_refuse_every_query_and_charge_nothing",)),
    Mutation("unit_scan_always_passes",
             "the engine's one-row-per-unit scan is assumed to pass",
             (Patch("dpsql/backends/duckdb.py", "_UNIQUE_UNITS[key] = self._units_unique_scan(table, unit)", "_UNIQUE_UNITS[key] = True"),),
             (f"{REFUSALS}::test_repeated_units_refuse_every_query_and_charge_nothing",)),
    Mutation("guided_sampler_decides_inside_the_margin",
             "the float-guided sampler takes decisions closer than its float error bound allows",
             (Patch("dpsql/privacy/guided.py",
                    "if sure or (k >= 0 and uf < exp(-k * lamf) - MARGIN and uf > exp(-(k + 1) * lamf) + MARGIN):",
                    "if sure or (k >= 0 and uf < exp(-k * lamf) + MARGIN and uf > exp(-(k + 1) * lamf) - MARGIN):"),),
             ("tests/test_guided_samplers.py::test_float_decisions_next_to_the_boundaries_are_the_exact_ones",)),
    # ------------------------------------------------------------------ quantiles
    Mutation("quantile_epsilon_doubled",
             "the exponential mechanism runs at twice the epsilon its charge covers",
             (Patch("dpsql/privacy/quantile.py", "num, den = epsilon.numerator, 2 * delta * epsilon.denominator",
                    "num, den = epsilon.numerator, delta * epsilon.denominator"),),
             ("tests/test_quantiles.py::test_sampler_draws_the_exponential_mechanisms_distribution",)),
    Mutation("quantile_charge_ignores_epsilon",
             "a quantile runs at the largest epsilon, whatever its charge",
             (Patch("dpsql/privacy/quantile.py", "eps = Fraction(math.isqrt(int(8 * rho * _EPS_DIGITS**2)), _EPS_DIGITS)",
                    "eps = Fraction(math.isqrt(int(800 * rho * _EPS_DIGITS**2)), _EPS_DIGITS)"),),
             ("tests/test_quantiles.py::test_epsilon_is_the_largest_six_decimal_value_the_charge_covers",)),
    # ------------------------------------------------------------------ messages
    Mutation("refusal_scrubbing_removed",
             "DuckDB's message (which quotes the value a cast failed on) reaches the analyst",
             (Patch("dpsql/backends/duckdb.py",
                    'f"the database could not run the rewritten query ({type(exc).__name__}); its message is withheld "',
                    'f"the database could not run the rewritten query ({exc}); its message is withheld "'),),
             (f"{REFUSALS}::test_engine_withholds_duckdb_messages",)),
    # ------------------------------------------------------------------ accuracy-first budgets
    Mutation("moe_nudge_unbounded",
             "the accuracy-first nudge loop has no bound: a σ formula that never fits hangs the query",
             (Patch("dpsql/privacy/allocate.py", "    if steps >= MAX_NUDGES:", "    if False:"),),
             ("tests/test_mechanisms.py::test_moe_nudge_loop_is_bounded",)),
    Mutation("substr_any_bound_total",
             "SUBSTR with any literal bound runs bare: the free binary search of issue 12 is back",
             (Patch("dpsql/sql/totality.py", "b is None or _int_literal_within(b, SUBSTR_BOUND)",
                    "b is None or isinstance(b, exp.Literal)"),),
             ("tests/test_guarantee.py::test_substr_bounds_no_longer_tell_whether_a_row_matched",)),
    Mutation("decimal_scale_ignored",
             "an integer compared with a decimal of any scale runs bare (a cast to DECIMAL(38,31) per row)",
             (Patch("dpsql/sql/totality.py", "return SqlType(\"decimal\", f\"DECIMAL({width},{scale})\", width, scale) if width <= MAX_DECIMAL_WIDTH else None",
                    "return SqlType(\"decimal\", f\"DECIMAL({width},{scale})\", width, scale)"),),
             ("tests/test_totality.py::test_every_expression_the_allow_list_calls_total_evaluates_on_extremes",)),
    Mutation("where_never_try",
             "every WHERE conjunct runs bare",
             (Patch("dpsql/sql/rewrite.py", "if condition_total(p, schema)", "if True"),),
             ("tests/test_guarantee.py::test_conditions_that_fail_on_big_values_answer_on_both_neighbours",)),
    Mutation("no_backstop_charge",
             "a failure after the exact query began is not charged",
             (Patch("dpsql/session.py", "charge_id: int | None = self.ledger.charge(charge)",
                    "charge_id: int | None = None"),),
             ("tests/test_guarantee.py::test_a_failure_after_the_data_was_read_is_charged_with_a_fixed_message",
              "tests/test_workload.py::test_a_failure_after_the_first_query_read_rows_charges_the_whole_workload")),
    Mutation("session_without_lock",
             "threads sharing a connection are not serialised",
             (Patch("dpsql/session.py", "self._lock = threading.RLock()", "self._lock = contextlib.nullcontext()"),
              Patch("dpsql/session.py", "import threading\n", "import threading\nimport contextlib\n")),
             ("tests/test_guarantee.py::test_threads_sharing_a_connection_never_overspend",)),
    Mutation("plan_cache_ignores_the_policy",
             "a session is served a plan made under another policy (its keys, thresholds, budget split)",
             (Patch("dpsql/sql/plan_cache.py", "parts = (analyst, policy.digest, str(policy.path), sorted(policy.parquet.items()),",
                    "parts = (analyst, None, str(policy.path), sorted(policy.parquet.items()),"),),
             ("tests/test_plan_cache.py::test_a_session_on_another_policy_never_gets_the_plan_made_under_the_first",)),
    Mutation("plan_cache_shared_by_analysts",
             "one analyst's sessions are served plans another analyst's queries made (their texts leak by timing)",
             (Patch("dpsql/sql/plan_cache.py", "def context(policy: Policy, schema: dict[str, dict[str, str]], not_null: dict[str, set[str]], analyst: str) -> Any:",
                    "def context(policy: Policy, schema: dict[str, dict[str, str]], not_null: dict[str, set[str]], analyst_: str, analyst: str = '') -> Any:"),),
             ("tests/test_plan_cache.py::test_analysts_do_not_share_plans",)),
    Mutation("twin_check_skipped",
             "a query the empty twin would refuse reaches the rows (its run-time error, charged or not, depends on them)",
             (Patch("dpsql/session.py", "        if key is None or key not in check_record.RECORDS:",
                    "        if key is None and key not in check_record.RECORDS:"),),
             ("tests/test_check_record.py::test_a_refusal_is_never_recorded",
              "tests/test_guarantee.py::test_errors_that_do_not_depend_on_rows_are_refused_free")),
    Mutation("twin_check_record_shared_by_analysts",
             "one analyst's queries skip the twin because another's passed (their texts leak by timing)",
             (Patch("dpsql/session.py", "        key = check_record.key(self._plan_context, self.engine.check_identity, query)",
                    "        key = check_record.key('shared', self.engine.check_identity, query)"),),
             ("tests/test_check_record.py::test_another_analyst_checks_again",)),
    Mutation("plan_record_shared_by_contexts",
             "a plan recorded under one analyst or policy answers another's query (a stale plan, or texts leaked by timing)",
             (Patch("dpsql/records/plan.py", "    return hashlib.sha256(repr((VERSION, code_identity(), context, sql)).encode()).hexdigest()",
                    "    return hashlib.sha256(repr((VERSION, code_identity(), sql)).encode()).hexdigest()"),),
             ("tests/test_plan_record.py::test_another_analyst_plans_again",
              "tests/test_plan_record.py::test_an_edited_policy_plans_again")),
    Mutation("plan_record_outlives_the_code",
             "a plan recorded by another dpsql or sqlglot is run by this one (a refusal added since is bypassed)",
             (Patch("dpsql/records/plan.py", "    return hashlib.sha256(repr((VERSION, code_identity(), context, sql)).encode()).hexdigest()",
                    "    return hashlib.sha256(repr((VERSION, context, sql)).encode()).hexdigest()"),),
             ("tests/test_plan_record.py::test_other_code_plans_again",)),
    Mutation("list_release_drops_noise",
             "a small answer, released in lists, is its exact values: the noise is drawn and not added",
             (Patch("dpsql/pipeline/release.py", "    noisy = [(0 if x is None else int(x)) + y for x, y in zip(exact, noise)]",
                    "    noisy = [(0 if x is None else int(x)) + 0 * y for x, y in zip(exact, noise)]"),),
             ("tests/test_release_lists.py::test_lists_and_arrays_give_the_same_answer",
              f"{SPREAD}::test_count_spread_including_empty_groups")),
    Mutation("plan_record_skips_selection",
             "a recorded plan treats private keys as public: their groups are released without partition selection",
             (Patch("dpsql/records/plan.py", "    keys = tuple(GroupKey(name, None, label, tuple(sources), bool(public), column,",
                    "    keys = tuple(GroupKey(name, None, label, tuple(sources), True, column,"),),
             ("tests/test_plan_record.py::test_a_recorded_plan_answers_as_the_plan_made_afresh",)),
)


class MutationListError(Exception):
    """A patch of the list no longer applies: its old text is missing or not unique."""


def patch_problems(root: Path = ROOT) -> list[str]:
    """Every patch whose old text does not occur exactly once in its file (empty: all apply)."""
    problems = []
    for m in MUTATIONS:
        for p in m.patches:
            path = root / p.file
            if not path.is_file():
                problems.append(f"{m.name}: {p.file} does not exist")
                continue
            n = path.read_text().count(p.old)
            if n != 1:
                problems.append(f"{m.name}: {p.file} holds the old text {n} times, not once: {p.old.strip()!r}")
    return problems


def apply_mutation(mutation: Mutation, root: Path) -> None:
    """Apply ``mutation`` to the copy at ``root``; fail loudly if a patch does not apply or the
    patched file no longer compiles (a mutation must be a running program, not a syntax error)."""
    for p in mutation.patches:
        path = root / p.file
        text = path.read_text()
        n = text.count(p.old)
        if n != 1:
            raise MutationListError(f"{mutation.name}: {p.file} holds the old text {n} times, not once: {p.old.strip()!r}")
        path.write_text(text.replace(p.old, p.new))
    for file in {p.file for p in mutation.patches}:
        try:
            compile((root / file).read_text(), str(root / file), "exec")
        except SyntaxError as exc:
            raise MutationListError(f"{mutation.name}: the patched {file} does not compile: {exc}") from None


def copy_repository(dest: Path) -> Path:
    """A copy of the working tree without VCS data, caches or local databases."""
    repo = dest / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", ".pytest_cache", ".hypothesis", ".benchmarks", "*.egg-info",
        "*.sqlite", "*.sqlite-wal", "*.sqlite-shm", "*.duckdb", "*.duckdb.wal"))
    return repo


def run_tests(repo: Path, node_ids: tuple[str, ...], timeout: float) -> tuple[int | None, str]:
    """pytest on ``node_ids`` in the copy at ``repo``; (exit code or None on time-out, output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", *node_ids]
    try:
        proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return None, out
    return proc.returncode, proc.stdout + proc.stderr


def run_mutation(mutation: Mutation, timeout: float) -> tuple[str, str, float]:
    """(status, detail, seconds): status is "killed", "survived" or "error"."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"dpsql-mutant-{mutation.name}-") as tmp:
        repo = copy_repository(Path(tmp))
        try:
            apply_mutation(mutation, repo)
        except MutationListError as exc:
            return "error", str(exc), time.monotonic() - start
        code, out = run_tests(repo, mutation.killers, timeout)
    elapsed = time.monotonic() - start
    if code is None:
        return "error", f"timed out after {timeout:.0f} s", elapsed
    last = out.strip().splitlines()[-1] if out.strip() else ""
    if code == 1:
        return "killed", last, elapsed
    if code == 0:
        return "survived", last, elapsed
    return "error", f"pytest exit code {code}: " + "\n".join(out.strip().splitlines()[-15:]), elapsed


def baseline(mutations: list[Mutation], timeout: float) -> tuple[bool, str]:
    """The killing tests on an unmutated copy: they must pass."""
    ids = tuple(dict.fromkeys(i for m in mutations for i in m.killers))
    with tempfile.TemporaryDirectory(prefix="dpsql-mutant-baseline-") as tmp:
        code, out = run_tests(copy_repository(Path(tmp)), ids, timeout)
    return code == 0, "\n".join(out.strip().splitlines()[-15:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help="mutations to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and their killing tests")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="mutations run in parallel (default 1)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per pytest run (default 600)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the killing tests")
    args = parser.parse_args(argv)

    by_name = {m.name: m for m in MUTATIONS}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(unknown)} (see --list)")
    selected = [by_name[n] for n in args.names] if args.names else list(MUTATIONS)

    if args.list:
        for m in selected:
            print(f"{m.name}: {m.why}")
            for p in m.patches:
                print(f"    {p.file}: {p.old.strip()!r}\n    {' ' * len(p.file)}  -> {p.new.strip()!r}")
            for k in m.killers:
                print(f"    killed by {k}")
        return 0

    problems = [p for p in patch_problems() if p.split(":")[0] in {m.name for m in selected}]
    if problems:
        print("the mutation list no longer matches the code:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    if not args.no_baseline:
        ok, out = baseline(selected, args.timeout)
        if not ok:
            print("the killing tests fail on the unmutated code, so no mutation can be judged:\n" + out, file=sys.stderr)
            return 2
        print("baseline: the killing tests pass on the unmutated code")

    results: dict[str, tuple[str, str, float]] = {}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {m.name: pool.submit(run_mutation, m, args.timeout) for m in selected}
        for m in selected:
            status, detail, seconds = futures[m.name].result()
            results[m.name] = (status, detail, seconds)
            print(f"{status.upper():9} {m.name} ({seconds:.0f} s): {detail}", flush=True)

    counts = {s: sum(r[0] == s for r in results.values()) for s in ("killed", "survived", "error")}
    print(f"\n{counts['killed']} killed, {counts['survived']} survived, {counts['error']} errors "
          f"of {len(results)} mutations")
    if counts["error"]:
        return 2
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
