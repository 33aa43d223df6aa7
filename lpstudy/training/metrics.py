"""The metrics schema, declared once: what the trainer emits at each evaluation, what the metrics
table stores (storage.py builds its columns from METRIC_FIELDS), and what a run's summary holds
(a trial's user attributes, the export's `source`, `lpstudy train --json`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields


@dataclass(frozen=True)
class MetricRecord:
    """One evaluation of a run."""

    step: int  # optimisation steps done
    train_loss: float  # mean cross-entropy (nats) over eval_iters training batches
    val_loss: float  # the same over the held-out fold (the same batches at every evaluation)
    lr: float  # learning rate of the last step
    grad_norm: float  # gradient norm of the last step, before clipping
    grad_norm_max: float  # largest gradient norm, before clipping, since the previous evaluation
    gain_mean: float  # attention gains (NaN for the baseline attention)
    gain_min: float
    gain_max: float
    attn_entropy: float  # mean entropy (nats) of the attention rows on one validation batch
    tokens_per_s: float  # training throughput since the previous evaluation
    elapsed_s: float  # wall time since the start of training
    # The stability lens (default NaN: older writers, the baseline attention where a field has no sense)
    max_logit: float = math.nan  # largest attention logit g·q̂·k̂ (unmasked) over layers, heads, rows
    min_head_entropy: float = math.nan  # smallest mean row entropy (nats) of one head (Zhai et al. 2023)
    logit_bound: float = math.nan  # largest possible logit, g·d^max(0, 1 − 2/p), over layers
    loss_spikes: float = math.nan  # training losses so far far above their running median, counted

    def to_dict(self) -> dict:
        return asdict(self)


METRIC_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(MetricRecord))


@dataclass
class RunSummary:
    """What a run ended with. Stored as a trial's user attributes under these names."""

    final_val_loss: float = math.nan
    best_val_loss: float = math.nan
    best_step: int = 0
    steps: int = 0  # steps done
    diverged: bool = False
    diverged_step: int | None = None
    stopped: bool = False  # stopped early by the evaluation callback (pruning, a signal)
    steps_to_threshold: int | None = None  # first evaluated step with val_loss ≤ loss_threshold
    loss_threshold: float | None = None
    tokens_per_s: float = math.nan
    wall_time_s: float = 0.0
    device: str = ""
    n_params: int = 0
    history: list[MetricRecord] = field(default_factory=list, repr=False)

    def to_dict(self, with_history: bool = False) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "history"}
        if with_history:
            out["history"] = [r.to_dict() for r in self.history]
        return out


SUMMARY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RunSummary) if f.name != "history")


def uniform_guess_loss(vocab_size: int) -> float:
    """ln(V): the cross-entropy of guessing uniformly, the score a diverged run is given."""
    return math.log(vocab_size)
