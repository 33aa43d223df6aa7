"""`lpstudy train`: one run, from a preset, a run file and flags (in that order of precedence)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.common import parse_assignments
from lpstudy.training.costs import presets_help


@app.command()
def train(
    preset: Annotated[Optional[str], typer.Option(help=f"The run file's, else cpu. {presets_help()}.")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="A run file (YAML or JSON), e.g. from `lpstudy export`.")] = None,
    p: Annotated[Optional[str], typer.Option("--p", help="Norm exponent, a number ≥ 1 or 'inf'.")] = None,
    lr: Annotated[Optional[float], typer.Option(help="Peak learning rate.")] = None,
    gain_init: Annotated[Optional[str], typer.Option(help="Initial attention gain: a number, or 'matched' (the spread of p = 2's logits; default log₂(L²−L)).")] = None,
    fold: Annotated[Optional[int], typer.Option(help="Validation fold, 0-based.")] = None,
    folds: Annotated[Optional[int], typer.Option(help="Number of folds K.")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Random seed.")] = None,
    steps: Annotated[Optional[int], typer.Option(help="Optimisation steps (max_steps).")] = None,
    attention: Annotated[Optional[str], typer.Option(help="lp or baseline.")] = None,
    device: Annotated[Optional[str], typer.Option(help="auto, cpu, cuda or cuda:N.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Any field: --set n_layer=6 (repeatable).")] = None,
    data: Annotated[Optional[str], typer.Option(help="Text file to train on (else $LPSTUDY_DATA, the cache, or a download).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Directory for the checkpoint, resolved config and metrics history.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the final metrics as one JSON object on stdout.")] = False,
) -> None:
    """Train one model and report its validation loss."""
    from lpstudy.training.artifacts import json_safe, save_run
    from lpstudy.training.config import load_run_file, resolve_config, with_cpu_threads
    from lpstudy.training.data import load_corpus
    from lpstudy.training.fits import check_fits
    from lpstudy.training.progress import TrainingProgress, stderr_console
    from lpstudy.training.trainer import pick_device
    from lpstudy.training.trainer import train as run_training

    from lpstudy.paths import check_input_file, check_output_dir

    if out is not None:
        check_output_dir(out, "--out")  # before training: a run that cannot be kept is not started
    if data is not None:
        check_input_file(data, "data file")
    overrides: dict = {}
    file_preset = None
    if config is not None:
        file_preset, overrides, _ = load_run_file(config)
    flags = {"p": p, "lr": lr, "gain_init": gain_init, "fold": fold, "folds": folds, "seed": seed,
             "max_steps": steps, "attention": attention, "device": device}
    overrides.update(parse_assignments(set_))
    overrides.update({k: v for k, v in flags.items() if v is not None})
    preset_name = preset or file_preset or "cpu"
    cfg = resolve_config(preset_name, overrides)
    cfg = with_cpu_threads(cfg, pick_device(cfg.device).type)
    cfg = dataclasses.replace(cfg, gain_init=cfg.resolved_gain_init)  # 'matched' as the number it is
    corpus = load_corpus(data)
    check_fits(cfg, pick_device(cfg.device), corpus.vocab_size)  # before the banner: one line if not

    stderr_console.print(
        f"[bold]lpstudy train[/] preset={preset_name} attention={cfg.attention} p={cfg.p:g} lr={cfg.lr:g} "
        f"gain_init={cfg.resolved_gain_init:.3g} fold={cfg.fold}/{cfg.folds} seed={cfg.seed} "
        + (f"threads={cfg.threads} " if cfg.threads else "") +
        f"corpus={Path(corpus.source).name} ({len(corpus):,} chars, {corpus.vocab_size} symbols)", soft_wrap=True)
    with TrainingProgress(cfg.max_steps) as bar:
        def on_eval(record):
            bar.on_eval(record)
        run = run_training(cfg, corpus, on_eval=on_eval, on_step=bar.on_step)
    s = run.summary
    if out is not None:
        save_run(out, run, preset_name, corpus)
    if s.diverged:
        stderr_console.print(f"[bold red]diverged[/] at step {s.diverged_step}: the loss became "
                             "non-finite or far above its start; try a smaller --lr or --gain-init")
    stderr_console.print(
        f"final val loss {s.final_val_loss:.4f} · best {s.best_val_loss:.4f} at step {s.best_step} · "
        f"{s.steps} steps in {s.wall_time_s:.1f}s · {s.tokens_per_s:,.0f} tok/s on {s.device}"
        + (f" · saved to {out}" if out else ""), soft_wrap=True)  # one line, even piped (80 columns)
    if as_json:
        result = {"preset": preset_name, "config": cfg.to_dict(), **s.to_dict()}
        sys.stdout.write(json.dumps(json_safe(result)) + "\n")
