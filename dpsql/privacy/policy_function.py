"""The public per-record policy function P(r) of everything released so far.

Every charge in the ledger carries the terms it adds (paper 000 Lemma 5.1, Lemma 5.6, Table 3):
``ρ·|A(r)|²`` for sums over split records (|A(r)| = max(1, max over the query's measures of
⌈|r(a)|/T(a)⌉), capped at max_splits) and ``ρ`` for counts. Composition adds them (paper 000
Lemma 4.2), so P(r) = Σ_q ρ_q·|A_q(r)|² + Σ_q ρ'_q.

Many rows per unit (issue 31; the query path, ``sql/units.py``, charges per (unit, group)
record and states the bound κ·K²·ρ, :func:`unit_policy_bound`, in its terms): :func:`unit_policy_loss` is
P(u) = Σ_g ρ·|A_g(u)|² over the ≤ κ groups a unit keeps (paper 000 Algorithm 1 per (unit, group),
Lemma 5.1, the P-PRzCDP definition of section 3), :func:`group_splits` its |A_g(u)|.

P is a function of a record's values, which are private: dpsql prints P as a formula and
evaluates it only for a hypothetical record the user types in — never for actual records.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from dpsql.errors import QueryRefused
from dpsql.privacy.budget import fmt, fmt_up

#: a number P(u) takes (as selection_numbers.Real, without importing numpy: `dpsql policy` loads none)
Real = int | float | Fraction


class Charged(Protocol):
    """What P(r) reads of a ledger charge (:class:`dpsql.ledger.book.Charge`): the terms it added."""

    policy_terms: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Term:
    """All charges with the same shape, summed: ``rho`` times ``|A(r)|²`` (split) or times 1."""

    table: str
    rho: Fraction
    measures: tuple[str, ...] = ()  # empty: the constant term
    thresholds: str = "{}"  # JSON of the thresholds, as shown
    max_splits: int | None = None
    #: δ of partition selections: (δ, ε) pairs; ε set when the δ grows with |A(r)| by group
    #: privacy (δ·(e^(kε) − 1)/(e^ε − 1) for a record of k splits: docs/privacy.md, "Partition
    #: selection"), None when it is the same for all
    deltas: tuple[tuple[Fraction, Fraction | None], ...] = ()
    #: κ of a table with many rows per unit: the term is per (unit, group) record, and P(u) sums
    #: it over the unit's groups (:func:`evaluate`); of a constant term, ``group_rho`` is paid
    #: per group and the rest (partition selections) once
    max_groups: int | None = None
    group_rho: Fraction | None = None
    #: the r of the quantiles among these charges (``quantile_rows``: rows of a unit a quantile read
    #: per group, its mechanism at ε/r), each as "r" or "r (set)" of ``quantile_rows_by``
    quantile_rows: tuple[str, ...] = ()
    #: geometric mode, many rows per unit: Σ ε of these charges per split (split) or per group
    #: (constant), and the selections' ε paid once; None when a charge has no pure-ε statement
    #: (Gaussian noise, or Gaussian thresholding at the charge): docs/privacy.md, "Pure ε per unit"
    epsilon: Fraction | None = None
    once_epsilon: Fraction = Fraction(0)

    @property
    def split(self) -> bool:
        return bool(self.measures)


def collect(charges: Iterable[Charged]) -> list[Term]:
    """The terms of P(r), summed by table and shape, in a stable order."""
    rhos: dict[tuple[Any, ...], Fraction] = {}
    group_rhos: dict[tuple[Any, ...], Fraction] = {}
    deltas: dict[tuple[Any, ...], dict[Fraction | None, Fraction]] = {}
    rows: dict[tuple[Any, ...], set[str]] = {}
    epsilons: dict[tuple[Any, ...], tuple[Fraction, Fraction] | None] = {}
    for c in charges:
        for t in c.policy_terms:
            shape = (t["table"], tuple(t.get("measures", ())), json.dumps(t.get("thresholds", {}), sort_keys=True),
                     t.get("max_splits"), t.get("max_groups"))
            e = epsilons.get(shape, (Fraction(0), Fraction(0)))
            pure = "unit_epsilon_bound_exact" in t and t["unit_epsilon_bound_exact"] != "None"
            epsilons[shape] = None if e is None or not pure else (
                e[0] + Fraction(t["epsilon_exact"]), e[1] + Fraction(t.get("selection_epsilon_exact", "0")))
            rhos[shape] = rhos.get(shape, Fraction(0)) + Fraction(t["rho_exact"])
            group_rhos[shape] = group_rhos.get(shape, Fraction(0)) + Fraction(t.get("group_rho_exact", t["rho_exact"]))
            if "quantile_rows" in t:
                by = f" ({t['quantile_rows_by']})" if "quantile_rows_by" in t else ""
                rows.setdefault(shape, set()).add(f"{t['quantile_rows']}{by}")
            if "delta_exact" in t:
                eps = Fraction(t["delta_epsilon"]) if "delta_epsilon" in t else None
                by_eps = deltas.setdefault(shape, {})
                by_eps[eps] = by_eps.get(eps, Fraction(0)) + Fraction(t["delta_exact"])
    out = []
    for key in sorted(rhos, key=lambda k: (k[0], -len(k[1]), k[1], k[2], k[4] or 0)):
        table, measures, thresholds, max_splits, max_groups = key
        parts = sorted(deltas.get(key, {}).items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))
        e = epsilons[key]
        out.append(Term(table, rhos[key], measures, thresholds, max_splits, tuple((d, eps) for eps, d in parts),
                        max_groups, group_rhos[key] if max_groups else None, tuple(sorted(rows.get(key, ()))),
                        e[0] if e else None, e[1] if e else Fraction(0)))
    return out


def pure_formula(formula_text: str) -> bool:
    """Whether a table's formula (:func:`formula`) states a pure-ε E(u) (geometric mode, many rows)."""
    return "E(u) = " in formula_text


def split_formula(term: Term) -> str:
    thresholds = json.loads(term.thresholds)
    parts = [f"⌈|{m}|/{thresholds.get(m, 'T')}⌉" for m in term.measures]
    text = f"max(1, {', '.join(parts)})"
    for key, groups in thresholds.items():
        if " by " in key:
            measure, by = key.split(" by ")
            text += f" [{measure}'s threshold by {by}: {', '.join(f'{k}: {v}' for k, v in groups.items())}]"
    if term.max_splits:
        text = f"min({term.max_splits}, {text})"
    return text


def formula(terms: list[Term]) -> dict[str, str]:
    """P(r) per table, as text (and δ(r) when partition selections spent δ)."""
    out: dict[str, list[str]] = {}
    dout: dict[str, list[str]] = {}
    eout: dict[str, list[str | None]] = {}  # geometric mode, many rows: the pure-ε statement E(u)
    for t in terms:
        if t.max_groups:  # many rows per unit: per (unit, group) record, summed over the unit's groups
            once = t.rho - (t.group_rho or 0)
            piece = (f"Σ_g {fmt(t.rho)}·|A_g(u)|², |A_g(u)| = {split_formula(t)}" if t.split
                     else f"{fmt(t.group_rho or 0)}·(groups of u)" + (f" + {fmt(once)}" if once else ""))
            r = f"; quantiles read at most r = {', '.join(t.quantile_rows)} rows of u per group" if t.quantile_rows else ""
            out.setdefault(t.table, []).append(piece + f" [u in at most {t.max_groups} groups of each query{r}]")
            eout.setdefault(t.table, []).append(
                None if t.epsilon is None else f"Σ_g {fmt_up(t.epsilon)}·|A_g(u)|" if t.split
                else f"{fmt_up(t.epsilon)}·(groups of u)" + (f" + {fmt_up(t.once_epsilon)}" if t.once_epsilon else ""))
        else:
            out.setdefault(t.table, []).append(f"{fmt(t.rho)}·|A(r)|², |A(r)| = {split_formula(t)}" if t.split else fmt(t.rho))
        for d, eps in t.deltas:
            dout.setdefault(t.table, []).append(fmt_up(d) if eps is None or not t.split
                                                else f"{fmt_up(d)}·(e^(|A(r)|·{fmt_up(eps)})−1)/(e^{fmt_up(eps)}−1)")
    units = {t.table for t in terms if t.max_groups}
    pure = {table: "  +  ".join(e) for table, e in eout.items() if all(x is not None for x in e)}  # type: ignore[misc]
    return {table: ("P(u) = " if table in units else "P(r) = ") + "  +  ".join(pieces)
            + (f";  δ(r) = {'  +  '.join(dout[table])}" if table in dout else "")
            + (f";  pure ε-DP per unit (geometric): E(u) = {pure[table]}" if table in pure else "")
            for table, pieces in out.items()}


def evaluate(terms: list[Term], table: str, record: dict[str, str]) -> tuple[Fraction, list[dict[str, Any]]]:
    """P(r) of a hypothetical record (measure=value, and key=value for per-group thresholds).

    Returns the total and one line per term showing how it comes about.
    """
    total = Fraction(0)
    lines = []
    for t in (t for t in terms if t.table == table):
        if t.max_groups:
            loss, line = _unit_term(t, record)
            total += loss
            lines += [{"delta": f"{float(d):.3g}", "why": f"δ {float(d):.3g} from partition selections, the same for every unit"}
                      for d, _ in t.deltas] + [line]
            continue
        if not t.split:
            for d, _ in t.deltas:
                lines.append({"delta": fmt_up(d), "why": f"δ {fmt_up(d)} from partition selections, the same for every record"})
            total += t.rho
            lines.append({"rho": fmt(t.rho), "splits": None, "loss": fmt(t.rho),
                          "why": f"{fmt(t.rho)} from unsplit releases (counts), the same for every record"})
            continue
        thresholds = json.loads(t.thresholds)
        splits = 1
        why = []
        for m in t.measures:
            threshold = Fraction(_threshold(thresholds, m, record))
            raw = record.get(m)
            try:
                value = abs(Fraction(raw)) if raw is not None else Fraction(0)
            except ValueError:
                raise QueryRefused(f"{m}={raw}: not a number", code="DP119") from None
            k = math.ceil(value / threshold)
            why.append(f"⌈{raw if raw is not None else 0}/{fmt(threshold)}⌉={k}")
            splits = max(splits, k)
        if t.max_splits:
            splits = min(splits, t.max_splits)
        loss = t.rho * splits * splits
        for d, eps in t.deltas:
            dk = float(d) * (math.expm1(splits * float(eps)) / math.expm1(float(eps)) if eps else 1)
            lines.append({"delta": fmt_up(dk), "why": f"δ {fmt_up(d)}·(e^({splits}·{fmt_up(eps) if eps else 0})−1)/"
                                                      f"(e^{fmt_up(eps) if eps else 0}−1) = {fmt_up(dk)} "
                                                      "from partition selection on split rows (group privacy)"})
        total += loss
        lines.append({"rho": fmt(t.rho), "splits": splits, "loss": fmt(loss),
                      "why": f"|A(r)| = max(1, {', '.join(why)}) = {splits}; {fmt(t.rho)}·{splits}² = {fmt(loss)}"})
    return total, lines


def _unit_term(t: Term, record: dict[str, str]) -> tuple[Fraction, dict[str, Any]]:
    """A many-row term's part of P(u) for a unit described per group: ``amount=120,30,400
    rows=12,3,40`` (one comma-separated value per group the unit is in, the same groups in every
    query; ``rows`` is its row count, ``#rows`` in the terms). Σ_g ρ·|A_g(u)|² for a split term
    (:func:`group_splits` per measure, the largest per group), group_rho·m + the rest for a
    constant one, m ≤ κ groups."""
    per = {("#rows" if k == "rows" else k): [x for x in v.split(",")] for k, v in record.items()}
    groups = max((len(v) for v in per.values()), default=1)
    if t.max_groups and groups > t.max_groups:
        raise QueryRefused(f"a unit keeps at most {t.max_groups} groups of a query: give at most {t.max_groups} "
                           "values per measure", code="DP119")
    if not t.split:
        loss = (t.group_rho or Fraction(0)) * groups + t.rho - (t.group_rho or Fraction(0))
        e = None if t.epsilon is None else t.epsilon * groups + t.once_epsilon
        return loss, {"rho": fmt(t.rho), "splits": None, "loss": fmt(loss), **({"epsilon_exact": str(e)} if e is not None else {}),
                      "why": f"{fmt(loss)} from counts in the unit's {groups} group(s)"
                             + (" and partition selections (once)" if t.rho != t.group_rho else "")
                             + (f"; pure epsilon E = {fmt_up(e)}" if e is not None else "")}
    thresholds = json.loads(t.thresholds)
    splits = [1] * groups
    for m in t.measures:
        # rows where a column is not NULL (#rows(col)) are at most the rows: their count stands for them
        values = per.get(m, per.get("#rows", []) if m.startswith("#rows(") else [])
        try:
            totals = [Fraction(values[g]) if g < len(values) else Fraction(0) for g in range(groups)]
        except ValueError:
            raise QueryRefused(f"{m}={','.join(values)}: not numbers", code="DP119") from None
        splits = [max(a, b) for a, b in zip(splits, group_splits(totals, Fraction(thresholds.get(m, 1)), t.max_splits))]
    loss = unit_policy_loss(t.rho, splits, t.max_groups or len(splits), t.max_splits)
    e = None if t.epsilon is None else unit_epsilon_loss(t.epsilon, splits, t.max_groups or len(splits), t.max_splits)
    return loss, {"rho": fmt(t.rho), "splits": splits, "loss": fmt(loss), **({"epsilon_exact": str(e)} if e is not None else {}),
                  "why": f"|A_g(u)| = {', '.join(map(str, splits))} over {groups} group(s); "
                         f"Σ_g {fmt(t.rho)}·|A_g(u)|² = {fmt(loss)}"
                         + (f"; pure epsilon Σ_g {fmt_up(t.epsilon)}·|A_g(u)| = {fmt_up(e)}" if e is not None else "")}


def _threshold(thresholds: dict[str, Any], measure: str, record: dict[str, str]) -> str:
    for key, groups in thresholds.items():
        if key.startswith(f"{measure} by "):
            by = key.split(" by ")[1]
            if by not in record:
                raise QueryRefused(f"{measure}'s threshold depends on {by}: give {by}=VALUE too", code="DP119")
            return str(groups.get(record[by], thresholds[measure]))
    return str(thresholds[measure])


def parse_record(items: list[str]) -> dict[str, str]:
    """``["employees=150", "payann=10000"]`` -> {"employees": "150", "payann": "10000"}."""
    out = {}
    for item in items:
        if "=" not in item:
            raise QueryRefused(f"cannot read {item!r}: write measure=value, e.g. employees=150", code="DP119")
        k, v = item.split("=", 1)
        out[k.strip().lower()] = v.strip()
    return out


# ---------------------------------------------------------------------------------------------
# Many rows per unit (issue 31): P(u) over a unit's groups. The model and its proof are in
# docs/privacy.md, "Many rows per unit" (the query path, dpsql/sql/units.py, states the bound).
# ---------------------------------------------------------------------------------------------


def _units_kappa(kappa: object) -> int:
    if isinstance(kappa, bool) or not isinstance(kappa, int) or kappa < 1:
        raise ValueError("kappa must be an int >= 1")
    return kappa


def group_splits(totals: Sequence[Real], threshold: Real, max_splits: int | None = None) -> list[int]:
    """|A_g(u)| for each of a unit's per-group totals of one measure: max(1, ceil(|total|/T)),
    capped at ``max_splits`` (paper 000 Algorithm 1: the per-(unit, group) total is split as a
    record's value is). For several measures, take the elementwise max over them. Exact."""
    t = Fraction(threshold)
    if t <= 0:
        raise ValueError("threshold must be > 0")
    out = []
    for v in totals:
        a = max(1, math.ceil(abs(Fraction(v)) / t))
        out.append(min(a, max_splits) if max_splits else a)
    return out


def unit_policy_loss(rho: Real, splits: Sequence[int], kappa: int,
                     max_splits: int | None = None) -> Fraction:
    """P(u) = sum over the unit's groups g of rho |A_g(u)|^2, exact.

    Why a sum of squares, not the square of the sum (docs/privacy.md, "Many rows per unit"): each
    group's cell gets independent Gaussian noise calibrated to one split (rho-zCDP per split row);
    the unit moves cell g by at most |A_g(u)| splits, so D_alpha of cell g is <= alpha rho
    |A_g(u)|^2 (paper 000 Lemma 5.1), and the Renyi divergence of independent cells is the sum of
    theirs: the unit's loss is P(u) in the sense of paper 000's P-PRzCDP definition (section 3).

    Raises ValueError for more than kappa groups (the bounding transformation keeps <= kappa) or a
    split count outside [1, max_splits].
    """
    r = Fraction(rho)
    k = _units_kappa(kappa)
    if len(splits) > k:
        raise ValueError(f"a unit keeps at most kappa = {k} groups, not {len(splits)}")
    total = Fraction(0)
    for a in splits:
        if isinstance(a, bool) or int(a) != a or a < 1 or (max_splits and a > max_splits):
            raise ValueError(f"split counts are ints in [1, max_splits], not {a!r}")
        total += r * int(a) * int(a)
    return total


def unit_epsilon_loss(epsilon: Real, splits: Sequence[int], kappa: int, max_splits: int | None = None) -> Fraction:
    """E(u) = Σ_g ε·|A_g(u)|, exact: geometric mode's pure-ε loss of a unit (docs/privacy.md, "Pure ε
    per unit"). Each cell's two-sided geometric noise at b = Δ/ε is ε-DP for a shift of Δ, so
    |A_g(u)|·ε-DP for the unit's shift of at most |A_g(u)|·Δ (group privacy); independent cells
    compose by adding ε (basic composition). Same checks as :func:`unit_policy_loss`."""
    unit_policy_loss(1, splits, kappa, max_splits)  # validates the splits and their number
    return Fraction(epsilon) * sum(int(a) for a in splits)


def unit_policy_bound(rho: Real, kappa: int, max_splits: int) -> Fraction:
    """The largest P(u) of any unit: kappa K^2 rho (kappa groups, each split K = max_splits times)."""
    return _units_kappa(kappa) * int(max_splits) ** 2 * Fraction(rho)


def unit_epsilon(kappa: int, max_splits: int | None, term: dict[str, Any], eps_sel: Fraction | None) -> dict[str, Any]:
    """The receipt's and EXPLAIN's pure-ε statement of a term (``decide.policy_terms``), geometric mode on a table with many rows per unit: a unit's pure-ε loss E(u) = Σ_g ε·|A_g(u)|
    for the split term (a cell moved by |A_g(u)| splits of noise b = Δ/ε is |A_g(u)|·ε-DP, group
    privacy; cells add, basic composition), at most κ·K·ε; for the constant term ε per group it is
    in (counts of units, COUNT(DISTINCT col) at Δ = R, quantiles at ε/r) and the selection's ε once,
    at most κ·ε + ε_sel. ``eps_sel`` None: the selection is not (ε, δ)-DP (Gaussian thresholding at
    the charge), so no pure statement covers the constant term."""
    k, eps = kappa, Fraction(term["epsilon_exact"])
    if term["scale"] != "1":
        bound = k * max_splits * eps if max_splits else None
        return {"unit_epsilon_bound": "none (no max_splits)" if bound is None else fmt_up(bound),
                "unit_epsilon_bound_exact": str(bound), "unit_epsilon": "E(u) = sum over its groups of epsilon*|A_g(u)|"}
    group = eps
    out: dict[str, Any] = {"group_epsilon_exact": str(group)}
    if eps_sel is None:
        out.update({"unit_epsilon_bound": "none (the selection is Gaussian thresholding at the charge: zCDP, not epsilon-DP)",
                    "unit_epsilon_bound_exact": "None"})
    else:
        bound = k * group + eps_sel
        out.update({"unit_epsilon_bound": fmt_up(bound), "unit_epsilon_bound_exact": str(bound)})
        if eps_sel:
            out["selection_epsilon_exact"] = str(eps_sel)
    out["unit_epsilon"] = "E(u) = epsilon per group of the unit" + (", plus the selection's epsilon once" if eps_sel else "")
    return out


@dataclass(frozen=True)
class UnitTable:
    """The charges on one table with many rows per unit, as the ledger's guarantee states them."""

    table: str
    kappa: int  # the largest κ among its charges (groups a unit keeps per query)
    rho: Fraction  # the ρ its charges spent
    bound: Fraction | None  # Σ of their terms' per-unit bounds (κ·K²·ρ, κ·ρ, ...): P(u) ≤ bound; None: unbounded


def unit_tables(charges: Iterable[Charged]) -> list[UnitTable]:
    """The tables with many rows per unit among ``charges`` (their terms carry ``max_groups``): on
    them the ρ spent is a (unit, group) record's loss, and a unit's P(u) is bounded by the sum of the
    terms' ``unit_bound_exact`` (None as soon as one has none: a SUM without ``max_splits``)."""
    found: dict[str, tuple[int, Fraction, Fraction | None]] = {}
    for c in charges:
        for t in c.policy_terms:
            if "max_groups" not in t:
                continue
            k, rho, bound = found.get(t["table"], (1, Fraction(0), Fraction(0)))
            b = t.get("unit_bound_exact", "None")
            found[t["table"]] = (max(k, int(t["max_groups"])), rho + Fraction(t["rho_exact"]),
                                 None if bound is None or b == "None" else bound + Fraction(b))
    return [UnitTable(name, *found[name]) for name in sorted(found)]


def unit_guarantee(t: UnitTable, spent: Fraction, delta_spent: Fraction, conversion: Fraction, evaluate: str) -> str:
    """The sentence `dpsql ledger` and ``\\budget`` add for a table with many rows per unit: what the
    ρ spent means there, and what holds for a unit. Its bound over everything spent is P(u) on this
    table (≤ ``t.bound``) plus the ρ spent elsewhere (a record never split pays that), converted as
    the ledger converts its total (docs/privacy.md, "The (ε, δ)-DP of everything spent").
    ``evaluate``: the command that evaluates P(u) for a unit (``dpsql policy``, ``\\policy``)."""
    head = (f"on {t.table} (many rows per unit) a record is one unit's rows in one group of a query, so that holds for "
            f"a unit only if it is in one group of each query and never split; a unit pays P(u) = Σ_g ρ·|A_g(u)|² "
            f"summed over its groups (at most {t.kappa} in each query)")
    tail = f"; {evaluate} evaluates P(u) for a unit given one value per group"
    if t.bound is None:
        return head + f", with no bound: a query summed a measure of {t.table} without max_splits" + tail
    from dpsql.privacy.accounting import guarantee

    total = t.bound + spent - t.rho
    g = guarantee(total, delta_spent, conversion)
    return (head + f": at most {fmt(t.bound)} for the {fmt(t.rho)} spent on {t.table}, so everything spent is "
            f"({fmt_up(g.epsilon_tight)}, {fmt_up(g.delta)})-DP for every unit of {t.table} (P(u) ≤ {fmt(total)}, "
            "its records in other tables never split)" + tail)


def unit_sentences(charges: Iterable[Charged], conversion: Fraction, evaluate: str) -> list[str]:
    """:func:`unit_guarantee` for each table with many rows per unit among ``charges``, with the ρ and
    δ those charges spent in all (what `dpsql ledger`, ``\\budget`` and ``Connection.budget`` add)."""
    charges = list(charges)
    spent, delta = sum((c.rho for c in charges), Fraction(0)), sum((c.delta for c in charges), Fraction(0))
    return [unit_guarantee(t, spent, delta, conversion, evaluate) for t in unit_tables(charges)]
