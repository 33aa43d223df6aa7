"""A run's checkpoint: everything train() needs to carry on from a step as if never stopped.

model and optimiser state, the training batch sampler's generator (its position in the data), the
step, the first loss (the divergence test's reference), torch's RNG state (dropout) and the run's
summary so far (its evaluations, best and threshold step). On CPU with the same thread count a run
resumed from a checkpoint ends with exactly the loss of a run that was never stopped: the
evaluations reset their own samplers, so they do not depend on where the run was resumed.
Serialised with torch.save to bytes (a file or an artifact store holds them).
"""

from __future__ import annotations

import copy
import io
from dataclasses import dataclass
from typing import Any

import torch

FORMAT = 1


@dataclass
class Checkpoint:
    step: int
    model: dict[str, Any]
    optimizer: dict[str, Any]
    sampler: torch.Tensor  # the training BatchSampler's generator state
    rng: torch.Tensor  # torch's CPU RNG state
    first_loss: float | None
    summary: Any  # lpstudy.training.metrics.RunSummary, a copy
    evals: int = 0  # evaluations so far, step 0 included
    spikes: Any = None  # lpstudy.training.spikes.LossSpikes: the running window and the count so far

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        torch.save({"format": FORMAT, **self.__dict__}, buffer)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Checkpoint":
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
        if state.pop("format", None) != FORMAT:
            raise ValueError("not an lpstudy checkpoint of this version")
        return cls(**state)


def capture(step: int, model, optimizer, sampler, first_loss, summary, evals: int, spikes=None) -> Checkpoint:
    def cpu(tree):
        return {k: (v.detach().cpu().clone() if torch.is_tensor(v) else copy.deepcopy(v)) for k, v in tree.items()}

    return Checkpoint(step=step, model=cpu(model.state_dict()), optimizer=copy.deepcopy(optimizer.state_dict()),
                      sampler=sampler.generator.get_state(), rng=torch.get_rng_state(), first_loss=first_loss,
                      summary=copy.deepcopy(summary), evals=evals, spikes=copy.deepcopy(spikes))
