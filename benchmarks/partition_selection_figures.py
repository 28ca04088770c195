"""Paper 002 Figures 1-4 from dpsql.privacy.selection_analysis: optimal vs Laplace selection.

Run:  cd /work/main && PYTHONPATH=. python benchmarks/partition_selection_figures.py
          [--png docs/partition_selection.png] [--kappa-png docs/partition_selection_kappa.png]
          [--no-plot]

Prints Markdown tables of the mid-point (the smallest n released with probability >= 0.5; the
5% and 95% points too) for:

* Figure 2: epsilon from 0.01 to 1, delta = 1e-5 (the paper's figure) and 1e-10;
* Figure 3: delta from 1e-12 to 1e-4, epsilon = 0.1 and 1;
* Figure 4: a unit in kappa partitions: pi_opt and Laplace with the budget split kappa ways,
  Gaussian thresholding with sensitivity sqrt(kappa) and the delta split that minimises its
  threshold (dpsql.privacy.selection_kappa), and which one the paper's rule picks;

and, when matplotlib is installed (``pip install dpsql[plots]``), draws Figures 1-3 into one PNG
and Figure 4 into another (``--kappa-png``, default docs/partition_selection_kappa.png).
All numbers are computed, none sampled; they do not depend on the machine.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpsql.privacy.pi_opt import release_probability
from dpsql.privacy.selection_analysis import laplace_threshold, laplace_threshold_probability, midpoint
from dpsql.privacy.selection_kappa import choose, kappa_midpoints

HERE = Path(__file__).resolve().parent
DEFAULT_PNG = HERE.parent / "docs" / "partition_selection.png"
DEFAULT_KAPPA_PNG = HERE.parent / "docs" / "partition_selection_kappa.png"

FIG2_EPSILONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
FIG2_DELTAS = [1e-5, 1e-10]
FIG3_DELTAS = [1e-12, 1e-10, 1e-8, 1e-6, 1e-4]
FIG3_EPSILONS = [0.1, 1.0]
KAPPAS = [1, 2, 3, 4, 5, 6, 7]


def points(eps: float, delta: float, method: str) -> tuple[int, int, int]:
    """The 5%, 50% and 95% points (smallest n with release probability >= the level)."""
    lo, mid, hi = (midpoint(eps, delta, method, level=x) for x in (0.05, 0.5, 0.95))
    return lo, mid, hi


def row(eps: float, delta: float) -> list[str]:
    o5, o50, o95 = points(eps, delta, "optimal")
    l5, l50, l95 = points(eps, delta, "laplace")
    tau = laplace_threshold(eps, delta)
    return [f"{eps:g}", f"{delta:g}", f"{o50}", f"{l50}", f"{tau:.1f}", f"{l50 - o50}",
            f"{o50 / l50:.2f}", f"{o5}–{o95}", f"{l5}–{l95}"]


HEADER = ["ε", "δ", "mid opt", "mid Laplace", "τ (Def. 9)", "Laplace − opt", "opt / Laplace",
          "opt 5%–95%", "Laplace 5%–95%"]


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


FIG4_PARAMS = [(1, Fraction(1, 10**5)), (Fraction(1, 2), Fraction(1, 10**8)),
               (Fraction(1, 10), Fraction(1, 10**5))]
KAPPA_HEADER = ["κ", "mid opt (ε/κ, δ/κ)", "mid Laplace (ε/κ, δ/κ)", "mid Gauss", "Gauss τ",
                "Gauss σ", "noise δ share", "rule picks"]


def kappa_row(eps: Fraction | int, delta: Fraction, kappa: int) -> list[str]:
    m = kappa_midpoints(eps, delta, kappa)
    c = choose(eps, delta, kappa)
    g = c.gaussian
    return [str(kappa), str(m["optimal"]), str(m["laplace"]), str(m["gaussian"]),
            f"{g.threshold:.2f}", f"{g.sigma:.2f}", f"{g.noise_delta / g.delta:.2f}", c.method]


def plot_kappa(png: Path) -> None:
    """Figure 4: mid-points against κ; left the paper's ε = 1, δ = 1e-5, right ε = 0.1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ks = list(KAPPAS)
    for ax, (eps, delta) in zip(axes, [FIG4_PARAMS[0], FIG4_PARAMS[2]]):
        rows = [kappa_midpoints(eps, delta, k) for k in ks]
        ax.plot(ks, [r["optimal"] for r in rows], "o-", color="tab:blue", label="π_opt (ε/κ, δ/κ)")
        ax.plot(ks, [r["laplace"] for r in rows], "s-", color="tab:red", label="π_Lap (ε/κ, δ/κ)")
        ax.plot(ks, [r["gaussian"] for r in rows], "^-", color="tab:green",
                label="π_Gauss (√κ sensitivity, δ split)")
        ax.plot(ks, [r["gaussian_threshold"] for r in rows], ":", color="tab:green", linewidth=0.8)
        ax.set(title=f"Fig. 4: ε = {float(eps):g}, δ = {float(delta):g}", xlabel="κ",
               ylabel="n with P[keep] ≥ 1/2")
        ax.legend()
    fig.suptitle("Partition selection with a unit in ≤ κ partitions (paper 002 §5), from "
                 "dpsql.privacy.selection_kappa")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(png, dpi=90)
    print(f"wrote {png}")


def tables() -> str:
    out = []
    for delta in FIG2_DELTAS:
        out.append(f"Figure 2, δ = {delta:g}:\n")
        out.append(markdown(HEADER, [row(e, delta) for e in FIG2_EPSILONS]) + "\n")
    for eps in FIG3_EPSILONS:
        out.append(f"Figure 3, ε = {eps:g}:\n")
        out.append(markdown(HEADER, [row(eps, d) for d in FIG3_DELTAS]) + "\n")
    for eps, delta in FIG4_PARAMS:
        out.append(f"Figure 4, ε = {eps}, δ = {float(delta):g} (a unit in ≤ κ partitions):\n")
        out.append(markdown(KAPPA_HEADER, [kappa_row(eps, delta, k) for k in KAPPAS]) + "\n")
    return "\n".join(out)


def plot(png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 2, figsize=(11, 16))
    colours = {"optimal": "tab:blue", "laplace": "tab:red"}
    labels = {"optimal": "π_opt (Thm 1)", "laplace": "π_Lap (Def 9)"}

    # Figure 1: release probability against n
    for ax, (eps, delta, lo, hi) in zip(axes[0], [(1.0, 1e-5, 6, 20), (0.1, 1e-10, 160, 300)]):
        n = np.arange(lo, hi + 1)
        ax.step(n, release_probability(n, eps, delta), where="post", color=colours["optimal"],
                label=labels["optimal"])
        ax.step(n, laplace_threshold_probability(n, eps, delta), where="post",
                color=colours["laplace"], label=labels["laplace"])
        ax.set(title=f"Fig. 1: ε = {eps:g}, δ = {delta:g}", xlabel="n (units in the partition)",
               ylabel="P[keep]")
        ax.legend()

    def percentile_lines(ax, xs, params) -> None:
        for method in ("optimal", "laplace"):
            pts = np.array([points(e, d, method) for e, d in params])
            ax.plot(xs, pts[:, 1], color=colours[method], label=labels[method])
            ax.plot(xs, pts[:, 0], "--", color=colours[method], linewidth=0.8)
            ax.plot(xs, pts[:, 2], "--", color=colours[method], linewidth=0.8)
        ax.set_xscale("log")
        ax.set_ylabel("n with P[keep] = 5%, 50%, 95%")
        ax.legend()

    # Figure 2 (delta = 1e-5, the paper's) and the same at delta = 1e-10
    for r, delta in ((1, 1e-5), (2, 1e-10)):
        for ax, (e_lo, e_hi) in zip(axes[r], [(0.01, 0.1), (0.1, 1.0)]):
            eps_grid = np.geomspace(e_lo, e_hi, 25)
            percentile_lines(ax, eps_grid, [(e, delta) for e in eps_grid])
            ax.set(title=f"Fig. 2: δ = {delta:g}", xlabel="ε")
    # Figure 3
    for ax, eps3 in zip(axes[3], FIG3_EPSILONS):
        deltas = np.geomspace(1e-12, 1e-4, 25)
        percentile_lines(ax, deltas, [(eps3, d) for d in deltas])
        ax.set(title=f"Fig. 3: ε = {eps3:g}", xlabel="δ")
    fig.suptitle("Partition selection, paper 002 figures from dpsql.privacy.selection "
                 "(solid: mid-point, dashed: 5% and 95%)")
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(png, dpi=90)
    print(f"wrote {png}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", type=Path, default=DEFAULT_PNG)
    ap.add_argument("--kappa-png", type=Path, default=DEFAULT_KAPPA_PNG)
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    print(tables())
    if args.no_plot:
        return
    try:
        plot(args.png)
        plot_kappa(args.kappa_png)
    except ImportError:
        print("matplotlib is not installed (pip install 'dpsql[plots]'): tables only, no PNG")


if __name__ == "__main__":
    main()
