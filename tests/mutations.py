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

    python -m pytest -q -x -rf -n 0 -p no:cacheprovider <ids>  (cwd and PYTHONPATH: the copy)

A mutation is *killed* when pytest reports failing tests (exit code 1; the report names the
test that failed first, from pytest's ``-rf`` summary), *survived* when they
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
ORQ = "tests/test_oracles_quantile.py"
ORP = "tests/test_oracles_printed.py"
ORT = "tests/test_oracles_time_buckets.py"
ORC = "tests/test_oracles_composition.py"
ORR = "tests/test_oracles_release.py"
ORS = "tests/test_oracles_stale_plans.py"
ORTOT = "tests/test_oracles_totality.py"
ORROUTE = "tests/test_oracles_routing.py"
CRASH = "tests/test_ledger_crash_points.py"
ORCON = "tests/test_oracles_consumed.py"
WALL = "tests/test_server_wall.py"
MANY = "tests/test_many_rows.py"
MANYQ = "tests/test_many_rows_quantiles.py"
MANYR = "tests/test_many_rows_quantile_rows_by.py"
KAPPA_BY = "tests/test_many_rows_kappa_by.py"
SHARED = "tests/test_shared_units.py"
CHARGE = "tests/test_selection_charge.py"
REUSE = "dpsql/pipeline/reuse.py"
NULLS = "tests/test_null_keys.py"
REUSED = "tests/test_reuse.py"
DERIVED = "tests/test_derived_errors.py"
OWNER = "tests/test_owner_ledger.py"
OVER = "dpsql/intercept/over_answers.py"
OVERT = "tests/test_over_answers.py"
SERIESD = "tests/test_series_limit_derived.py"
OTHERS = "dpsql/intercept/series_others.py"
OTHERST = "tests/test_series_others.py"


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
             (Patch("dpsql/pipeline/release.py", "return [m.max_threshold ** power] * len(domain)",
                    "return [m.threshold ** power] * len(domain)"),),
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
    # units in up to kappa groups (issue 31): selection_kappa.py and P(u) in policy_function.py (on the query path: below)
    Mutation("kappa_selection_ignores_kappa",
             "pi_opt for units in kappa groups runs every group at the whole (ε, δ) instead of (ε/κ, δ/κ)",
             (Patch("dpsql/privacy/selection_kappa.py", "return per_partition_budget(epsilon, delta, _kappa(kappa))",
                    "return per_partition_budget(epsilon, delta, 1)"),),
             (f"{KAPPA}::test_budget_is_divided_by_kappa",
              f"{KAPPA}::test_select_kappa_keeps_with_pi_at_the_divided_budget",
              f"{MANY}::test_selection_runs_at_epsilon_over_kappa")),
    Mutation("kappa_gaussian_sensitivity_1",
             "Gaussian thresholding calibrates σ to L2 sensitivity 1 although a unit moves κ counts (√κ)",
             (Patch("dpsql/privacy/selection_kappa.py", "sigma = analytic_gaussian_sigma(eps, noise_delta, math.sqrt(kappa))",
                    "sigma = analytic_gaussian_sigma(eps, noise_delta, 1.0)"),),
             (f"{KAPPA}::test_gaussian_thresholding_parameters",
              f"{KAPPA}::test_discrete_thresholding_parameters_and_charge",
              f"{MANY}::test_gaussian_thresholding_runs_with_its_stated_parameters_and_charge")),
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
    # ------------------------------------------------------------------ groups without aggregates (issue 32)
    Mutation("no_aggregate_private_key_not_charged",
             "SELECT county FROM t GROUP BY county is taken for a public-keyset query: selection's ε²/2 and δ are never charged",
             (Patch("dpsql/pipeline/decide.py", "        return bool(self.plan.primitives) or self.selection is not None",
                    "        return bool(self.plan.primitives)"),),
             ("tests/test_no_aggregates.py::test_private_key_without_aggregate_charges_only_the_selection",)),
    Mutation("no_aggregate_public_keys_read_rows",
             "a public-keyset query without an aggregate runs on the private rows and writes a ledger record",
             (Patch("dpsql/pipeline/decide.py", "        return bool(self.plan.primitives) or self.selection is not None",
                    "        return True"),),
             ("tests/test_no_aggregates.py::test_public_keys_without_aggregate_are_the_keyset_free_and_read_nothing",)),
    # ------------------------------------------------------------------ variance and standard deviation (issue 32)
    Mutation("squares_sensitivity_not_squared",
             "the sum of split squares is noised for sensitivity T, not T²: a split moves it by up to T²",
             (Patch("dpsql/pipeline/release.py", '    power = 2 if p.kind == "sumsq" else 1  # a split adds at most T² to a sum of squares (sql/spread.py)',
                    "    power = 1"),),
             ("tests/test_variance.py::test_the_sensitivity_and_charge_of_the_squares",)),
    Mutation("squares_charged_as_a_constant_term",
             "the squares' ρ enters the policy function unscaled: a record of k splits pays ρ, not ρ·k²",
             (Patch("dpsql/pipeline/decide.py", '    split = ("sum", "sumsq")  # both pay ρ·|A(r)|²: a split adds at most T, or T² to the squares',
                    '    split = ("sum",)'),),
             ("tests/test_variance.py::test_the_sensitivity_and_charge_of_the_squares",)),
    Mutation("squares_of_whole_values",
             "a record adds x² (unbounded by its splits) to the sum of squares noised for T² per split",
             (Patch("dpsql/sql/spread.py",
                    '    return f"TRY_CAST(TRY({a} * {threshold} - ({a} % {threshold}) * ({threshold} - {a} % {threshold})) AS BIGINT)"',
                    '    return f"TRY_CAST(TRY({a} * {a}) AS BIGINT)"'),),
             ("tests/test_variance.py::test_without_noise_the_answer_is_the_estimand",)),
    Mutation("spread_moe_halved",
             "the delta-method σ of a variance is half the truth: its 95% MOE covers far less than 95%",
             (Patch("dpsql/pipeline/finish.py", "    sd = math.sqrt((dq * q_sd) ** 2 + (ds * s_sd) ** 2 + (dn * n_sd) ** 2)",
                    "    sd = math.sqrt((dq * q_sd) ** 2 + (ds * s_sd) ** 2 + (dn * n_sd) ** 2) / 2"),),
             ("tests/test_variance.py::test_error_and_moe_coverage",)),
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
             (Patch("dpsql/sql/salt.py", "salt = int(rng.bits63(1)[0])", "salt = 0"),),
             (f"{MANY}::test_the_salt_is_drawn_per_query",)),
    Mutation("many_rows_row_count_sensitivity_one",
             "COUNT(*) over many rows is calibrated to sensitivity 1 although a split carries row_threshold rows",
             (Patch("dpsql/policy/model.py", "return Measure(name, self.row_threshold)", "return Measure(name, 1)"),),
             (f"{MANY}::test_receipt_states_the_per_unit_bound_and_row_sensitivity",
              f"{MANY}::test_row_count_noise_has_the_stated_spread")),
    Mutation("many_rows_quantile_rows_unbounded",
             "a kept (unit, group) adds all its rows to the quantile's histogram, not r: one unit moves a score by more than r·Δ",
             (Patch("dpsql/sql/units.py", "limit, grouped, agg = t.quantile_rows,", "limit, grouped, agg = t.quantile_rows + 10**6,"),),
             (f"{MANYQ}::test_the_bounded_histogram_and_distinct_count_equal_the_python_oracle",
              f"{MANYQ}::test_the_heavy_unit_adds_r_values_to_each_of_kappa_groups")),
    Mutation("many_rows_quantile_tie_rank_across_units",
             "the row number joined to a sampled value's hash counts every unit's rows of that value, not the unit's own: "
             "a unit's sample then depends on other units' rows, and removing one unit changes others' samples",
             (Patch("dpsql/sql/units.py", "ROW_NUMBER() OVER (PARTITION BY {part}, {v}) AS __k",
                    "ROW_NUMBER() OVER (PARTITION BY {v}) AS __k"),),
             (f"{MANYQ}::test_the_bounded_histogram_and_distinct_count_equal_the_python_oracle",
              f"{MANYR}::test_each_grouping_samples_its_own_r_as_the_two_level_oracle")),
    Mutation("many_rows_quantile_epsilon_not_divided",
             "the exponential mechanism runs at ε although one unit moves a group's score by r·Δ (ε·r-DP per group)",
             (Patch("dpsql/pipeline/decide.py", "return replace(a, em_epsilon=a.em_epsilon / plan.table.quantile_rows)",
                    "return a"),),
             (f"{MANYQ}::test_the_sampler_receives_epsilon_over_r",
              f"{MANYQ}::test_the_released_median_follows_the_exponential_mechanism_at_epsilon_over_r")),
    # r per grouping (quantile_rows_by: policy/model.py grouping_rows, sql/units.py grouping_table)
    Mutation("quantile_rows_of_another_grouping_sampled",
             "the sample takes the largest declared r of any grouping while the mechanism runs at ε/r of the query's: "
             "one unit moves a score by more than r·Δ",
             (Patch("dpsql/sql/units.py", "limit, grouped, agg = t.quantile_rows,",
                    "limit, grouped, agg = max([t.quantile_rows, *t.quantile_rows_by.values()]),"),),
             (f"{MANYR}::test_each_grouping_samples_its_own_r_as_the_two_level_oracle",)),
    Mutation("quantile_rows_of_another_grouping_in_epsilon",
             "the mechanism runs at ε/r with the least declared r of any grouping while the sample takes the query's "
             "larger r: ε·r_q/r-DP per group",
             (Patch("dpsql/pipeline/decide.py", "return replace(a, em_epsilon=a.em_epsilon / plan.table.quantile_rows)",
                    "return replace(a, em_epsilon=a.em_epsilon / min([plan.table.quantile_rows, "
                    "*plan.table.quantile_rows_by.values()]))"),),
             (f"{MANYR}::test_the_sampler_receives_epsilon_over_the_groupings_r",)),
    Mutation("quantile_rows_by_ignored_in_the_sample",
             "the sample takes the table's quantile_rows while the mechanism runs at ε/r of the grouping: its noise "
             "and its sample disagree",
             (Patch("dpsql/sql/units.py", "limit, grouped, agg = t.quantile_rows,",
                    "limit, grouped, agg = t.quantile_rows if not t.quantile_rows_set else 10**6,"),),
             (f"{MANYR}::test_each_grouping_samples_its_own_r_as_the_two_level_oracle",)),
    Mutation("many_rows_distinct_values_unbounded",
             "a kept (unit, group) adds all its distinct values to COUNT(DISTINCT col), not R: its noise at Δ = R is too small",
             (Patch("dpsql/sql/units.py", "limit, grouped, agg = t.row_threshold,", "limit, grouped, agg = t.row_threshold + 10**6,"),),
             (f"{MANYQ}::test_the_bounded_histogram_and_distinct_count_equal_the_python_oracle",
              f"{MANYQ}::test_the_heavy_unit_adds_r_values_to_each_of_kappa_groups")),
    Mutation("many_rows_distinct_sensitivity_one",
             "COUNT(DISTINCT col) over many rows is calibrated to Δ = 1 although a unit adds up to row_threshold values",
             (Patch("dpsql/sql/plan.py", "        return table.row_threshold\n", "        return 1\n"),),
             (f"{MANYQ}::test_the_sampler_receives_epsilon_over_r",)),
    Mutation("many_rows_sample_outside_kept_groups",
             "quantile and distinct samples read rows of all a unit's groups, not only its κ kept ones",
             (Patch("dpsql/sql/units.py", "OVER (PARTITION BY __unit ORDER BY HASH(__unit, {by}, {SALT}), {by}) <= {t.max_groups}",
                    "OVER (PARTITION BY __unit ORDER BY HASH(__unit, {by}, {SALT}), {by}) <= {t.max_groups} + 1000"),),
             (f"{MANYQ}::test_the_heavy_unit_adds_r_values_to_each_of_kappa_groups",)),
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
             (Patch("dpsql/pipeline/columnar.py", "select_kappa(n, sel.epsilon, sel.delta, kappa, rng)",
                    "select_kappa(n, sel.epsilon, sel.delta, 1, rng)"),),
             (f"{MANY}::test_selection_runs_at_epsilon_over_kappa",
              f"{MANY}::test_optimal_selection_rate_with_kappa_three_matches_theorem_1")),
    Mutation("selection_tsgd_refusal_not_checked_in_phase_1",
             "a truncated geometric selection whose sampler cannot run (ε ≪ δ, or 1/ε past 2^57 or 62 bits) reaches the release",
             (Patch("dpsql/pipeline/decide.py", "        if (why := tsgd_refusal(sel.epsilon, sel.delta)) is not None:",
                    "        if False:"),),
             ("tests/test_selection_tail.py::test_hostile_selection_policies_are_planned_in_bounded_time_and_memory"
              "[1.2345678901234567e-5-1e-6-1-charge-DP213-truncated_geometric]",)),
    # geometric mode on many rows per unit: the pure-ε statement per unit E(u) (docs/privacy.md, "Pure ε per unit")
    Mutation("unit_epsilon_bound_not_summed_over_groups",
             "the receipt's pure-ε bound per unit forgets that a unit pays in each of its κ groups",
             (Patch("dpsql/privacy/policy_function.py", "        bound = k * max_splits * eps if max_splits else None",
                    "        bound = max_splits * eps if max_splits else None"),),
             ("tests/test_geometric_many_rows.py::test_a_whole_unit_neighbour_attains_the_bound",)),
    Mutation("unit_epsilon_loss_max_not_sum",
             "dpsql policy's E(u) takes the largest group's splits instead of summing over the unit's groups",
             (Patch("dpsql/privacy/policy_function.py", "    return Fraction(epsilon) * sum(int(a) for a in splits)",
                    "    return Fraction(epsilon) * max(int(a) for a in splits)"),),
             ("tests/test_geometric_many_rows.py::test_dpsql_policy_evaluates_e_of_u_for_a_unit",)),
    Mutation("unit_epsilon_gaussian_selection_called_pure",
             "Gaussian thresholding at the charge (zCDP only) is stated as an (ε, δ)-DP selection in E(u)",
             (Patch("dpsql/pipeline/decide.py",
                    '    return sel.epsilon if how.method == "optimal" or sel.kappa_rule == "paper" else None',
                    "    return sel.epsilon"),),
             ("tests/test_geometric_many_rows.py::test_no_pure_statement_where_none_holds",)),
    # what the receipt, `dpsql ledger` and \budget state for a unit of a many-row table (issue 31, task P)
    Mutation("receipt_unit_epsilon_skips_unbounded_terms",
             "the receipt's epsilon_unit_bound sums only the terms that have a bound: a number where none holds",
             (Patch("dpsql/pipeline/result.py", '    stated = [t for t in terms if "unit_epsilon_bound_exact" in t]',
                    '    stated = [t for t in terms if t.get("unit_epsilon_bound_exact", "None") != "None"]'),),
             ("tests/test_receipt_statements.py::test_geometric_receipt_says_none_where_no_pure_bound_holds",)),
    Mutation("ledger_unit_bound_reads_none_as_zero",
             "dpsql ledger bounds a unit's P(u) although a SUM without max_splits has no bound",
             (Patch("dpsql/privacy/policy_function.py", '            b = t.get("unit_bound_exact", "None")',
                    '            b = t.get("unit_bound_exact", "None").replace("None", "0")'),),
             ("tests/test_receipt_statements.py::test_ledger_says_no_bound_without_max_splits",)),
    Mutation("ledger_unit_bound_forgets_other_tables",
             "dpsql ledger's per-unit guarantee leaves out the rho spent on the other tables",
             (Patch("dpsql/privacy/policy_function.py", "    total = t.bound + spent - t.rho", "    total = t.bound"),),
             ("tests/test_receipt_statements.py::test_ledger_states_what_holds_for_a_unit_of_a_many_row_table",)),
    Mutation("selection_kappa_optimal_without_its_table",
             "a kappa > 1 selection picks pi_opt where its exact table does not fit: it fails after the rows are read",
             (Patch("dpsql/privacy/selection_gauss.py",
                    "    fits = opt > g.threshold or table_fits(epsilon / kappa, delta / kappa)  # asked only where π_opt would run",
                    "    fits = True"),),
             ("tests/test_receipt_statements.py::test_rule_when_pi_opts_midpoint_is_lower_but_its_table_does_not_fit",)),
    # phase 1 of a κ > 1 selection, bounded (task P): the tail's integral bound and the exact table's cap
    Mutation("selection_tail_bound_below_the_sum",
             "the Gaussian thresholding tail past 2^18 integrates from a + 1/2, below the mass it bounds: t too low",
             (Patch("dpsql/privacy/selection_gauss.py", "    b = a - 0.5 if a - 0.5 >= s else a - 1",
                    "    b = a + 0.5 if a - 0.5 >= s else a - 1"),),
             ("tests/test_selection_tail.py::test_the_integral_bound_is_sound_and_within_1e_5_of_the_sum",)),
    Mutation("selection_table_cap_not_checked_in_phase_1",
             "a selection epsilon too small for pi_opt's exact table reaches the release and fails after the rows (DP901)",
             (Patch("dpsql/pipeline/decide.py", "        if not table_fits(sel.epsilon, sel.delta):", "        if False:"),),
             ("tests/test_selection_tail.py::test_hostile_selection_policies_are_planned_in_bounded_time_and_memory"
              "[1e-6-1e-6-1-charge-DP213-optimal]",)),
    # κ per grouping (max_groups_by: policy/model.py grouping_kappa, sql/units.py grouping_table)
    Mutation("kappa_set_ignored",
             "a grouping by a declared set's columns is bounded, selected and accounted at the table's κ, not its κ_C",
             (Patch("dpsql/sql/planner.py", "table = units.grouping_table(table, policy, keys, scopes.joins)", "table = table"),),
             (f"{KAPPA_BY}::test_a_grouping_by_a_declared_set_is_bounded_at_its_kappa",
              f"{KAPPA_BY}::test_selection_runs_at_the_kappa_of_the_set")),
    Mutation("kappa_set_ignored_by_bounding",
             "the bounding keeps more groups per unit (the largest declared κ) than the κ_C selection and P(u) state",
             (Patch("dpsql/sql/units.py", "ORDER BY {hashed}, {', '.join(names)}) <= {t.max_groups}",
                    "ORDER BY {hashed}, {', '.join(names)}) <= {max([t.max_groups, *t.max_groups_by.values()])}"),),
             (f"{KAPPA_BY}::test_a_grouping_by_a_declared_set_is_bounded_at_its_kappa",
              f"{KAPPA_BY}::test_a_heavy_unit_keeps_kappa_c_groups_of_a_function_of_the_set")),
    Mutation("kappa_set_ignored_by_selection",
             "partition selection keeps groups at the largest declared κ, not the grouping's κ_C the charge states",
             (Patch("dpsql/pipeline/release.py", "_select(kept_of, counts, sel, rng, plan.table.max_groups or 1)",
                    "_select(kept_of, counts, sel, rng, max([plan.table.max_groups or 1, *plan.table.max_groups_by.values()]))"),
              # the same κ where a selection's exact rows come as columns (pipeline/columnar.py, issue 34)
              Patch("dpsql/pipeline/columnar.py", "keep, _ = keep_mask(cols.arrays[-1], d.selection, rng, d.plan.table.max_groups or 1,",
                    "keep, _ = keep_mask(cols.arrays[-1], d.selection, rng, max([d.plan.table.max_groups or 1, "
                    "*d.plan.table.max_groups_by.values()]),")),
             (f"{KAPPA_BY}::test_selection_runs_at_the_kappa_of_the_set",)),
    Mutation("kappa_set_applied_to_a_grouping_it_does_not_cover",
             "a declared set bounds a grouping that reads a column outside it (it holds only some of the keys' columns)",
             (Patch("dpsql/policy/model.py", "if columns <= {x for c, _ in combo for x in c}:",
                    "if columns & {x for c, _ in combo for x in c}:"),),
             (f"{KAPPA_BY}::test_the_kappa_of_a_grouping_is_the_least_cover",)),
    # κ > 1 selection on the query path (privacy/selection_gauss.py, sql/units.py's __first)
    Mutation("kappa_discrete_threshold_delta_not_split",
             "discrete Gaussian thresholding gives each of a unit's κ new groups the whole threshold δ",
             (Patch("dpsql/privacy/selection_gauss.py",
                    "    return -math.expm1(math.log1p(-threshold_delta) / kappa) * (1 - _SLACK)",
                    "    return threshold_delta"),),
             (f"{KAPPA}::test_discrete_thresholding_parameters_and_charge",
              f"{MANY}::test_gaussian_thresholding_runs_with_its_stated_parameters_and_charge",
              f"{CHARGE}::test_charge_calibration_spends_the_selection_charge_and_no_more")),
    Mutation("kappa_charge_sigma_without_kappa",
             "Gaussian thresholding at the selection's charge takes σ² = 1/ε² although a unit shifts κ counts: "
             "charged κ/(2σ²) = κ·ε²/2, κ times the selection's ε²/2",
             (Patch("dpsql/privacy/selection_gauss.py",
                    "sigma2 = Fraction(math.ceil(Fraction(kappa) / epsilon**2 * _GRID), _GRID)",
                    "sigma2 = Fraction(math.ceil(Fraction(1) / epsilon**2 * _GRID), _GRID)"),),
             (f"{CHARGE}::test_charge_calibration_spends_the_selection_charge_and_no_more",
              f"{CHARGE}::test_the_charge_is_the_renyi_divergence_of_the_kappa_shifted_discrete_gaussians")),
    Mutation("kappa_charge_sigma_rounded_down",
             "σ² = κ/ε² rounded down to the grid: the charge κ/(2σ²) passes the selection's ε²/2",
             (Patch("dpsql/privacy/selection_gauss.py",
                    "sigma2 = Fraction(math.ceil(Fraction(kappa) / epsilon**2 * _GRID), _GRID)",
                    "sigma2 = Fraction(math.floor(Fraction(kappa) / epsilon**2 * _GRID), _GRID)"),),
             (f"{CHARGE}::test_charge_calibration_spends_the_selection_charge_and_no_more",)),
    Mutation("kappa_rule_ignored_by_the_run",
             "the selection that runs ignores the policy's kappa_rule: a \"paper\" policy is charged the paper's "
             "small κ/(2σ²) while the run thresholds with the charge calibration's smaller σ",
             (Patch("dpsql/pipeline/columnar.py", "how = plan(sel.epsilon, sel.delta, kappa, sel.kappa_rule)",
                    "how = plan(sel.epsilon, sel.delta, kappa)"),),
             (f"{MANY}::test_gaussian_selection_rate_matches_the_discrete_gaussian_tail",)),
    Mutation("kappa_gaussian_charge_without_kappa",
             "Gaussian thresholding is charged 1/(2σ²) although a unit shifts κ noisy counts: κ/(2σ²)",
             (Patch("dpsql/privacy/selection_gauss.py",
                    "return Fraction(self.kappa) / (2 * self.sigma2), Fraction(self.threshold_delta)",
                    "return Fraction(1) / (2 * self.sigma2), Fraction(self.threshold_delta)"),),
             (f"{KAPPA}::test_discrete_thresholding_parameters_and_charge",
              f"{MANY}::test_gaussian_thresholding_runs_with_its_stated_parameters_and_charge",
              f"{CHARGE}::test_the_query_path_runs_and_charges_the_charge_calibration")),
    Mutation("kappa_gaussian_keeps_below_threshold",
             "discrete Gaussian thresholding keeps a group one unit below the threshold its δ_thr was computed for",
             (Patch("dpsql/privacy/selection_gauss.py", "return counts + z >= self.threshold",
                    "return counts + z + 1 >= self.threshold"),),
             (f"{KAPPA}::test_discrete_thresholding_keeps_with_the_closed_form_probability",)),
    Mutation("mixed_keys_selection_sums_cells",
             "with public and private keys and κ > 1 the selection sums the cells' unit counts: a unit in κ cells of "
             "one private group moves its count by κ",
             (Patch("dpsql/sql/units.py", """cols.append('SUM(CASE WHEN __r = 1 THEN 1 ELSE 0 END) AS "__n"')""",
                    """cols.append('COUNT(*) AS "__n"')"""),),
             (f"{MANY}::test_mixed_keys_select_on_distinct_units_per_private_group",)),
    Mutation("final_check_any_window_projection",
             "the final check admits any window function as a projection, not only ROW_NUMBER() without a frame",
             (Patch("dpsql/sql/final_check.py",
                    'if not isinstance(window.this, functions) or window.args.get("spec") is not None:',
                    "if False:"),),
             (f"{MANY}::test_the_mixed_key_rank_passes_the_final_check_and_tampered_forms_do_not",)),
    # ------------------------------------------------------------------ private tables joined on the unit (sql/scopes.py)
    Mutation("shared_units_join_on_any_column",
             "two private tables joined on a column that is not both units: a row meets rows of other units, "
             "so one unit's removal changes other units' joined rows",
             (Patch("dpsql/sql/scopes.py", "        if left != first.privacy_unit or mine[0].name.lower() != other.privacy_unit:",
                    "        if left is None:"),),
             (f"{SHARED}::test_joins_of_private_tables_other_than_on_the_units_are_refused_free",)),
    Mutation("shared_units_inexact_unit_equality",
             "unit columns joined by an inexact equality (a DOUBLE with a BIGINT): two units of one table meet "
             "one unit of the other, and removing one of them changes part of another unit's rows",
             (Patch("dpsql/sql/scopes.py", 'if not (a.kind == b.kind == "text" or {a.kind, b.kind} <= {"int", "decimal"}):',
                    'if not (a.kind == b.kind == "text" or {a.kind, b.kind} <= {"int", "decimal", "float"}):'),),
             (f"{SHARED}::test_unit_columns_that_cannot_match_exactly_are_refused_before_reading",)),
    Mutation("shared_units_private_column_as_public_key",
             "a column of the private table joined on the unit, with no keyset, is grouped by as if it were a "
             "public table's column: its private values become the released groups",
             (Patch("dpsql/sql/keys.py", " or name in scopes.scopes[0].columns or name in scopes.private_names:",
                    " or name in scopes.scopes[0].columns:"),),
             (f"{SHARED}::test_joins_of_private_tables_other_than_on_the_units_are_refused_free",)),
    Mutation("shared_units_private_values_read_as_keyset",
             "the joined private table's columns are listed as public columns: a declared key's groups are read "
             "from its private rows (which makers exist) instead of the policy's keyset",
             (Patch("dpsql/sql/planner.py", " for j in joins for c in j.columns if policy.table(j.table) is None}",
                    " for j in joins for c in j.columns}"),),
             (f"{SHARED}::test_answers_equal_the_joined_two_level_oracle",
              f"{SHARED}::test_the_joined_tables_plan_record_reads_back_the_joined_policy")),
    Mutation("capped_null_becomes_minus_cap",
             "with max_splits a NULL measure is top-coded to −K·T (DuckDB's GREATEST skips NULL): its record moves "
             "a SUM by K splits while P(r) charges one",
             (Patch("dpsql/sql/rewrite.py",
                    'value = f"CASE WHEN {value} < {low} THEN {low} WHEN {value} > {cap} THEN {cap} ELSE {value} END"',
                    'value = f"LEAST(GREATEST({value}, {low}), {cap})"'),),
             ("tests/test_splitting.py::test_a_null_measure_adds_nothing_under_max_splits",)),
    Mutation("session_selection_delta_raised",
             "the session runs the selection with 10× the δ the policy states and the ledger charges",
             (Patch("dpsql/pipeline/columnar.py", "keep = select(n, sel.epsilon, sel.delta, rng)",
                    "keep = select(n, sel.epsilon, sel.delta * 10, rng)"),),
             (f"{SPREAD}::test_optimal_selection_release_rate",)),
    # ------------------------------------------------------------------ the budget
    Mutation("charge_check_removed",
             "Ledger.charge records a charge the remaining budget cannot cover (the binding check)",
             (Patch("dpsql/ledger/group.py", "refusal = p.ledger._refusal(charge.rho, charge.delta, s)", "refusal = None"),),
             (f"{REFUSALS}::test_ledger_charge_refuses_over_budget_and_records_nothing",
              f"{REFUSALS}::test_charge_is_binding_when_two_sessions_pass_the_early_check",
              f"{REFUSALS}::test_charge_is_binding_when_the_early_check_is_bypassed")),
    Mutation("charge_check_removed_two_sessions",
             "as charge_check_removed, caught end to end: two sessions that both passed the early check",
             (Patch("dpsql/ledger/group.py", "refusal = p.ledger._refusal(charge.rho, charge.delta, s)", "refusal = None"),),
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
    # ------------------------------------------------------------------ many groups (issue 34): the batch sampler
    Mutation("batch_sampler_decides_inside_the_margin",
             "the vectorised sampler decides a geometric in floats closer to a boundary than its error bound allows",
             (Patch("dpsql/privacy/guided_round.py",
                    "sure[:] = ~bad & (uf < np.exp(-k * lamf) - MARGIN) & (uf > np.exp(-(k + 1.0) * lamf) + MARGIN)",
                    "sure[:] = ~bad & (uf < np.exp(-k * lamf) + MARGIN) & (uf > np.exp(-(k + 1.0) * lamf) - MARGIN)"),),
             ("tests/test_guided_samplers.py::test_float_decisions_next_to_the_boundaries_are_the_exact_ones",)),
    Mutation("batch_acceptance_decides_inside_the_margin",
             "the vectorised sampler accepts a Gaussian trial in floats closer to exp(-gamma) than its error bound allows",
             (Patch("dpsql/privacy/guided_round.py", "sure &= neg_zero | no | (ucf < pa - MARGIN)",
                    "sure &= neg_zero | no | (ucf < pa + MARGIN)"),),
             ("tests/test_guided_samplers.py::test_float_decisions_next_to_the_boundaries_are_the_exact_ones",)),
    Mutation("batch_sampler_first_cells_scale_for_all",
             "the vectorised sampler draws every cell's geometric at the first parameter set's rate (sigma not per cell)",
             (Patch("dpsql/privacy/guided_round.py", "lamf = lamf_g[0] if gi is None else lamf_g[gi]", "lamf = lamf_g[0]"),),
             ("tests/test_noise_distribution.py::test_mixed_sigma_vector",
              "tests/test_many_groups.py::test_a_batch_of_many_cells_draws_each_at_its_own_sigma")),
    Mutation("batch_acceptance_first_cells_sigma_for_all",
             "the vectorised sampler accepts every cell's trial at the first parameter set's sigma^2",
             (Patch("dpsql/privacy/guided_round.py", "s2 = s2_g[0] if gi is None else s2_g[gi]", "s2 = s2_g[0]"),),
             ("tests/test_many_groups.py::test_a_batch_of_many_cells_draws_each_at_its_own_sigma",)),
    Mutation("selection_first_groups_probability_for_all",
             "partition selection keeps every group with the first group's probability q(n_0), not its own",
             (Patch("dpsql/privacy/selection.py", "hi = tab.hi[idx]", "hi = tab.hi[idx[:1]].repeat(idx.size)"),),
             ("tests/test_selection.py::test_select_frequency_matches_pi",
              "tests/test_many_groups.py::test_4200_candidate_groups_through_partition_selection")),
    Mutation("selection_mask_off_by_one_group",
             "the rows kept for the exact lookup are another group's: released cells carry wrong exact values",
             (Patch("dpsql/pipeline/release.py", "(keep if group_of_row is None else keep[group_of_row])",
                    "(keep if group_of_row is None else keep[::-1][group_of_row])"),),
             ("tests/test_many_groups.py::test_public_and_private_keys_together_keep_each_groups_own_rows",)),
    # issue 34: a large answer's selection on its exact columns (pipeline/columnar.py)
    Mutation("columns_selection_on_first_aggregate",
             "selection on columns reads the query's first aggregate (a SUM) instead of the unit count",
             (Patch("dpsql/pipeline/columnar.py", "keep, _ = keep_mask(cols.arrays[-1], d.selection, rng, d.plan.table.max_groups or 1,",
                    "keep, _ = keep_mask(cols.arrays[nk], d.selection, rng, d.plan.table.max_groups or 1,"),),
             ("tests/test_columnar.py::test_selection_on_columns_counts_units_not_sums",)),
    Mutation("columns_selection_mask_inverted",
             "selection on columns releases the groups the draws did not keep",
             (Patch("dpsql/pipeline/columnar.py", "    rows = np.flatnonzero(keep)", "    rows = np.flatnonzero(~keep)"),),
             ("tests/test_columnar.py::test_selection_on_columns_counts_units_not_sums",
              "tests/test_many_groups.py::test_4200_candidate_groups_through_partition_selection")),
    # ------------------------------------------------------------------ quantiles
    Mutation("quantile_epsilon_doubled",
             "the exponential mechanism runs at twice the epsilon its charge covers",
             (Patch("dpsql/privacy/quantile.py", "num, den = epsilon.numerator, 2 * delta * epsilon.denominator",
                    "num, den = epsilon.numerator, delta * epsilon.denominator"),),
             ("tests/test_quantiles.py::test_sampler_draws_the_exponential_mechanisms_distribution",)),
    Mutation("em_runs_decides_inside_the_margin",
             "the quantile sampler accepts in floats closer to e^-gamma than its float error bound allows",
             (Patch("dpsql/privacy/em_runs.py", "accept = uf < wf - MARGIN", "accept = uf < wf + MARGIN"),),
             ("tests/test_quantile_runs.py::test_float_decisions_next_to_the_boundary_are_the_exact_ones",)),
    Mutation("em_runs_weights_at_twice_epsilon",
             "the quantile sampler's float weights (proposals and float decisions) use 2 epsilon",
             (Patch("dpsql/privacy/em_runs.py", "weight = np.exp(-(runs.d.astype(float) * (num / den)))",
                    "weight = np.exp(-(runs.d.astype(float) * (2 * num / den)))"),),
             ("tests/test_quantile_runs.py::test_draws_of_many_groups_follow_the_naive_mechanism",)),
    Mutation("em_runs_scores_off_by_one_bin",
             "a run's #{x < c} also counts the values equal to c: scores no longer the mechanism's",
             (Patch("dpsql/privacy/em_runs.py", "below = cum[np.searchsorted(ekey, owner * width + 2 * starts, side=\"right\")]",
                    "below = cum[np.searchsorted(ekey, owner * width + 2 * starts + 1, side=\"right\")]"),),
             ("tests/test_quantile_runs.py::test_runs_hold_each_candidates_score_counted_directly",)),
    Mutation("value_bin_table_shares_a_bucket",
             "the bucket table of value_positions accepts buckets holding two candidates: a value between them is counted in the wrong bin",
             (Patch("dpsql/privacy/em_bins.py", "if np.all(cb[1:] > cb[:-1]):  # each candidate its own bucket (β is non-decreasing)",
                    "if np.all(cb[1:] >= cb[:-1]):  # each candidate its own bucket (β is non-decreasing)"),),
             ("tests/test_quantile_runs.py::test_value_entries_count_each_group_into_the_histograms_bins",
              "tests/test_quantile_binned.py::test_value_counts_equal_the_histograms_on_hostile_bigints")),
    Mutation("value_bin_equal_counted_above",
             "a value equal to its bucket's candidate is counted in the bin above it: counts no longer the data's",
             (Patch("dpsql/privacy/em_bins.py", "np.greater(x, c, out=gt[:x.size])", "np.greater_equal(x, c, out=gt[:x.size])"),),
             ("tests/test_quantile_runs.py::test_value_entries_count_each_group_into_the_histograms_bins",)),
    Mutation("value_bin_search_equal_below",
             "the binary search (grids the bucket table cannot separate) counts values below a candidate as equal to it",
             (Patch("dpsql/privacy/em_bins.py", "out += c[np.minimum(i, c.size - 1)] == v", "out += c[np.minimum(i, c.size - 1)] >= v"),),
             ("tests/test_quantile_runs.py::test_value_entries_count_each_group_into_the_histograms_bins",)),
    Mutation("values_int32_past_its_end",
             "a grid whose top end is one past INTEGER's lists its values as INTEGER: TRY_CAST makes the values above it NULL, left out of the counts",
             (Patch("dpsql/sql/quantiles.py", "return -2**31 <= candidates[0] - 1 and candidates[-1] + 1 <= 2**31 - 1",
                    "return -2**31 <= candidates[0] - 1 and candidates[-1] + 1 <= 2**31"),),
             ("tests/test_quantile_binned.py::test_value_counts_equal_the_histograms_on_hostile_bigints",)),
    Mutation("value_draw_chunk_drops_its_last_group",
             "a chunk of groups drawn from their values loses its last group's entries: that group is drawn as if empty",
             (Patch("dpsql/privacy/quantile.py", "a, b = edges[start], edges[stop]", "a, b = edges[start], edges[stop - 1]"),),
             ("tests/test_quantile_runs.py::test_draws_of_many_groups_from_values_follow_the_naive_mechanism",)),
    Mutation("em_runs_dense_scores_off_by_one_bin",
             "the dense runs' #{x < c_i} counts the values equal to c_i in place of those just below it: scores no longer the mechanism's",
             (Patch("dpsql/privacy/em_runs.py", "np.add(c[:, 0:2 * m:2], c[:, 1:2 * m:2], out=s)",
                    "np.add(c[:, 1:2 * m:2], c[:, 1:2 * m:2], out=s)"),),
             ("tests/test_quantile_runs.py::test_runs_hold_each_candidates_score_counted_directly",)),
    Mutation("em_runs_dense_quantile_scores_off_by_one_bin",
             "the dense runs of a quantile other than the median count the values equal to c_i as below it: scores no longer the mechanism's",
             (Patch("dpsql/privacy/em_runs.py", "np.multiply(c[:, 0:2 * m:2], b - a, out=s)", "np.multiply(c[:, 1:2 * m:2], b - a, out=s)"),),
             ("tests/test_quantile_runs.py::test_runs_hold_each_candidates_score_counted_directly",)),
    Mutation("groups_in_place_counted_as_the_next",
             "big groups' positions found in place are offset to the next group's counters: each group drawn from its neighbour's values",
             (Patch("dpsql/privacy/em_bins.py", "value_positions(a, grid, key[ends[r] - a.size:ends[r]], r * width)",
                    "value_positions(a, grid, key[ends[r] - a.size:ends[r]], (r + 1) * width)"),),
             ("tests/test_quantile_runs.py::test_value_entries_count_each_group_into_the_histograms_bins",)),
    Mutation("value_positions_int32_compares_past_int32",
             "int32 values are compared with candidates cast to int32 although a candidate does not fit one: it wraps, values land in the wrong bins",
             (Patch("dpsql/privacy/em_bins.py", "c32 = cands[i].astype(np.int32) if -2**31 <= cands[0] and cands[-1] < 2**31 else None",
                    "c32 = cands[i].astype(np.int32)"),),
             ("tests/test_quantile_runs.py::test_value_entries_count_each_group_into_the_histograms_bins",)),
    Mutation("dense_scores_past_int64",
             "counters whose scores could pass int64 are scored densely in int64: the scores wrap around",
             (Patch("dpsql/privacy/em_runs.py", "return (n.size <= DENSE_COUNTERS and int(n.sum()) * q.denominator < 2**61",
                    "return (n.size <= DENSE_COUNTERS"),),
             ("tests/test_quantile_runs.py::test_counters_whose_scores_could_pass_int64_are_not_scored_densely",)),
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
             (Patch("dpsql/sql/sql_types.py", "return SqlType(\"decimal\", f\"DECIMAL({width},{scale})\", width, scale) if width <= MAX_DECIMAL_WIDTH else None",
                    "return SqlType(\"decimal\", f\"DECIMAL({width},{scale})\", width, scale)"),),
             ("tests/test_totality.py::test_every_expression_the_allow_list_calls_total_evaluates_on_extremes",)),
    # ------------------------------------------------- the final SQL is total (issue 29, final_check.py)
    Mutation("final_check_skipped",
             "the exact query is not checked on its final text: a fragment dpsql writes unguarded reaches DuckDB",
             (Patch("dpsql/sql/rewrite.py", "    check_final(sql, schema)  # the one check of the text that runs, whoever wrote each part of it",
                    "    pass"),),
             ("tests/test_hostile_schemas.py::test_a_fragment_dpsql_writes_unguarded_is_refused_before_any_row_is_read",)),
    Mutation("join_cast_unguarded",
             "a join across types compares bare (BIGINT = DECIMAL(38,31) casts each row's value and fails from 10^7)",
             (Patch("dpsql/sql/rewrite.py", 'return f"TRY_CAST({_q(left)} AS {to}) = TRY_CAST({_q(key)} AS {to})"', "return bare"),),
             ("tests/test_hostile_schemas.py::test_a_join_across_types_cannot_fail_on_one_row",)),
    Mutation("join_unguarded_and_unchecked",
             "the join compares bare and the final check is skipped: one row decides between an answer and DP901",
             (Patch("dpsql/sql/rewrite.py", 'return f"TRY_CAST({_q(left)} AS {to}) = TRY_CAST({_q(key)} AS {to})"', "return bare"),
              Patch("dpsql/sql/rewrite.py", "    check_final(sql, schema)  # the one check of the text that runs, whoever wrote each part of it",
                    "    pass")),
             ("tests/test_hostile_schemas.py::test_a_join_across_types_cannot_fail_on_one_row",
              "tests/test_hostile_schemas.py::test_generated_schemas_and_policies_do_not_let_one_unit_decide_the_outcome")),
    Mutation("join_cast_rounds",
             "the guarded join compares in the smaller scale: 1.005 rounds to 1 and meets key 1 (a row joins a group it is not in)",
             (Patch("dpsql/sql/rewrite.py", 'else f"DECIMAL({MAX_DECIMAL_WIDTH},{max(a.scale, b.scale)})"',
                    'else f"DECIMAL({MAX_DECIMAL_WIDTH},{min(a.scale, b.scale)})"'),),
             ("tests/test_hostile_schemas.py::test_a_join_across_types_matches_exactly_the_equal_values",)),
    Mutation("scaling_product_unguarded",
             "a measure is scaled to its granularity in its own type (INTEGER * 100 overflows per row)",
             (Patch("dpsql/sql/rewrite.py", 'scaled = col if ctype in ("DOUBLE", "FLOAT", "REAL") else f"CAST({col} AS DOUBLE)"',
                    "scaled = col"),),
             ("tests/test_hostile_schemas.py::test_a_measure_scaled_to_its_granularity_cannot_fail_on_one_row",)),
    Mutation("scaling_unguarded_and_unchecked",
             "the scaling product in the column's type and no final check: one row decides between an answer and DP901",
             (Patch("dpsql/sql/rewrite.py", 'scaled = col if ctype in ("DOUBLE", "FLOAT", "REAL") else f"CAST({col} AS DOUBLE)"',
                    "scaled = col"),
              Patch("dpsql/sql/rewrite.py", "    check_final(sql, schema)  # the one check of the text that runs, whoever wrote each part of it",
                    "    pass")),
             ("tests/test_hostile_schemas.py::test_a_measure_scaled_to_its_granularity_cannot_fail_on_one_row",)),
    Mutation("spark_check_skipped",
             "the Spark form of the exact query is not checked: an untranslated DuckDB function reaches Spark",
             (Patch("dpsql/backends/spark_sql.py", "        check_total(tree)", "        pass"),),
             ("tests/test_hostile_schemas.py::test_the_spark_form_of_the_exact_query_holds_only_known_forms",)),
    # the unit check through DuckDB over the files Spark reads (issue 34): backends/duckdb_units.py, spark.py
    Mutation("spark_unit_check_verdict_ignored",
             "DuckDB's verdict on the local files Spark reads is ignored: a repeated or NULL unit passes",
             (Patch("dpsql/backends/spark.py",
                    "            _UNIQUE_UNITS[key] = self.units_unique_on_spark(table, unit) if verdict is None else verdict",
                    "            _UNIQUE_UNITS[key] = self.units_unique_on_spark(table, unit) if verdict is None else True"),),
             ("tests/test_spark.py::test_units_unique_on_local_files_is_duckdbs_verdict",)),
    Mutation("unit_check_skips_a_hash_class",
             "the unit check's passes leave the last hash class unread: a unit repeated there passes",
             (Patch("dpsql/backends/duckdb_units.py", "    return all(run(distinct(i))[0][0] for i in range(passes))",
                    "    return all(run(distinct(i))[0][0] for i in range(passes - 1))"),),
             ("tests/test_unit_passes.py::test_several_passes_and_one_pass_find_a_repeat_in_every_hash_class_across_parquet_files",)),
    Mutation("unit_check_pass_always_true",
             "a pass of the unit check holds whenever no unit is missing from the distinct count: a repeat passes",
             (Patch("dpsql/backends/duckdb_units.py", """f'SELECT COUNT(*) = COUNT(DISTINCT "{unit}") FROM {source}{where(i)}'""",
                    """f'SELECT COUNT(*) >= COUNT(DISTINCT "{unit}") FROM {source}{where(i)}'"""),),
             ("tests/test_unit_passes.py::test_several_passes_and_one_pass_find_a_repeat_in_every_hash_class_across_parquet_files",)),
    Mutation("parquet_unit_check_type_unchecked",
             "DuckDB checks a unit column it reads as another type than Spark does (unsigned: Spark reads it as BIGINT)",
             (Patch("dpsql/backends/duckdb_units.py",
                    '        if {"TIMESTAMP WITH TIME ZONE": "TIMESTAMP"}.get(read, read) != spark_type:  # Spark\'s name for both',
                    "        if False:"),),
             ("tests/test_spark.py::test_the_unit_check_keeps_spark_where_duckdb_might_read_otherwise",)),
    Mutation("parquet_unit_check_files_differ",
             "DuckDB checks a unit column of another Parquet type in one file (it casts to the first file's, Spark does not)",
             (Patch("dpsql/backends/duckdb_units.py", "len({tuple(v) for v in found.values()}) != 1", "len({tuple(v) for v in found.values()}) < 1"),),
             ("tests/test_spark.py::test_the_unit_check_keeps_spark_where_duckdb_might_read_otherwise",)),
    Mutation("integer_arithmetic_called_total",
             "the allow-list calls integer arithmetic total (it overflows at the type's ends)",
             (Patch("dpsql/sql/totality.py", 'or not any(t.kind == "float" for t in types if t):', ":"),),
             ("tests/test_totality.py::test_every_expression_the_allow_list_calls_total_evaluates_on_extremes",
              "tests/test_hostile_schemas.py::test_the_final_check_refuses_what_is_not_total")),
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
             (Patch("dpsql/sql/plan_cache.py", "parts = (analyst, policy.digest, str(policy.path), policy.max_groups_cap, sorted(policy.parquet.items()),",
                    "parts = (analyst, None, str(policy.path), policy.max_groups_cap, sorted(policy.parquet.items()),"),),
             ("tests/test_plan_cache.py::test_a_session_on_another_policy_never_gets_the_plan_made_under_the_first",)),
    Mutation("plan_cache_ignores_parameter_values",
             "a parameterised query is served the plan made for other values (WHERE state = 'WY' answered for 'CA')",
             (Patch("dpsql/sql/plan_cache.py", "    return (sql, values) if len(sql) + sum(len(r) for _, r in values) <= TEXT else None",
                    "    return sql if len(sql) + sum(len(r) for _, r in values) <= TEXT else None"),),
             ("tests/test_plan_cache.py::test_parameters_are_bound_on_every_run",
              "tests/test_plan_cache.py::test_parameter_values_are_part_of_the_plans_key")),
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
) + (
    # ================================================================== issue 35, by class
    # ------------------------------------------------------------------ oracles that do not move with the code
    Mutation("quantile_sensitivity_min",
             "the exponential mechanism's Δ is min(a, b − a): at q = 0.9 it runs at 9 × the ε charged",
             (Patch("dpsql/privacy/quantile.py", "    return max(q.numerator, q.denominator - q.numerator)",
                    "    return min(q.numerator, q.denominator - q.numerator)"),),
             (f"{ORQ}::test_sampler_draws_the_naive_exponential_mechanism",
              "tests/test_quantiles.py::test_sampler_draws_the_exponential_mechanisms_distribution")),
    Mutation("quantile_pure_dp_epsilon_doubled",
             "under mechanism = geometric the exponential mechanism is given 2ε; the receipt and charge say ε",
             (Patch("dpsql/privacy/allocate.py", "return Allocation(p, EXPONENTIAL, eps * eps / 2, eps, em_epsilon=eps)",
                    "return Allocation(p, EXPONENTIAL, eps * eps / 2, eps, em_epsilon=2 * eps)"),),
             (f"{ORQ}::test_pure_dp_runs_the_exponential_mechanism_at_the_set_epsilon",)),
    Mutation("quantile_zcdp_epsilon_of_4_rho",
             "under zCDP the exponential mechanism is given the ε of 4ρ (2 × ε) while ρ is charged",
             (Patch("dpsql/privacy/allocate.py", "return Allocation(p, EXPONENTIAL, rho, em_epsilon=epsilon_for_rho(rho))",
                    "return Allocation(p, EXPONENTIAL, rho, em_epsilon=epsilon_for_rho(4 * rho))"),),
             (f"{ORQ}::test_zcdp_runs_the_exponential_mechanism_at_the_epsilon_its_rho_covers",)),
    # ------------------------------------------------------------------ stated guarantees
    Mutation("fmt_up_rounds_down",
             "every ε/δ of the (ε, δ) guarantee is printed rounded down: a stronger guarantee than holds",
             (Patch("dpsql/privacy/budget.py", "    return _rounded(Fraction(value), digits, math.ceil)",
                    "    return _rounded(Fraction(value), digits, math.floor)"),),
             (f"{ORP}::test_fmt_up_is_decimal_rounding_toward_infinity", f"{ORP}::test_convert_prints_epsilon_and_delta_up")),
    Mutation("rho_charged_printed_to_nearest",
             "a charged or spent ρ is printed to the nearest 6 digits (ρ = 1/3 as 0.333333: less than was charged)",
             (Patch("dpsql/privacy/budget.py", "    return fmt_up(value)\n", "    return f\"{float(value):.6g}\"\n"),),
             (f"{ORP}::test_rho_charged_and_spent_are_printed_up_and_what_is_left_down",)),
    Mutation("budget_left_printed_up",
             "what is left of a budget is printed rounded up (more than is there)",
             (Patch("dpsql/privacy/budget.py", "    return _rounded(Fraction(value), 6, math.floor)",
                    "    return _rounded(Fraction(value), 6, math.ceil)"),),
             (f"{ORP}::test_rho_charged_and_spent_are_printed_up_and_what_is_left_down",)),
    Mutation("selection_delta_printed_to_nearest",
             "a receipt prints the selection's δ to 3 digits, to the nearest (1.23456789e-7 as 1.23e-07)",
             (Patch("dpsql/pipeline/decide.py", "\"epsilon\": fmt_up(sel.epsilon), \"delta\": fmt_up(sel.delta)",
                    "\"epsilon\": fmt(sel.epsilon), \"delta\": f\"{float(sel.delta):.3g}\""),),
             (f"{ORP}::test_partition_selection_parameters_are_printed_up_everywhere",)),
    Mutation("receipt_delta_printed_to_nearest",
             "a receipt's JSON prints its δ to the nearest 6 digits",
             (Patch("dpsql/pipeline/result.py", "\"delta\": fmt_up(self.delta) if self.delta else 0,",
                    "\"delta\": f\"{float(self.delta):.6g}\" if self.delta else 0,"),),
             (f"{ORP}::test_partition_selection_parameters_are_printed_up_everywhere",)),
    Mutation("rank_error_halved",
             "the receipt's 95% rank error is half Theorem 3.11's bound (an accuracy claim that does not hold)",
             (Patch("dpsql/privacy/quantile.py", "    return 2 * max(float(q), 1 - float(q)) / float(epsilon) * math.log(20 * m)",
                    "    return max(float(q), 1 - float(q)) / float(epsilon) * math.log(20 * m)"),),
             (f"{ORQ}::test_receipt_states_theorem_3_11s_rank_error_and_prints_it_rounded_up",)),
    Mutation("rank_error_printed_truncated",
             "the footer prints the rank error truncated to an integer (understated)",
             (Patch("dpsql/pipeline/format.py", "is within {fmt_up(t.rank_error95, 3)} units of the best",
                    "is within {int(t.rank_error95)} units of the best"),),
             (f"{ORQ}::test_receipt_states_theorem_3_11s_rank_error_and_prints_it_rounded_up",)),
    # ------------------------------------------------------------------ correctness of the SQL forms
    Mutation("percentile_desc_ignored",
             "PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY m DESC) answers q, not 1 − q",
             (Patch("dpsql/sql/quantiles.py", "        if ordered[0].args.get(\"desc\"):", "        if False:"),),
             (f"{ORQ}::test_percentile_within_group_desc_answers_one_minus_q",)),
    Mutation("quantile_extremes_accepted",
             "q = 0 and q = 1 are accepted: the mechanism has no rank to aim at and answers anywhere below the minimum",
             (Patch("dpsql/sql/quantiles.py", "    if not 0 < q < 1:", "    if not 0 <= q <= 1:"),),
             (f"{ORQ}::test_the_extremes_and_beyond_are_refused_before_reading",)),
    Mutation("time_bucket_one_step_finer",
             "a bucket one grain finer than the key's grain is answered (released only on the grain's instants)",
             (Patch("dpsql/sql/time_keys.py", "            if rank >= need and shifts_ok:",
                    "            if rank >= need - 1 and shifts_ok:"),),
             (f"{ORT}::test_a_bucket_one_step_finer_than_the_grain_is_refused",)),
    Mutation("time_grains_shifted",
             "every declared grain is taken one step finer than declared",
             (Patch("dpsql/sql/time_keys.py", "_GRAIN_RANK = {\"minute\": 1, \"hour\": 2, \"day\": 3}",
                    "_GRAIN_RANK = {\"minute\": 0, \"hour\": 1, \"day\": 2}"),),
             (f"{ORT}::test_a_bucket_one_step_finer_than_the_grain_is_refused",)),
    Mutation("integer_range_unbounded",
             "a row outside an integer key's declared range is grouped by its own value, so its bin (121 in 120's) "
             "counts in a released group the policy says it is not in (issue 32)",
             (Patch("dpsql/sql/time_keys.py", "    if key is not None and key.numeric:", "    if False:"),),
             ("tests/test_hostile_schemas.py::test_a_row_outside_an_integer_range_counts_in_no_group[121-True]",)),
    # ------------------------------------------------------------------ composition
    Mutation("workload_delta_max",
             "a workload's δ is the largest of its queries' instead of their sum",
             (Patch("dpsql/workload/plan.py", "    delta = sequential(q.delta for q in queries)",
                    "    delta = parallel(q.delta for q in queries)"),),
             (f"{ORC}::test_two_partition_selections_charge_the_sum_of_their_deltas", f"{ORC}::test_the_delta_wall_sees_the_sum")),
    Mutation("random_partition_fixed_salt",
             "every run of a random partition uses the same salt (the docs promise a fresh secret one)",
             (Patch("dpsql/workload/run.py", "        salt = secrets.randbits(62)", "        salt = 20261125"),),
             (f"{ORC}::test_every_run_of_a_random_partition_draws_a_fresh_salt",)),
    Mutation("random_partition_hash_of_two_arguments",
             "HASH(unit, salt): modulo a power of two every salt gives the same partition",
             (Patch("dpsql/sql/partition.py", "    hashed = exp.Anonymous(this=\"HASH\", expressions=[salted])",
                    "    hashed = exp.Anonymous(this=\"HASH\", expressions=[column, exp.Literal.number(salt)])"),),
             (f"{ORC}::test_every_run_of_a_random_partition_draws_a_fresh_salt",)),
    # ------------------------------------------------------------------ the two release paths
    Mutation("per_group_noise_at_first_threshold",
             "per-group thresholds: every cell is drawn at the first cell's σ (both paths share the grouping)",
             (Patch("dpsql/pipeline/release.py", "            if len(slot) == 1:", "            if True:"),),
             (f"{ORR}::test_array_path_draws_each_cell_at_its_own_groups_threshold",
              f"{ORR}::test_list_path_draws_each_cell_at_its_own_groups_threshold")),
    Mutation("array_receipt_sigma_of_first_threshold",
             "array path: every cell's receipt σ is the first threshold's",
             (Patch("dpsql/pipeline/release.py", "    if len(by_sens) == 1:", "    if True:"),),
             (f"{ORR}::test_array_path_draws_each_cell_at_its_own_groups_threshold",)),
    Mutation("list_receipt_sigma_of_first_cell",
             "list path: every cell's receipt σ is the first cell's",
             (Patch("dpsql/pipeline/release.py", "sigma_of = {s: float(sigma_by_sens[s]) * fg for s in distinct}",
                    "sigma_of = {s: float(sigma_by_sens[sens[0]]) * fg for s in distinct}"),),
             (f"{ORR}::test_list_path_draws_each_cell_at_its_own_groups_threshold",)),
    Mutation("list_avg_null_at_count_one",
             "the list path's AVG is NULL at a noisy count of exactly 1 (DuckDB's finish gives s / 1)",
             (Patch("dpsql/pipeline/finish.py", "avg = [None if y < 1 else float(x) / float(y) for x, y in zip(s_list, c_list)]",
                    "avg = [None if y <= 1 else float(x) / float(y) for x, y in zip(s_list, c_list)]"),),
             (f"{ORR}::test_avg_is_null_exactly_below_a_noisy_count_of_one",)),
    Mutation("array_avg_null_at_count_one",
             "the array path's AVG is NULL at a noisy count of exactly 1",
             (Patch("dpsql/pipeline/finish.py", "for j in np.flatnonzero(c < 1).tolist():", "for j in np.flatnonzero(c <= 1).tolist():"),),
             (f"{ORR}::test_avg_is_null_exactly_below_a_noisy_count_of_one",)),
    Mutation("avg_sigma_beside_a_divisor_near_zero",
             "an AVG (or derived ratio) shows a tiny ± where its noisy divisor's own 95% interval holds 0",
             (Patch("dpsql/pipeline/propagate.py", "near_zero = near_zero | (b == 0) | ((m_b > 0) & (abs(b) <= m_b))",
                    "near_zero = near_zero | (b == 0)"),),
             (f"{ORR}::test_avg_is_null_exactly_below_a_noisy_count_of_one",
              f"{DERIVED}::test_a_denominator_near_zero_is_flagged_not_given_a_tiny_margin")),
    Mutation("derived_sigma_ignores_the_divisors_noise",
             "a ratio's ± leaves out its denominator's noise: a margin narrower than the truth's spread",
             (Patch("dpsql/pipeline/propagate.py",
                    "grad = {i: ops.div(ga.get(i, 0.0), b) - ops.div(a * gb.get(i, 0.0), b * b) for i in set(ga) | set(gb)}",
                    "grad = {i: ops.div(ga.get(i, 0.0), b) for i in set(ga) | set(gb)}"),),
             (f"{DERIVED}::test_ratio_sigma_is_the_delta_method_at_the_noisy_values",
              f"{DERIVED}::test_the_95_percent_margin_covers_the_true_ratio")),
    Mutation("rank_interval_trusts_the_noisy_count",
             "a quantile's rank interval divides by the noisy count itself, not by its lower bound: narrower than stated",
             (Patch("dpsql/pipeline/propagate.py", "n = n_hat - np.nan_to_num(moe)", "n = n_hat"),),
             (f"{DERIVED}::test_quantile_rank_interval",)),
    # ------------------------------------------------------------------ stale plans
    Mutation("plan_context_ignores_column_types",
             "a plan made when a column was an INTEGER is served once it is text (its bare comparison then fails on rows)",
             (Patch("dpsql/sql/plan_cache.py", "[(t, sorted(cols.items())) for t, cols in sorted(schema.items())],",
                    "[(t, sorted(cols)) for t, cols in sorted(schema.items())],"),),
             (f"{ORS}::test_a_column_that_changes_type_is_planned_again",)),
    Mutation("code_identity_without_size_and_time",
             "the code identity is the modules' paths only: a module edited in place keeps serving old plans",
             (Patch("dpsql/records/plan.py", "out.append(f\"{e.path}:{st.st_size}:{st.st_mtime_ns}\")", "out.append(e.path)"),),
             (f"{ORS}::test_a_module_edited_in_place_changes_the_code_identity",)),
    Mutation("code_identity_without_time",
             "the code identity ignores modification times: an edit of the same size keeps serving old plans",
             (Patch("dpsql/records/plan.py", "out.append(f\"{e.path}:{st.st_size}:{st.st_mtime_ns}\")",
                    "out.append(f\"{e.path}:{st.st_size}\")"),),
             (f"{ORS}::test_a_module_edited_in_place_changes_the_code_identity",)),
    Mutation("code_identity_without_size",
             "the code identity ignores sizes: an edit that keeps the modification time keeps serving old plans",
             (Patch("dpsql/records/plan.py", "out.append(f\"{e.path}:{st.st_size}:{st.st_mtime_ns}\")",
                    "out.append(f\"{e.path}:{st.st_mtime_ns}\")"),),
             (f"{ORS}::test_a_module_edited_in_place_changes_the_code_identity",)),
    # ------------------------------------------------------------------ totality
    Mutation("is_anything_total",
             "x IS <anything> runs bare: a text column IS TRUE casts every row and fails on some",
             (Patch("dpsql/sql/totality.py",
                    "    return BOOL if isinstance(node.expression, exp.Null) and value_type(node.this, schema) is not None else None",
                    "    return BOOL if value_type(node.this, schema) is not None else None"),),
             (f"{ORTOT}::test_every_is_form_called_total_evaluates_on_the_extremes",
              f"{ORTOT}::test_is_with_a_right_side_other_than_null_is_never_total")),
    Mutation("is_typed_right_side_total",
             "x IS y runs bare whenever both sides have a type",
             (Patch("dpsql/sql/totality.py",
                    "    return BOOL if isinstance(node.expression, exp.Null) and value_type(node.this, schema) is not None else None",
                    "    return BOOL if (isinstance(node.expression, exp.Null) or value_type(node.expression, schema) is not None) "
                    "and value_type(node.this, schema) is not None else None"),),
             (f"{ORTOT}::test_every_is_form_called_total_evaluates_on_the_extremes",)),
    # ------------------------------------------------------------------ routing
    Mutation("server_word_test_removed",
             "the server sends a text naming a private table that sqlglot cannot parse to the catalog twin",
             (Patch("dpsql/faces/server/statements.py",
                    "    if first in (\"explain\", \"describe\") or any(word in private_tables for word in w):",
                    "    if first in (\"explain\", \"describe\"):"),),
             (f"{ORROUTE}::test_a_text_naming_a_private_table_goes_to_the_pipeline",)),
    Mutation("server_multi_statement_to_twin",
             "a text sqlglot reads as several statements is sent to the catalog twin whole",
             (Patch("dpsql/faces/server/statements.py", "    if len(trees) != 1 or trees[0] is None:",
                    "    if not trees or trees[0] is None:"),),
             (f"{ORROUTE}::test_more_than_one_statement_never_goes_to_the_twin_whole",)),
    Mutation("quoted_file_path_read_as_public_table",
             "FROM 'states' (a file path) is taken for the public table states",
             (Patch("dpsql/intercept/public_tables.py", "        if start is not None and sql[start:start + 1] == \"'\":",
                    "        if False:"),),
             (f"{ORROUTE}::test_a_quoted_file_path_is_not_the_public_table_of_its_name",
              f"{ORROUTE}::test_a_quoted_file_path_is_refused_by_the_pipeline_not_run_on_the_public_database")),
    # ------------------------------------------------------------------ the ledger under kill -9, deterministically
    Mutation("charge_row_committed_before_totals",
             "a charge's row is committed before the running totals: a crash between them leaves totals below the charges",
             (Patch("dpsql/ledger/group.py",
                    "                for who, rho, delta in ((analyst, s.rho, s.delta), (\"\", s.rho_all, s.delta_all)):",
                    "                for who, rho, delta in db.execute(\"COMMIT\") and db.execute(\"BEGIN IMMEDIATE\") and "
                    "((analyst, s.rho, s.delta), (\"\", s.rho_all, s.delta_all)):"),),
             (f"{CRASH}::test_a_kill_at_every_statement_of_a_charge_leaves_the_ledger_consistent",)),
    Mutation("each_total_in_its_own_transaction",
             "the analyst's and everyone's totals are committed one at a time: a crash between them splits them",
             (Patch("dpsql/ledger/group.py",
                    "                    db.execute(\"INSERT OR REPLACE INTO totals (analyst, rho, delta) VALUES (?, ?, ?)\",",
                    "                    db.execute(\"COMMIT\") and db.execute(\"BEGIN IMMEDIATE\") and "
                    "db.execute(\"INSERT OR REPLACE INTO totals (analyst, rho, delta) VALUES (?, ?, ?)\","),),
             (f"{CRASH}::test_a_kill_at_every_statement_of_a_charge_leaves_the_ledger_consistent",)),
    # ------------------------------------------------------------------ parameters where the samplers consume them
    Mutation("gaussian_share_doubled",
             "each aggregate's discrete Gaussian runs at twice its share of ρ",
             (Patch("dpsql/privacy/allocate.py", "out.append(Allocation(p, GAUSSIAN, settings.rho * w / total_w))",
                    "out.append(Allocation(p, GAUSSIAN, settings.rho * 2 * w / total_w))"),),
             (f"{ORCON}::test_gaussian_draws_at_delta_squared_over_two_rho_and_the_ledger_records_rho",)),
    Mutation("geometric_sampler_epsilon_doubled",
             "under mechanism = geometric each aggregate's sampler gets 2ε_i; the charge is for ε_i",
             (Patch("dpsql/privacy/allocate.py", "out.append(Allocation(p, GEOMETRIC, eps * eps / 2, eps))",
                    "out.append(Allocation(p, GEOMETRIC, eps * eps / 2, 2 * eps))"),),
             (f"{ORCON}::test_geometric_draws_at_delta_over_epsilon_and_the_ledger_records_its_rho",)),
    Mutation("geometric_scale_halved",
             "b = Δ / (2ε): the discrete Laplace has half the scale pure ε-DP needs",
             (Patch("dpsql/privacy/mechanisms.py", "return Fraction(delta) / exact_positive(epsilon, \"epsilon\")",
                    "return Fraction(delta) / (2 * exact_positive(epsilon, \"epsilon\"))"),),
             (f"{ORCON}::test_geometric_draws_at_delta_over_epsilon_and_the_ledger_records_its_rho",)),
    Mutation("optimal_selection_epsilon_doubled",
             "the optimal partition selection runs at 2ε; ε²/2 of the policy's ε is charged",
             (Patch("dpsql/pipeline/columnar.py", "keep = select(n, sel.epsilon, sel.delta, rng)",
                    "keep = select(n, 2 * sel.epsilon, sel.delta, rng)"),),
             (f"{ORCON}::test_partition_selection_runs_at_the_policys_epsilon_and_delta_and_is_charged_them",)),
    Mutation("tsgd_selection_delta_raised",
             "the truncated-geometric selection runs at 10 × the policy's δ",
             (Patch("dpsql/pipeline/columnar.py", "keep, noisy = thresholded_release(n, sel.epsilon, sel.delta, rng)",
                    "keep, noisy = thresholded_release(n, sel.epsilon, sel.delta * 10, rng)"),),
             (f"{ORCON}::test_partition_selection_runs_at_the_policys_epsilon_and_delta_and_is_charged_them",)),
    # ------------------------------------------------------------------ issue 29, part C
    Mutation("private_stage_timed",
             "the exact query's time (which depends on private rows) is reported in Result.timings and by \\timing",
             (Patch("dpsql/session.py", "                columns, noise_terms, released = self._compute_and_release(d)\n",
                    "                columns, noise_terms, released = self._compute_and_release(d); timings['execute'] = time.perf_counter() - t0\n"),),
             ("tests/test_timings.py::test_result_timings_hold_public_stages_only",
              "tests/test_timings.py::test_repl_timing_prints_the_total_and_public_stages_only")),
    Mutation("unit_record_ignores_wal",
             "a recorded unit check stands while a dead writer's duplicate unit waits in the .wal a reader replays",
             (Patch("dpsql/records/unit.py", "    return None if ident is None else (*ident, file_identity(f\"{path}.wal\"))",
                    "    return None if ident is None else (*ident, None)"),),
             ("tests/test_unit_record.py::test_a_row_left_in_the_wal_by_a_dead_writer_is_checked_again[True]",)),
    Mutation("unit_record_resolved_name_kept_blindly",
             "a data file's resolved path is kept per name even after the name leads to another file (its unit check's record)",
             (Patch("dpsql/records/unit.py", "        if kept is not None and kept[:2] == (st.st_dev, st.st_ino):  # the very file the name led to before",
                    "        if kept is not None:"),),
             ("tests/test_unit_record.py::test_a_name_that_leads_to_another_file_is_resolved_again",)),
    Mutation("unit_record_taken_after_the_scan",
             "a data file rewritten while the unit check scans it is recorded as passed under its new identity, unseen",
             (Patch("dpsql/policy/check.py", "    unit_record.remember(source, table, tp.privacy_unit, before)",
                    "    unit_record.remember(source, table, tp.privacy_unit)"),),
             ("tests/test_unit_record.py::test_a_file_written_during_the_scan_is_not_recorded",)),
    Mutation("unit_record_folder_ignores_subfolders",
             "a folder of Parquet files keeps its recorded pass after a file with a repeated unit is added in a sub-folder",
             (Patch("dpsql/records/unit.py", "            for name in sorted(filenames):",
                    "            for name in (sorted(filenames) if dirpath == str(root) else []):"),),
             ("tests/test_unit_record.py::test_a_table_read_from_a_folder_is_recorded_by_every_file_below_it",)),
    Mutation("unit_check_cache_ignores_wal",
             "this process's memory of a passed unit scan stands while a duplicate unit waits in the .wal",
             (Patch("dpsql/backends/duckdb.py", "        files = [self.path, Path(f\"{self.path}.wal\")] if not self._parquet else [Path(p) for p in self._parquet.values()]",
                    "        files = [self.path] if not self._parquet else [Path(p) for p in self._parquet.values()]"),),
             ("tests/test_unit_record.py::test_a_row_left_in_the_wal_by_a_dead_writer_is_checked_again[False]",)),
    Mutation("finish_not_total",
             "the finish stage's arithmetic raises on some noisy values after the charge: a charged query without its rows",
             (Patch("dpsql/sql/finish_forms.py", "    tree = total_finish(finish).select(exp.column(ROW_COLUMN, quoted=True))",
                    "    tree = finish.copy().select(exp.column(ROW_COLUMN, quoted=True))"),),
             ("tests/test_finish_total.py::test_overflow_after_the_charge_is_null",
              "tests/test_finish_total.py::test_division_and_modulo_by_zero_are_null")),
    Mutation("finisher_message_quotes_values",
             "a failed finish quotes DuckDB's message, and with it a noisy value, outside its answer",
             (Patch("dpsql/backends/duckdb_local.py", "            raise DpsqlInternalError(f\"post-processing of the noisy values failed ({type(exc).__name__}); \"",
                    "            raise DpsqlInternalError(f\"post-processing of the noisy values failed ({exc}); \""),),
             ("tests/test_finish_total.py::test_the_finishers_message_quotes_no_value",)),
    Mutation("time_format_unchecked",
             "an unknown strftime specifier reaches DuckDB instead of a refusal at planning",
             (Patch("dpsql/sql/validate.py", "    if isinstance(fmt, exp.Literal) and fmt.is_string and (bad := bad_time_format(fmt.this)) is not None:",
                    "    if False and isinstance(fmt, exp.Literal) and (bad := bad_time_format(fmt.this)) is not None:"),),
             ("tests/test_finish_total.py::test_an_unknown_strftime_specifier_is_refused_for_free",)),
    Mutation("workload_name_is_a_path",
             "a workload's name is used as a path: its output files are written outside --out",
             (Patch("dpsql/workload/spec.py", "    if not name or name in (\".\", \"..\") or \"/\" in name or \"\\\\\" in name or \"\\0\" in name:",
                    "    if not name:"),),
             ("tests/test_workload.py::test_a_workload_name_that_is_not_a_plain_file_name_is_refused",)),
    Mutation("split_selection_unchecked",
             "partition selection on split rows runs without a bound on a record's splits: delta_k reaches 1 unseen",
             (Patch("dpsql/session.py", "        check_split_selection(plan, self.policy, self.ledger.total_delta)\n",
                    "        pass\n"),),
             ("tests/test_partition_selection.py::test_split_rows_selection_without_max_splits_is_refused_for_free",
              "tests/test_partition_selection.py::test_split_rows_selection_beyond_the_delta_wall_is_refused")),
    Mutation("split_selection_ignores_delta_wall",
             "a record of K splits gets a delta_K above the analyst's delta wall",
             (Patch("dpsql/pipeline/decide.py", "    if dk >= wall:", "    if dk >= 1:"),),
             ("tests/test_partition_selection.py::test_split_rows_selection_beyond_the_delta_wall_is_refused",)),
    Mutation("split_selection_delta_linear",
             "group privacy's delta taken as K*delta: far below delta*(e^(K*eps)-1)/(e^eps-1)",
             (Patch("dpsql/pipeline/decide.py", "        return float(sel.delta) * math.expm1(max_splits * eps) / math.expm1(eps) * (1 + 1e-9)",
                    "        return float(sel.delta) * max_splits"),),
             ("tests/test_partition_selection.py::test_split_rows_selection_beyond_the_delta_wall_is_refused",
              "tests/test_partition_selection.py::test_split_rows_selection_states_its_group_privacy")),
    Mutation("finish_check_skipped",
             "a finish that fails whatever the values runs after the charge: a charged query without its rows",
             (Patch("dpsql/session.py", "                        lambda: check_finish(plan, self.engine.describe(d.query)[:len(plan.keys)], self.finisher))\n",
                    "                        lambda: None)\n"),),
             ("tests/test_finish_total.py::test_a_finish_that_fails_whatever_the_values_is_refused_before_the_charge",)),
    Mutation("finish_check_filters_its_row",
             "the finish check keeps its filter, which drops its one row before the failing expression is read",
             (Patch("dpsql/pipeline/finish.py", "        tree = tree.select(exp.alias_(where.this.copy(), \"__filter\", quoted=True))",
                    "        tree.set(\"where\", where)"),),
             ("tests/test_finish_total.py::test_a_finish_that_fails_whatever_the_values_is_refused_before_the_charge",)),
    Mutation("memory_bound_skipped",
             "phase 1 no longer refuses a shape whose answer cannot fit the memory budget: it runs, and "
             "whether it then fits depends on the data",
             (Patch("dpsql/pipeline/memory.py", "    if fits < 1:\n", "    if False:\n"),),
             ("tests/test_memory_bound.py::test_a_shape_that_cannot_fit_is_refused_in_phase_1_on_neighbours_alike",)),
    Mutation("memory_cap_skipped",
             "the private groups shown are no longer capped to fit the memory budget",
             (Patch("dpsql/pipeline/memory.py", "    return min(max_private, fits) if plan.private_keys else max_private\n",
                    "    return max_private\n"),),
             ("tests/test_memory_bound.py::test_the_private_groups_shown_are_capped_to_fit_the_budget",)),
    Mutation("plan_record_code_identity_one_room",
             "recorded plans stand for the code of dpsql/records/ only: a changed rewrite answers from old plans",
             (Patch("dpsql/records/plan.py", "    _walk(Path(__file__).resolve().parents[1], files)\n",
                    "    _walk(Path(__file__).resolve().parent, files)\n"),),
             ("tests/test_plan_record.py::test_the_code_identity_covers_every_module_of_dpsql",
              f"{ORS}::test_a_module_edited_in_place_changes_the_code_identity")),
    # ------------------------------------------------------------------ the server as a wall (issue 29 B)
    Mutation("server_ledger_inode_unchecked",
             "a restored copy of the server's ledger (fewer charges, the same token) is taken as the ledger",
             (Patch("dpsql/faces/server/state.py", "        if (st.st_dev, st.st_ino) != (record[\"device\"], record[\"inode\"]):",
                    "        if False:"),),
             (f"{WALL}::test_a_replaced_or_foreign_ledger_is_refused_until_adopted",)),
    Mutation("server_ledger_token_unchecked",
             "another server's ledger written over this one in place is charged as if it were this one",
             (Patch("dpsql/faces/server/state.py", "        if f\"{_token_of(head):016x}\" != record[\"token\"]:",
                    "        if False:"),),
             (f"{WALL}::test_a_replaced_or_foreign_ledger_is_refused_until_adopted",)),
    Mutation("server_session_opens_unknown_ledger",
             "a new connection opens the ledger unchecked: a deleted ledger is recreated empty",
             (Patch("dpsql/faces/server/server.py", "        self.check_ledger()  # first: opening would create a missing ledger",
                    "        pass"),),
             (f"{WALL}::test_a_deleted_ledger_is_never_recreated_and_stops_the_server_until_adopted",)),
    Mutation("server_statements_skip_ledger_check",
             "an open connection goes on charging a ledger overwritten in place",
             (Patch("dpsql/faces/server/answers.py", "        guard()  # the server's ledger is still the one it adopted",
                    "        pass"),),
             (f"{WALL}::test_a_replaced_or_foreign_ledger_is_refused_until_adopted",)),
    Mutation("server_scans_key_without_kind",
             "a connection's memo of its texts answers one scan with another's result (a route with a split)",
             (Patch("dpsql/faces/server/statements.py", "        key = (kind, sql)", "        key = (\"\", sql)"),),
             ("tests/test_server_parts.py::test_a_connections_scans_are_the_scans_of_each_text_and_its_own",)),
    Mutation("server_starts_on_unknown_ledger",
             "dpsql serve starts on a ledger its state folder did not adopt",
             (Patch("dpsql/faces/server/server.py", "                self.guard.verify()  # before anyone connects", "                pass  # before anyone connects"),),
             (f"{WALL}::test_a_deleted_ledger_is_never_recreated_and_stops_the_server_until_adopted",)),
    Mutation("server_mock_salt_short",
             "an unknown user's made-up salt is shorter than a real one: user names can be enumerated",
             (Patch("dpsql/faces/server/users.py", "digest()[:SALT_BYTES]", "digest()[:16]"),),
             (f"{WALL}::test_unknown_users_salts_are_as_long_as_real_ones_and_survive_a_restart",)),
    Mutation("server_mock_salt_per_process",
             "unknown users' salts change at each restart while real ones stay: user names can be enumerated",
             (Patch("dpsql/faces/server/server.py", "        self.secret = server_secret(self.state)",
                    "        self.secret = __import__(\"secrets\").token_bytes(32)"),),
             (f"{WALL}::test_unknown_users_salts_are_as_long_as_real_ones_and_survive_a_restart",)),
    Mutation("server_no_login_backoff",
             "wrong passwords are answered at once: guessing runs at the speed of the network",
             (Patch("dpsql/faces/server/server.py", "            await asyncio.sleep(delay)", "            pass"),),
             (f"{WALL}::test_failed_logins_are_answered_after_a_growing_backoff",)),
    Mutation("server_logins_take_analyst_slots",
             "connections still logging in take analysts' slots: strangers lock analysts out",
             (Patch("dpsql/faces/server/server.py", "        self.logging_in[conn.pid] = address",
                    "        self.logging_in[conn.pid] = address; self.connections[conn.pid] = conn"),),
             (f"{WALL}::test_strangers_logging_in_never_lock_analysts_out",)),
    Mutation("server_shows_its_paths",
             "an analyst reads the server's paths in a DP4xx message",
             (Patch("dpsql/faces/server/answers.py", "    if exc.code.startswith(\"DP4\") and exc.code != \"DP403\":",
                    "    if False:"),),
             (f"{WALL}::test_a_deleted_ledger_is_never_recreated_and_stops_the_server_until_adopted",)),
    Mutation("server_memory_unbounded",
             "the server's --memory-limit does not reach DuckDB: one query can take the machine's memory",
             (Patch("dpsql/backends/duckdb.py", "            config[\"memory_limit\"] = f\"{int(memory_limit)}B\"", "            pass"),),
             (f"{WALL}::test_a_query_over_the_servers_memory_limit_is_charged_and_fails_with_fixed_text",)),
    Mutation("sparse_histogram_any_text",
             "the final check calls any one-argument HISTOGRAM of a BIGINT total, not only the binary search quantiles.py writes",
             (Patch("dpsql/sql/totality.py", '    return rebuilt.sql("duckdb") == node.sql("duckdb")', "    return True"),),
             ("tests/test_totality.py::test_only_the_writers_sparse_histogram_is_called_total",)),
    Mutation("resum_any_form",
             "the final check re-sums partial sums under any form (a CAST of a HUGEINT partial sum to BIGINT passes)",
             (Patch("dpsql/sql/final_check.py", "    if any(not isinstance(n, _CAPS) for n in node.this.walk()):",
                    "    if False:"),),
             (f"{MANY}::test_the_many_row_sql_passes_the_final_check_and_tampered_forms_do_not",)),
    Mutation("many_rows_unchecked",
             "the many-row exact SQL skips the final totality check",
             (Patch("dpsql/sql/rewrite.py", "        check_final(sql, {**schema, **plan.public_types})",
                    "        pass"),),
             ("tests/test_hostile_schemas.py::test_many_row_sql_goes_through_the_final_check",)),
    # ------------------------------------------------------------------ dpsql advise (issues 31, 33)
    Mutation("advise_writes_flagged",
             "advise --write writes a flagged quantile (unresolved or out of order: any grid value beyond the data)",
             (Patch("dpsql/faces/advise_cmd.py", '    good = [r for r in upto if r["ok"]]', "    good = upto"),),
             ("tests/test_advise.py::test_write_never_writes_a_flagged_quantile",
              "tests/test_advise.py::test_out_of_order_quantiles_are_flagged")),
    Mutation("advise_units_uncharged",
             "advise on a many-row table charges a throwaway ledger, not the policy's: its release is never counted",
             (Patch("dpsql/faces/advise_units.py", "session.ledger = Ledger(ledger_path(policy),",
                    "session.ledger = Ledger(ledger_path(session.policy),"),),
             ("tests/test_own_many_rows.py::test_advise_by_names_the_grouping",)),
    Mutation("query_cap_ignored",
             "the policy's per-query cap (budget.max_query_rho) is not enforced: one SET dpsql.moe spends past it",
             (Patch("dpsql/pipeline/decide.py", "    if cap is not None and d.rho > cap:", "    if False:"),),
             ("tests/test_query_cap.py::test_a_query_above_the_cap_is_refused_with_its_cost_and_charged_nothing",)),
    # ------------------------------------------------------------------ issue 34: what a process keeps
    Mutation("policy_memo_by_path_only",
             "a session keeps the policy validated from the file's old bytes after the data owner edited it "
             "(an old budget, old thresholds)",
             (Patch("dpsql/policy/memo.py", "        kept = _KEPT.get(key)",
                    "        kept = next((v for k, v in _KEPT.items() if k[0] == key[0]), None)"),),
             ("tests/test_policy_memo.py::test_an_edit_is_seen_by_the_next_session_whatever_the_mtime",)),
    Mutation("ledger_pool_ignores_identity",
             "a new session charges through a connection kept open on a ledger file that was replaced: its "
             "charges go to the old file, the budget in place is never spent",
             (Patch("dpsql/ledger/pool.py", "        idle = _IDLE.get(identity)",
                    "        idle = next((v for v in _IDLE.values() if v), None)"),),
             ("tests/test_ledger_pool.py::test_a_file_put_in_place_of_the_ledger_gets_its_own_connection",)),
    Mutation("charge_after_kept_answer_not_synced",
             "after an answer is marked used for reuse (committed without fsync) the next charges commit without "
             "fsync too: a crash can lose a charge whose answer was already shown",
             (Patch("dpsql/ledger/answers.py", '                db.execute("PRAGMA synchronous=FULL")',
                    '                pass'),
              Patch("dpsql/ledger/group.py", '        db.execute("PRAGMA synchronous=FULL")  # whatever ran before',
                    '        pass  # whatever ran before')),
             ("tests/test_ledger_sync.py::test_a_charge_after_an_answer_marked_used_is_synced",)),
    Mutation("group_commit_checks_with_the_leaders_caps",
             "a batch of charges is checked against the leading session's budget caps, not each one's own: "
             "an analyst with a smaller wall overspends it when another analyst's charge leads",
             (Patch("dpsql/ledger/group.py", "refusal = p.ledger._refusal(charge.rho, charge.delta, s)",
                    "refusal = leader._refusal(charge.rho, charge.delta, s)"),),
             ("tests/test_ledger_group.py::test_charges_queued_behind_a_commit_share_the_next_one",)),
    Mutation("group_commit_reads_totals_once",
             "a batch reads the running totals once: its charges do not see each other, and together overspend",
             (Patch("dpsql/ledger/group.py", "                s = leader._read_spent(db, analyst)",
                    "                s = s if 's' in dir() else leader._read_spent(db, analyst)"),),
             ("tests/test_ledger_group.py::test_charges_queued_behind_a_commit_share_the_next_one",)),
    # ------------------------------------------------------------------ issue 33: a released answer is reused
    Mutation("reuse_key_ignores_analyst",
             "the reuse key leaves the analyst out: analysts overwrite each other's stored answer (and, with the "
             "ledger's guard gone too, get it for free)",
             (Patch(REUSE, "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,",
                    "    parts = (VERSION, 'anyone', policy.digest, str(policy.path), ident, shape, query,"),),
             (f"{REUSED}::test_another_analyst_is_charged",)),
    Mutation("reuse_guard_ignores_analyst",
             "an answer stored under a key is found through another analyst's charge",
             (Patch("dpsql/ledger/answers.py", '"WHERE a.key = ? AND c.analyst = ?", (key, ledger.analyst)).fetchone()',
                    '"WHERE a.key = ? AND ? IS NOT NULL", (key, ledger.analyst)).fetchone()'),),
             (f"{REUSED}::test_a_stored_answer_is_found_only_through_the_analysts_own_charge",)),
    Mutation("reuse_key_ignores_data_file",
             "an answer is reused after the data file changed",
             (Patch(REUSE, "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,",
                    "    parts = (VERSION, analyst, policy.digest, str(policy.path), shape, query,"),),
             (f"{REUSED}::test_a_changed_data_file_is_charged",)),
    Mutation("reuse_key_ignores_policy",
             "an answer is reused after the policy changed (partition selection's ε lives only there)",
             (Patch(REUSE, "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,",
                    "    parts = (VERSION, analyst, str(policy.path), ident, shape, query,"),
              Patch(REUSE, "             _digest(plan.table), _digest(policy.selection))", "             )"),),
             (f"{REUSED}::test_a_changed_policy_is_charged",)),
    Mutation("reuse_key_ignores_exact_query",
             "an answer is reused for another statement (another WHERE, another parameter value)",
             (Patch(REUSE, "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,",
                    "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape,"),),
             (f"{REUSED}::test_parameters_are_part_of_the_statement",)),
    Mutation("reuse_key_ignores_plan",
             "an answer is reused for another statement with the same exact query (another column name, HAVING)",
             (Patch(REUSE, "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,",
                    "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, query,"),),
             (f"{REUSED}::test_a_different_statement_is_charged",)),
    Mutation("reuse_key_holds_only_the_finish",
             "pages of one release gone too far: the key keeps the finish without ORDER BY / LIMIT / OFFSET but "
             "not the plan or the exact query, so a page of another WHERE or aggregate is another release's cells, free",
             (Patch(REUSE, "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,",
                    "    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, plan.finish_base_sql,"),),
             ("tests/test_reuse_pages.py::test_a_page_of_another_statement_is_charged",)),
    Mutation("samples_pane_count_charged",
             "Superset's Samples pane charges its row count, which it throws away when the sample's rows are refused",
             (Patch("dpsql/sql/samples_pane.py", "    if is_samples_count(select):", "    if False:"),),
             ("tests/test_server_superset.py::test_samples_pane_costs_nothing_through_psycopg2",
              "tests/test_server_superset.py::test_superset_sql_is_answered_with_one_charge_per_release")),
    Mutation("reuse_key_ignores_budget_shares",
             "an answer released at one ρ is reused when another ρ was asked for",
             (Patch(REUSE, "             [_alloc(a) for a in allocs], clamp,", "             [], clamp,"),),
             (f"{REUSED}::test_settings_that_change_the_release_are_charged",)),
    Mutation("stored_answer_lengths_unchecked",
             "a stored answer whose columns differ in length (a tampered ledger row) is shown as a free reuse: "
             "values of one cell beside another cell's keys",
             (Patch(REUSE, "        if len(set(map(len, columns.values()))) > 1:  # one value per cell in every column, or not this release",
                    "        if False:"),),
             ("tests/test_reuse_stored.py::test_a_tampered_stored_answer_is_released_afresh",)),
    Mutation("stored_answer_repeat_type_unchecked",
             "a stored answer's repeated value is taken whatever its type: 1.5 in an integer column is read as 1",
             (Patch("dpsql/pipeline/stored.py", "        elif type(how) is _DTYPES[dtype]:", "        elif type(how) in (int, float):"),),
             ("tests/test_reuse_stored.py::test_a_tampered_stored_answer_is_released_afresh",)),
    Mutation("stored_answer_size_unbounded",
             "a stored answer's forged cell count is allocated as it says: reading it back fails out of memory "
             "instead of releasing afresh",
             (Patch("dpsql/pipeline/stored.py", "type(n) is not int or not 0 <= n <= MAX_CELLS:", "type(n) is not int or n < 0:"),),
             ("tests/test_reuse_stored.py::test_a_tampered_stored_answer_is_released_afresh",)),
    Mutation("fresh_release_not_charged",
             "SET dpsql.reuse = off is ignored: the fresh release asked for is the old one, not charged",
             (Patch("dpsql/session.py", "reuse.reused(answers.find(self.ledger, key, self.output.reuse, self.policy.budget), d.plan",
                    "reuse.reused(answers.find(self.ledger, key, True, self.policy.budget), d.plan"),),
             (f"{REUSED}::test_fresh_release_is_explicit_charged_and_new_noise",)),
    Mutation("owner_view_counts_a_shared_ledger_twice",
             "`dpsql ledger --all` adds a ledger the server shares with embedded use twice: the data set's spending overstated",
             (Patch("dpsql/faces/budget_commands.py", '    shared = embedded.exists() and os.path.samefile(path, embedded)',
                    "    shared = False"),),
             (f"{OWNER}::test_a_server_charging_the_embedded_ledger_is_counted_once",)),
    Mutation("owner_view_misses_the_server",
             "`dpsql ledger --all` leaves out what the server released: the data set's spending understated",
             (Patch("dpsql/faces/budget_commands.py", '        if served is not None and not served["shared"]:',
                    "        if False:"),),
             (f"{OWNER}::test_ledger_all_sums_the_servers_and_the_embedded_charges",)),
    Mutation("owner_view_reads_an_unadopted_ledger",
             "`dpsql ledger` sums a file put in place of the server's adopted ledger as if it were the server's charges",
             (Patch("dpsql/faces/budget_commands.py", "    LedgerGuard(state, path).verify()", "    pass"),),
             (f"{OWNER}::test_a_replaced_server_ledger_is_refused_not_read",)),
    # ------------------------------------------------------------------ issue 31: the answers kept are bounded
    Mutation("answers_never_pruned",
             "the answers kept for reuse are never pruned: the ledger file grows without bound",
             (Patch("dpsql/ledger/answers.py", "    n, size = int(n), int(size)", "    n, size = 0, 0"),),
             ("tests/test_answers_bound.py::test_the_count_bound_holds_and_the_least_recently_used_goes_first",
              "tests/test_answers_bound.py::test_the_size_bound_holds")),
    Mutation("answers_pruned_in_the_order_kept",
             "a reuse does not mark its answer used: a dashboard's answer is pruned and charged again while "
             "answers nobody asks for again are kept",
             (Patch("dpsql/ledger/answers.py", '                db.execute(f"UPDATE answers SET used = {_NEXT} WHERE key = ?", (ledger.analyst, key))',
                    "                pass"),),
             ("tests/test_answers_bound.py::test_the_count_bound_holds_and_the_least_recently_used_goes_first",)),
    Mutation("pure_statement_despite_selection",
             "the ledger states everything spent as pure (sum of epsilon, 0)-DP even when a partition selection "
             "(delta > 0) was among the charges",
             (Patch("dpsql/privacy/accounting.py", "    if not charges or any(c.epsilon is None or c.delta != 0 or",
                    "    if not charges or any(c.epsilon is None or"),),
             ("tests/test_pure_statement.py::test_a_selection_or_a_zcdp_charge_states_nothing_pure",)),
    Mutation("seeded_order_ignored",
             "a seeded run hands partition selection's draws to the groups in DuckDB's order again: the same "
             "seed on the same rows releases other groups when the file's order differs",
             (Patch("dpsql/pipeline/columnar.py", "    if groups is None or not isinstance(rng, SeededRandom):",
                    "    if True:"),),
             ("tests/test_seeded_order.py::test_a_seeded_answer_does_not_depend_on_the_groups_order",)),
    Mutation("seeded_order_noisy_counts_misplaced",
             "in a seeded run the truncated geometric's noisy counts go to the kept groups in sorted order, "
             "not back to each group's own place",
             (Patch("dpsql/pipeline/columnar.py", "        noisy = at[back]", "        noisy = noisy"),),
             ("tests/test_seeded_order.py::test_a_seeded_answer_does_not_depend_on_the_groups_order",)),
    Mutation("answers_pruned_across_analysts",
             "the bound counts every analyst's answers together: one analyst's many statements push another's "
             "answers out, and that analyst is charged again for a repeat",
             (Patch("dpsql/ledger/answers.py",
                    '    n, size = db.execute("SELECT COUNT(*), TOTAL(size) FROM answers WHERE analyst = ?", (analyst,)).fetchone()',
                    '    n, size = db.execute("SELECT COUNT(*), TOTAL(size) FROM answers WHERE analyst = ? OR 1", (analyst,)).fetchone()'),
              Patch("dpsql/ledger/answers.py",
                    'db.execute("SELECT key, size FROM answers WHERE analyst = ? ORDER BY used, rowid", (analyst,))',
                    'db.execute("SELECT key, size FROM answers WHERE analyst = ? OR 1 ORDER BY used, rowid", (analyst,))')),
             ("tests/test_answers_bound.py::test_one_analysts_statements_never_push_out_anothers_answers",)),
    Mutation("answer_kept_and_pruned_apart",
             "an answer is kept with its charge and the oldest pruned in a second commit: a crash between them "
             "leaves the store past its bound",
             (Patch("dpsql/ledger/answers.py", "            prune(db, ledger.analyst, budget.answers_kept, budget.answers_bytes)\n",
                    "            pass\n"),
              Patch("dpsql/ledger/answers.py", '        db.execute("RELEASE kept")\n',
                    '        db.execute("RELEASE kept")\n        db.execute("COMMIT")\n        db.execute("BEGIN IMMEDIATE")\n'
                    '        prune(db, ledger.analyst, budget.answers_kept, budget.answers_bytes)\n')),
             (f"{CRASH}::test_a_kill_at_every_statement_of_keeping_and_pruning_an_answer",)),
    Mutation("answer_store_failure_fails_the_charge",
             "an answer SQLite refuses to keep fails its charge's whole transaction: the query is refused "
             "after its rows were read, where only the reuse should be lost",
             (Patch("dpsql/ledger/answers.py", "        except sqlite3.Error:", "        except ZeroDivisionError:"),),
             ("tests/test_reuse.py::test_an_answer_the_store_refuses_leaves_its_charge_standing",)),
    Mutation("advise_default_ignores_the_total",
             "dpsql advise charges 0.1 by default whatever the policy's total: 40% of the total dpsql init drafts",
             (Patch("dpsql/faces/advise_cmd.py", "else min(DEFAULT_RHO, total * DEFAULT_SHARE)", "else DEFAULT_RHO"),),
             ("tests/test_advise_spend.py::test_the_default_is_a_tenth_of_the_drafted_total_and_said_before",)),
    # ------------------------------------------------------------------ SQL over released answers (issue 32)
    Mutation("over_answers_outer_on_exact_rows",
             "the outer SQL over an aggregate subquery runs on the subquery's exact per-group values, not its release",
             (Patch(OVER, "        return session.finisher.run(_registered(inner.rows, len(names)), outer_sql(over, names, types, rows=True))",
                    "        return session.finisher.run(_registered(session.engine.run(session.decide(over.inner).query), "
                    "len(names)), outer_sql(over, names, types, rows=True))"),),
             (f"{OVERT}::test_an_average_of_released_counts_is_the_mean_of_the_released_rows",
              f"{OVERT}::test_a_cte_used_twice_charges_once_and_the_outer_sql_runs_on_the_released_rows")),
    Mutation("over_answers_bound_after_the_charge",
             "the outer SQL is not bound in phase 1: an outer query that cannot run is found after the subquery was charged",
             (Patch(OVER, "    names, types, _, _ = bound or bind(session, over)",
                    "    names, types = session.describe(over.inner)"),
              Patch(OVER, "    value = (found, bind(session, found) if isinstance(found, Over) else None)",
                    "    value = (found, None)"),),
             (f"{OVERT}::test_refused_in_phase_1_with_nothing_charged[unbound_outer]",)),
    Mutation("over_answers_outer_reads_a_table",
             "the outer SQL over a released answer may also read a private table (of the finisher's schema twin)",
             (Patch("dpsql/intercept/answer_shapes.py",
                    "    others = [t for t in outer.find_all(exp.Table) if t.name != ANSWER or not isinstance(t.this, exp.Identifier)]",
                    "    others = []"),),
             (f"{OVERT}::test_refused_in_phase_1_with_nothing_charged[a_table_besides]",)),
    Mutation("series_limit_budget_of_the_second_only",
             "a series limit checks only its second release's cost first: the first is charged, then the second refused",
             (Patch(OVER, "    session.ledger.check(d_outer.rho + (0 if free else d_inner.rho), d_outer.delta + (0 if free else d_inner.delta))",
                    "    session.ledger.check(d_outer.rho, d_outer.delta)"),),
             (f"{OVERT}::test_the_series_limit_checks_the_budget_of_both_releases_first",)),
    Mutation("series_limit_receipt_omits_the_second_charge",
             "a series limit's receipt states the first release's charge only, not the second's",
             (Patch(OVER, "    charged = [r for r in (first.receipt, second.receipt) if r.charge_id is not None]  # a reused one has none",
                    "    charged = [first.receipt]"),),
             (f"{OVERT}::test_the_series_limit_is_two_releases_and_keeps_the_released_groups",)),
    Mutation("series_limit_ranking_from_exact_values",
             "a series limit read from one release keeps the subquery's exact top n, not the top n of the released cells",
             (Patch(OVER, "    return series_derived.finish(one, base, series_derived.charge_note(base))",
                    "    exact = {(r[0],) for r in sorted(session.engine.run(session.decide(series.inner).query), "
                    "key=lambda r: -r[1])[:one.n]}; return series_derived.finish(replace(one, n=None), replace(base, "
                    "rows=[r for r in base.rows if tuple(r[i] for i in one.keys) in exact]), '')"),),
             (f"{SERIESD}::test_the_ranking_is_from_noisy_cells_not_exact_counts",)),
    Mutation("group_others_ranking_from_exact_values",
             "Superset's \"group others\" keeps the subquery's exact top n, not the top n of the released cells",
             (Patch(OTHERS, "        kept = set(top_keys(ranked, one.keys, one.metric, one.descending, one.n))",
                    "        kept = {(r[0],) for r in sorted(session.engine.run(session.decide(series.inner).query), "
                    "key=lambda r: -r[1])[:one.n]}"),),
             (f"{OTHERST}::test_the_ranking_and_the_others_are_from_noisy_cells_not_exact_counts",)),
    Mutation("group_others_budget_of_the_second_only",
             "\"group others\" in two releases checks only the second's cost first: the first is charged, then the "
             "second refused",
             (Patch(OTHERS, "        session.ledger.check(d_base.rho + (0 if free else d_inner.rho), d_base.delta + (0 if free else d_inner.delta))",
                    "        session.ledger.check(d_base.rho, d_base.delta)"),),
             (f"{OTHERST}::test_two_releases_check_the_budget_of_both_first",)),
    Mutation("group_others_sigma_understated",
             "an Others cell's σ (a sum of independent noisy cells) is stated as its largest cell's, not the root of "
             "the sum of their σ²: its error bars understate its noise",
             (Patch(OTHERS, "    return math.sqrt(sum(float(v) ** 2 for v in values))", "    return max(float(v) for v in values)"),),
             (f"{OTHERST}::test_one_release_the_top_keys_as_released_and_the_others_added_up",)),
    # ------------------------------------------------------------------ NULL as a key value (sql/null_keys.py, issue 32)
    Mutation("null_group_only_with_null_rows",
             "a nullable key's keyset loses its NULL: rows whose key is NULL vanish from the answer, and a NULL "
             "group shown only when rows hold NULL would tell that they do",
             (Patch("dpsql/pipeline/domain.py", "        return keyset + (None,) if column in plan.null_columns else keyset",
                    "        return keyset"),),
             (f"{NULLS}::test_null_group_is_released_when_no_row_is_null", f"{NULLS}::test_penguins_by_sex_has_a_null_group")),
    Mutation("null_date_group_takes_rows_outside_the_range",
             "a nullable date key: rows outside the declared range (read as NULL) are counted in the NULL group",
             (Patch("dpsql/sql/null_keys.py", "            out.append(exp.or_(is_null, within))", "            pass"),),
             (f"{NULLS}::test_date_range_null_group_holds_null_days_only",)),
    Mutation("null_group_records_dropped_before_bounding",
             "many rows per unit: records of a released NULL group are dropped before bounding (the group undercounts)",
             (Patch("dpsql/sql/units.py", "        null = k.column in plan.null_columns", "        null = False"),),
             (f"{NULLS}::test_many_rows_table_keeps_null_records",)),
    Mutation("bare_text_column_as_a_condition",
             "a bare text column as a WHERE condition counts as total: its cast to BOOLEAN fails on a row holding 'abc', "
             "after private rows were read",
             (Patch("dpsql/sql/totality.py", '    number = isinstance(inner, exp.Column) and getattr(value_type(inner, schema), "kind", "") in ("int", "float", "bool")',
                    '    number = isinstance(inner, exp.Column)'),),
             ("tests/test_smartnoise_forms.py::test_a_bare_text_column_as_a_condition_is_refused_before_reading",)),
    # ------------------------------------------------------------------ a public keyset narrowed by the WHERE (sql/narrow.py)
    Mutation("narrow_by_a_conjunct_of_other_columns",
             "a WHERE conjunct narrows a key whose columns it does not all read: its evaluation on the keyset fails "
             "and the key's own conjuncts are lost with it (the whole keyset again), or, run where the column exists, "
             "groups rows fall in are dropped",
             (Patch("dpsql/sql/narrow.py", "                if key.public and (cols := {n.name for n in c.find_all(exp.Column)}) and cols <= own",
                    "                if key.public and (cols := {n.name for n in c.find_all(exp.Column)})"),),
             ("tests/test_narrow_keys.py::test_an_integer_range_key_releases_the_ages_its_where_admits",)),
    Mutation("narrow_a_timestamp_on_its_grid",
             "a TIMESTAMP key declared by the day is narrowed on its midnights: a month whose rows pass the WHERE "
             "only after midnight of its last admitted day is dropped",
             (Patch("dpsql/sql/narrow.py", '    return types.get(column, "").upper() == "DATE"', "    return True"),),
             ("tests/test_narrow_keys.py::test_a_timestamp_finer_than_its_grain_is_not_narrowed",)),
    Mutation("noise_scale_unchecked",
             "a noise scale past what the int64 samplers draw is not refused in phase 1: the query is charged, "
             "then fails (DP901) in some or all draws",
             (Patch("dpsql/pipeline/decide.py", "        if not scale_fits(a, sens[a.primitive]):", "        if False:"),),
             ("tests/test_noise_scale_limit.py::test_a_scale_past_2_57_is_refused_before_the_charge",)),
    Mutation("session_kappa_above_the_policy",
             "SET dpsql.max_groups = k replaces the policy's κ instead of capping it: a k above the policy's lets "
             "a unit keep more groups than the data owner allows, at a per-unit loss the policy never states",
             (Patch("dpsql/sql/session_cap.py", "    if cap is not None and table.max_groups is not None and cap < table.max_groups:",
                    "    if cap is not None and table.max_groups is not None:"),),
             ("tests/test_max_groups_setting.py::test_a_kappa_at_or_above_the_policys_changes_nothing",)),
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
    """pytest on ``node_ids`` in the copy at ``repo``; (exit code or None on time-out, output).
    pytest runs in a process group of its own, and a time-out ends the whole group: what the
    tests started goes too (a Spark master and worker of tests/spark_cluster.py, whose
    ``finally`` never runs when pytest is killed, were left running otherwise), and so does a
    run that ends by itself: pytest-timeout's thread method ends a hung test with ``os._exit``,
    which skips every fixture's teardown (two JVMs were left so, 2026-11-26)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-rf", "-n", "0", "-p", "no:cacheprovider", *node_ids]
    with subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            end_group(proc)
            try:
                out, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:  # something outside the group holds the pipe
                out = ""
            return None, out or ""
        end_group(proc)  # pytest-timeout ends a hung test with os._exit: no fixture's finally ran either
    return proc.returncode, out


def end_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Ends the process group ``proc`` leads (``start_new_session``): SIGTERM (a JVM shuts down),
    then SIGKILL for what is left after ``grace`` seconds."""
    import signal

    def alive() -> bool:
        try:
            os.killpg(proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    if not alive():
        return
    os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reaps pytest itself
        if not alive():
            return
        time.sleep(0.2)
    if alive():
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


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
        return "killed", f"by {', '.join(failed_tests(out)) or '?'} ({last})", elapsed
    if code == 0:
        return "survived", last, elapsed
    return "error", f"pytest exit code {code}: " + "\n".join(out.strip().splitlines()[-15:]), elapsed


def failed_tests(out: str) -> list[str]:
    """The node ids pytest's ``-rf`` summary names as failed (the tests that killed a mutation)."""
    ids = []
    for line in out.splitlines():
        if not line.startswith("FAILED "):
            continue
        rest = line.removeprefix("FAILED ")
        head = rest.split(" ", 1)[0]
        if "[" in head and not head.endswith("]"):  # a parameter id with spaces: up to its "]"
            end = rest.find("] - ")
            head = rest[:end + 1] if end >= 0 else rest
        ids.append(head)
    return ids


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

    print("\n| mutation | result | killed by | seconds |\n|---|---|---|---|")
    for name, (status, detail, seconds) in results.items():
        killer = detail[3:].split(" (", 1)[0] if status == "killed" else ""
        print(f"| {name} | {status} | {killer} | {seconds:.0f} |")
    counts = {s: sum(r[0] == s for r in results.values()) for s in ("killed", "survived", "error")}
    print(f"\n{counts['killed']} killed, {counts['survived']} survived, {counts['error']} errors "
          f"of {len(results)} mutations")
    if counts["error"]:
        return 2
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
