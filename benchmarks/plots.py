"""The figures (matplotlib, the optional ``plots`` extra: ``pip install -e ".[plots]"``).

Box plots: the box is the interquartile range with the median, whiskers reach the 5th and 95th
percentiles, outliers are not drawn (there are tens of thousands of queries).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from .cbp import LEVELS, QUERIES_PER_LEVEL, PolicyLossResult, UtilityResult
from .dpmath import (
    SPLIT_SCHEMES,
    TOPCODE_SCHEMES,
    ecdf_from_counts,
    group_policy_loss,
    workload_policy_loss,
)
from .heavy_tail import VARIABLES, HeavyTailResult

INTERNAL = "INTERNAL — DATA OWNER ONLY: computed from the confidential records, never released"
WHIS = (5, 95)
ARE_FLOOR = 1e-5
SIMULATED = "simulated data; on real data these losses would be internal to the data owner"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _rho_label(rho: Fraction) -> str:
    return f"ρ={float(rho):g}"


def _colors(n: int) -> list:
    plt = _plt()
    cmap = plt.get_cmap("viridis")
    return [cmap(0.15 + 0.7 * i / max(1, n - 1)) for i in range(n)]


def _boxes(ax, data: list[np.ndarray], positions: list[float], color, width: float) -> None:
    # On a log axis an ARE of exactly 0 (a count whose noise drew 0) is drawn at ARE_FLOOR.
    clean = [np.maximum(d[~np.isnan(d)], ARE_FLOOR) if d.size else np.array([np.nan]) for d in data]
    bp = ax.boxplot(clean, positions=positions, widths=width, whis=WHIS, showfliers=False, patch_artist=True,
                    medianprops={"color": "black", "linewidth": 1})
    for b in bp["boxes"]:
        b.set_facecolor(color)
        b.set_alpha(0.85)


def utility_boxplots(res: UtilityResult, path: Path) -> Path:
    """Paper 000 Figure 3: ARE per query, top-coding + zCDP (left) vs unit splitting (right),
    NAICS levels in rows, schemes in columns, the level's rho in colours."""
    plt = _plt()
    rhos = sorted({k[4] for k in res.are})
    measures = ["count", "employees", "payann", "payqtr1"]
    schemes = [("topcode", s.name) for s in TOPCODE_SCHEMES] + [("split", s.name) for s in SPLIT_SCHEMES]
    fig, axes = plt.subplots(len(LEVELS), len(schemes), figsize=(3.1 * len(schemes), 3.0 * len(LEVELS)),
                             sharey=True, squeeze=False)
    colors = _colors(len(rhos))
    width = 0.8 / len(rhos)
    for i, level in enumerate(LEVELS):
        for j, (method, name) in enumerate(schemes):
            ax = axes[i][j]
            for ri, rho in enumerate(rhos):
                data = [res.are[(level, "both", "-", m, rho)] if m == "count" else res.are[(level, method, name, m, rho)]
                        for m in measures]
                pos = [k + (ri - (len(rhos) - 1) / 2) * width for k in range(len(measures))]
                _boxes(ax, data, pos, colors[ri], width * 0.9)
            ax.set_yscale("log")
            ax.axhline(0.05, color="green", linestyle="--", linewidth=1)
            ax.axhline(0.20, color="red", linestyle="--", linewidth=1)
            ax.set_xticks(range(len(measures)))
            ax.set_xticklabels(["COUNT", "EMP", "PAYANN", "PAYQTR1"], fontsize=8)
            if i == 0:
                kind = "top-coding, zCDP" if method == "topcode" else "unit splitting, PRzCDP"
                ax.set_title(f"{kind}\n{name}", fontsize=9)
            if j == 0:
                ax.set_ylabel(f"NAICS {level}-digit\nARE", fontsize=9)
            ax.grid(axis="y", which="major", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors]
    fig.legend(handles, [f"{_rho_label(r)} per level ({_rho_label(r / QUERIES_PER_LEVEL)} per query)" for r in rhos],
               loc="lower center", ncol=len(rhos), fontsize=9)
    fig.suptitle(f"County x NAICS workload on the synthetic CBP-like data ({res.rows:,} establishments; groups with "
                 "≥ 100 establishments). Dashed: 5% (green) and 20% (red) ARE; ARE = 0 drawn at 1e-5", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def policy_loss_cdf(res: PolicyLossResult, path: Path, rhos: tuple[Fraction, ...]) -> Path:
    """Paper 000 Figure 5 (and Figure 2 right): the share of establishments / firms with policy
    loss at most x, per splitting scheme, one column per level budget rho. INTERNAL."""
    plt = _plt()
    fig, axes = plt.subplots(2, len(rhos), figsize=(4.2 * len(rhos), 6.4), sharey=True, squeeze=False)
    colors = _colors(len(SPLIT_SCHEMES))
    for j, rho in enumerate(rhos):
        rho_c = rho / QUERIES_PER_LEVEL
        rho_s = rho - rho_c
        for i, unit in enumerate(("establishment", "firm")):
            ax = axes[i][j]
            for c, s in zip(colors, SPLIT_SCHEMES):
                if unit == "establishment":
                    a, n = res.establishments[s.name]
                    v, y = ecdf_from_counts(workload_policy_loss(a, rho_c, rho_s), n)
                else:
                    k, tot, f = res.firms[s.name]
                    v, y = ecdf_from_counts(group_policy_loss(k, tot, rho_c, rho_s), f)
                ax.step(np.r_[v[0] / 2, v], np.r_[0, y], where="post", color=c, label=f"split: {s.name}")
            ax.axvline(float(rho), color="grey", linestyle=":", linewidth=1,
                       label="top-coding, zCDP: P = ρ for all" if unit == "establishment" else None)
            ax.set_xscale("log")
            ax.set_ylim(0, 1.02)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(f"{_rho_label(rho)} per NAICS level", fontsize=9)
            ax.set_xlabel(f"policy loss P of an {unit}" if unit == "establishment" else "policy loss P of a firm (group bound)",
                          fontsize=8)
            if j == 0:
                ax.set_ylabel(f"share of {unit}s with loss ≤ P", fontsize=8)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Policy-loss CDFs of one county x NAICS level's workload\n" + INTERNAL, fontsize=10, color="darkred")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def heavy_tail_are(res: HeavyTailResult, path: Path) -> Path:
    """Paper 000 Figure 2 (left): ARE over the 1000 CatIX queries against the share of records
    split (= with policy loss > rho), splitting vs top-coding at the same threshold."""
    plt = _plt()
    rhos = sorted({k[3] for k in res.are})
    shares = sorted({k[2] for k in res.are})
    fig, axes = plt.subplots(len(VARIABLES), len(rhos), figsize=(4.6 * len(rhos), 3.4 * len(VARIABLES)),
                             sharey=True, squeeze=False)
    for i, (name, alpha) in enumerate(VARIABLES):
        for j, rho in enumerate(rhos):
            ax = axes[i][j]
            x = np.arange(len(shares))
            _boxes(ax, [res.are[(name, "split", s, rho)] for s in shares], list(x - 0.2), "tab:blue", 0.35)
            _boxes(ax, [res.are[(name, "topcode", s, rho)] for s in shares], list(x + 0.2), "tab:grey", 0.35)
            ax.set_yscale("log")
            ax.axhline(0.10, color="green", linestyle="--", linewidth=1)
            ax.axhline(1.0, color="red", linestyle="--", linewidth=1)
            ax.set_xticks(x)
            ax.set_xticklabels([f"{100 * res.shares[(name, s)]:.2g}%" for s in shares], fontsize=7, rotation=45)
            ax.grid(axis="y", alpha=0.3)
            if i == 0:
                ax.set_title(f"{_rho_label(rho)} (minimum policy loss)", fontsize=9)
            if i == len(VARIABLES) - 1:
                ax.set_xlabel("share of records split (policy loss > ρ)", fontsize=8)
            if j == 0:
                ax.set_ylabel(f"{name}: Pareto(1, {alpha})\nARE", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ("tab:blue", "tab:grey")]
    fig.legend(handles, ["unit splitting at T (PRzCDP)", "top-coding at the same T (zCDP)"], loc="lower center", ncol=2,
               fontsize=9)
    fig.suptitle(f"SIM (paper 000 Table 4): SUM(HT) GROUP BY CatIX, {res.n:,} records, 1000 categories. "
                 "Dashed: 10% (green), 100% (red) ARE", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def heavy_tail_policy_loss(res: HeavyTailResult, path: Path, rhos: tuple[Fraction, ...]) -> Path:
    """Paper 000 Figure 2 (right): the share of SIM records with policy loss at most x, per
    splitting threshold, one column per rho. Internal to the data owner, like Figure 5."""
    plt = _plt()
    shares = sorted({k[1] for k in res.ecdf})
    fig, axes = plt.subplots(len(VARIABLES), len(rhos), figsize=(4.2 * len(rhos), 3.2 * len(VARIABLES)),
                             sharey=True, squeeze=False)
    colors = _colors(len(shares))
    for i, (name, alpha) in enumerate(VARIABLES):
        for j, rho in enumerate(rhos):
            ax = axes[i][j]
            for c, s in zip(colors, shares):
                v, y = res.ecdf[(name, s)]
                v = v * float(rho)
                ax.step(np.r_[v[0] / 2, v], np.r_[0, y], where="post", color=c,
                        label=f"T={_threshold_label(name, s)} ({100 * res.shares[(name, s)]:.2g}% split)")
            ax.set_xscale("log")
            ax.set_ylim(0, 1.02)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(_rho_label(rho), fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{name}\nshare of records with loss ≤ P", fontsize=8)
            ax.set_xlabel("policy loss P", fontsize=8)
        axes[i][-1].legend(fontsize=6, loc="lower right")
    fig.suptitle(f"SIM policy-loss CDFs, P(r) = ρ·ceil(HT/T)² ({SIMULATED})", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _threshold_label(name: str, share: float) -> str:
    from .heavy_tail import threshold

    alpha = dict(VARIABLES)[name]
    return f"{threshold(alpha, share) / 100:g}"
