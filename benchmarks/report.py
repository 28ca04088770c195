"""Markdown renderings of the results: pure functions of a result, one per section of
``docs/evaluation.md`` (the speed section is rendered by :mod:`benchmarks.speed`)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from .cbp import (
    LEVELS,
    LOSS_LEVELS,
    MIN_GROUP,
    QUERIES_PER_LEVEL,
    QUERY_LABELS,
    PolicyLossResult,
    UtilityResult,
)
from .common import are_str, md_table, pct
from .dpmath import SPLIT_SCHEMES, TOPCODE_SCHEMES
from .heavy_tail import VARIABLES, HeavyTailResult, best_topcode

MEASURE_ORDER = ("employees", "payann", "payqtr1")


def _configs() -> list[tuple[str, str, str]]:
    """(query, method, scheme) rows in the order the tables show them."""
    out = [("count", "both", "-")]
    for m in MEASURE_ORDER:
        out += [(m, "topcode", s.name) for s in TOPCODE_SCHEMES]
        out += [(m, "split", s.name) for s in SPLIT_SCHEMES]
    return out


def _label(method: str, scheme: str) -> str:
    return {"both": "either (not split)", "topcode": f"top-coding, {scheme}", "split": f"splitting, {scheme}"}[method]


def _row(res: UtilityResult, level: int, m: str, method: str, scheme: str, rho: Fraction) -> dict[str, Any]:
    for r in res.summary:
        if (r["naics_level"] == level and r["query"] == QUERY_LABELS[m] and r["method"] == method
                and r["scheme"] == scheme and r["rho_level"] == float(rho)):
            return r
    raise KeyError((level, m, method, scheme, rho))


def utility_headline(res: UtilityResult, rho: Fraction = Fraction(1)) -> dict[str, Any]:
    """Median ARE of SUM(payann) by county x 2-digit NAICS at the level budget rho, per scheme."""
    out: dict[str, Any] = {}
    for method, schemes in (("split", SPLIT_SCHEMES), ("topcode", TOPCODE_SCHEMES)):
        for s in schemes:
            out[f"{method} {s.name}"] = _row(res, 2, "payann", method, s.name, rho)["are_median"]
    return out


def render_utility(res: UtilityResult, rho_main: Fraction = Fraction(1)) -> str:
    rhos = sorted({k[4] for k in res.are})
    head = utility_headline(res, rho_main)
    best_split = min((v, k) for k, v in head.items() if k.startswith("split"))
    best_top = min((v, k) for k, v in head.items() if k.startswith("topcode"))
    text = [
        f"* data: the demo `establishments` table, {res.rows:,} rows (seed of the noise: {res.seed}); groups with "
        f"≥ {MIN_GROUP} establishments: " + ", ".join(f"{res.groups[k]:,} at NAICS-{k}" for k in LEVELS),
        (f"* budget: ρ is the budget of one NAICS level's workload, split equally over its {QUERIES_PER_LEVEL} queries "
        f"(ρ/{QUERIES_PER_LEVEL} each); the three levels together cost 3ρ"),
        f"* **headline** (SUM(payann), county × 2-digit NAICS, ρ = {float(rho_main):g}): median ARE "
        + ", ".join(f"{k.replace('split', 'splitting').replace('topcode', 'top-coding')} {are_str(v)}"
                    for k, v in head.items())
        + f" — best splitting scheme {are_str(best_split[0])} vs best top-coding scheme {are_str(best_top[0])}",
        "",
        (f"**Table U1.** Median ARE and the share of queries with ARE under 5% / under 20%, at ρ = {float(rho_main):g} "
        "per level (the last column: the median ARE of the top-coded sum *without* noise, i.e. its bias alone)."),
        "",
    ]
    header = ["query", "method, scheme", "T or C (emp / payann / payqtr1)"]
    for k in LEVELS:
        header += [f"NAICS-{k} median", f"NAICS-{k} <5% / <20%"]
    header.append("NAICS-2 bias only")
    body = []
    schemes = {("split", s.name): s for s in SPLIT_SCHEMES} | {("topcode", s.name): s for s in TOPCODE_SCHEMES}
    for m, method, scheme in _configs():
        s = schemes.get((method, scheme))
        values = "–" if s is None else " / ".join(f"{v:,}" for v in s.values.values())
        row: list[Any] = [QUERY_LABELS[m], _label(method, scheme), values if m != "count" else "Δ = 1"]
        for k in LEVELS:
            r = _row(res, k, m, method, scheme, rho_main)
            row += [are_str(r["are_median"]), f"{pct(r['share_are_below_5pct'], 0)} / {pct(r['share_are_below_20pct'], 0)}"]
        r2 = _row(res, 2, m, method, scheme, rho_main)
        row.append(are_str(r2["bias_are_median"]) if "bias_are_median" in r2 else "0 (unbiased)")
        body.append(row)
    text.append(md_table(header, body, "lll" + "r" * (len(header) - 3)))
    text += ["", "**Table U2.** County × 2-digit NAICS across budgets: median ARE (share under 5%).", ""]
    header = ["query", "method, scheme", *(f"ρ = {float(r):g}" for r in rhos)]
    body = []
    for m, method, scheme in _configs():
        row = [QUERY_LABELS[m], _label(method, scheme)]
        for rho in rhos:
            r = _row(res, 2, m, method, scheme, rho)
            row.append(f"{are_str(r['are_median'])} ({pct(r['share_are_below_5pct'], 0)})")
        body.append(row)
    text.append(md_table(header, body, "ll" + "r" * len(rhos)))
    return "\n".join(text)


def render_policy_loss(res: PolicyLossResult) -> str:
    text = [
        ("> **INTERNAL, DATA-OWNER ONLY.** Every number in this section is a function of the confidential "
        "records (a record's |A(r)|); dpsql never shows it to analysts. What is public is the policy "
        "function P(·) itself."),
        "",
        (f"* workload: one county × NAICS level (Table 6), ρ split equally over its {QUERIES_PER_LEVEL} queries, "
        f"multivariate splitting: P(r) = ρ/4 + (3ρ/4)·|A(r)|², |A(r)| = max(1, ⌈emp/T_emp⌉, ⌈payann/T_payann⌉, "
        "⌈payqtr1/T_payqtr1⌉). P(r) scales with ρ, so the table is in units of ρ; all three levels together: 3× these."),
        ("* firms: a firm's establishments removed together remove Σ|A(r)| split rows and as many counted rows, so "
        "by zCDP's group privacy P(firm) ≤ ρ/4·n² + (3ρ/4)·(Σ|A(r)|)² (an upper bound; n establishments)."),
        f"* data: {res.rows:,} establishments; top-coding (zCDP) gives every record P = ρ.",
        "",
    ]
    header = ["scheme (T: emp / payann / payqtr1)", "split (P > ρ)", *(lab for lab, _ in LOSS_LEVELS),
              "P/ρ p99", "P/ρ p99.9", "P/ρ max", *(f"firms: {lab}" for lab, _ in LOSS_LEVELS)]
    body = []
    for r in res.summary:
        body.append([f"{r['scheme']} ({r['thresholds']})", pct(r["establishments split (P > ρ)"], 2),
                     *(pct(r[f"establishments {lab}"], 2) for lab, _ in LOSS_LEVELS),
                     f"{r['establishments P/ρ p99']:,.4g}", f"{r['establishments P/ρ p99.9']:,.4g}",
                     f"{r['establishments P/ρ max']:,.4g}", *(pct(r[f"firms {lab}"], 2) for lab, _ in LOSS_LEVELS)])
    text.append("**Table P1.** Share of establishments (and firms) whose policy loss is at most x, per splitting scheme.")
    text.append("")
    text.append(md_table(header, body))
    return "\n".join(text)


def render_heavy_tail(res: HeavyTailResult, rho_main: Fraction = Fraction(1)) -> str:
    rhos = sorted({k[3] for k in res.are})
    shares = sorted({k[2] for k in res.are})
    text = [(f"* data: SIM, {res.n:,} records, CatIX uniform on 1..1000, HT1 ~ Pareto(1, 1.2), HT2 ~ Pareto(1, 1.5), "
            f"granularity 0.01 (seed {res.seed}); one query per variable, SUM(HT) GROUP BY CatIX, ρ per query"),
            ("* T: the Pareto quantile with P(HT > T) = target share; \"split\" is the realised share of records with "
            "|A(r)| > 1, i.e. with policy loss > ρ"),
            ""]
    for name, alpha in VARIABLES:
        rows = {(r["target_share_split"], r["rho"]): r for r in res.summary if r["variable"] == name}
        text.append(f"**Table H-{name}.** {name} ~ Pareto(1, {alpha}): median ARE over the 1000 queries, unit splitting "
                    "at T vs top-coding at the same T (zCDP, same noise), and for splitting the share of queries "
                    "under 10% ARE.")
        text.append("")
        header = ["T", "records split", "max P/ρ", *(f"ρ = {float(r):g}: split / top-code (split < 10%)" for r in rhos)]
        body = []
        for s in shares:
            r0 = rows[(s, float(rhos[0]))]
            row = [f"{r0['threshold']:g}", pct(r0["share_split"], 2), f"{r0['max_P_over_rho']:,.0f}"]
            for rho in rhos:
                r = rows[(s, float(rho))]
                row.append(f"{are_str(r['split_are_median'])} / {are_str(r['topcode_are_median'])} "
                           f"({pct(r['split_share_below_10pct'], 0)})")
            body.append(row)
        text.append(md_table(header, body))
        best = ", ".join(f"ρ = {float(rho):g}: {are_str(b['topcode_are_median'])} at T = {b['threshold']:g}"
                         for rho in rhos for b in [best_topcode(res, name, rho)])
        text.append(f"Best top-code over these T (chosen with hindsight): {best}.")
        text.append("")
    return "\n".join(text)
