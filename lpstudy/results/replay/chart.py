"""The replay benchmark's chart: median normalised regret against the fraction of the grid's
compute spent, one panel per pruner, one line per sampler (random search without pruning in grey
in every panel, for reference), ε as a dashed line. A PNG via Matplotlib's Agg backend (no
display, no browser), so `lpstudy replay --chart FILE` can write it anywhere."""

from __future__ import annotations

from pathlib import Path

from lpstudy.errors import UserError
from lpstudy.results.replay.traces import RANDOM
from lpstudy.results.replay.scores import ReplayResult
from lpstudy.results.replay.methods import FOLD_PRUNER, SAMPLER_NAMES, default_method
from lpstudy.design.options import PRUNERS

# Random search, the reference, in grey; every other sampler of the catalogue a colour of its own.
PALETTE = ("#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
COLOURS = {RANDOM.sampler: "#7f7f7f",
           **dict(zip((s for s in SAMPLER_NAMES if s != RANDOM.sampler), PALETTE))}


def write_chart(result: ReplayResult, path: str | Path) -> Path:
    try:
        import matplotlib
    except ImportError:
        raise UserError("--chart needs Matplotlib: pip install 'lpstudy[replay]' (or matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lpstudy.files import atomic_write

    pruners = [p for p in (*PRUNERS, FOLD_PRUNER) if any(s.method.pruner == p for s in result.scores)]
    panels = [p for p in pruners if p != FOLD_PRUNER] or pruners
    cols = min(2, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.2 * rows), squeeze=False, sharey=True)
    span = result.worst_loss - result.best_loss or 1.0
    eps = result.epsilon / span
    x = result.fractions
    default = default_method()
    reference = result.score(RANDOM)
    for ax, pruner in zip(axes.flat, panels):
        shown = [s for s in result.scores if s.method.pruner == pruner
                 or (pruner == "none" and s.method.pruner == FOLD_PRUNER)]
        if reference is not None and reference.method not in [s.method for s in shown]:
            ax.plot(x, reference.curve["median"], color="#bbbbbb", lw=1.5, label="random+none")
        for s in shown:
            style = ":" if s.method.pruner == FOLD_PRUNER else "-"
            width = 2.8 if s.method == default else 1.6
            label = s.method.name + (" (default)" if s.method == default else "")
            ax.plot(x, s.curve["median"], style, color=COLOURS.get(s.method.sampler, "black"), lw=width, label=label)
        ax.axhline(eps, color="black", ls="--", lw=1, label="ε")
        ax.set_yscale("symlog", linthresh=max(eps / 4, 1e-4))
        ax.set_ylim(0, 1.05)
        ax.set_xlim(0, result.budget)
        ax.set_title(f"pruner: {pruner}")
        ax.set_xlabel("compute spent, as a fraction of running the whole grid (training steps)")
        ax.set_ylabel("median normalised regret")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    shape = result.table.shape()
    fig.suptitle(f"Replay of a {shape.configs} configurations × {shape.folds} folds grid, "
                 f"{len(result.seeds)} seeds (regret: (L − L*) / (L_worst − L*), L = mean over folds)\n"
                 "A search earns its keep on the left, far below the grid's cost; towards 1.0 any method, random "
                 "search too, has paid about what the grid costs, and the grid itself finds L* there", fontsize=10)
    fig.tight_layout()
    try:
        return atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=110))
    finally:
        plt.close(fig)
