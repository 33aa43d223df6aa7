"""What `lpstudy train --out DIR` leaves: the checkpoint, the resolved config and the metrics history.

Every file is written to a temporary name and renamed into place, so a crash leaves either the
old file or the new one, never half of one."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from lpstudy.files import atomic_write
from lpstudy.training.config import write_run_file
from lpstudy.training.data import Corpus
from lpstudy.training.trainer import TrainedRun
from lpstudy.values import json_safe


def save_run(out_dir: str | Path, run: TrainedRun, preset: str, corpus: Corpus) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_run_file(out / "config.yaml", preset, run.config,
                   source={"final_val_loss": run.summary.final_val_loss})
    history = "".join(json.dumps(json_safe(r.to_dict())) + "\n" for r in run.summary.history)
    atomic_write(out / "metrics.jsonl", lambda fh: fh.write(history.encode()))
    atomic_write(out / "summary.json",
                  lambda fh: fh.write(json.dumps(json_safe(run.summary.to_dict()), indent=2).encode()))
    checkpoint = {"model": run.model.state_dict(), "config": run.config.to_dict(), "preset": preset,
                  "chars": corpus.chars}
    atomic_write(out / "checkpoint.pt", lambda fh: torch.save(checkpoint, fh))
    return out
