"""The trainer on the real corpus at the smoke preset."""

import math

import pytest

from lpstudy.training.config import resolve_config
from lpstudy.training.metrics import METRIC_FIELDS
from lpstudy.training.trainer import lr_at, train


def test_smoke_preset_learns(corpus):
    run = train(resolve_config("smoke", {"p": 3.5}), corpus)
    s = run.summary
    start = s.history[0]
    assert start.step == 0 and start.val_loss == pytest.approx(math.log(65), abs=0.3)
    assert s.final_val_loss < 0.75 * start.val_loss  # ≈ 4.2 → below 3.1
    assert not s.diverged and not s.stopped and s.steps == run.config.max_steps
    assert [r.step for r in s.history] == list(range(0, run.config.max_steps + 1, run.config.eval_interval))
    last = s.history[-1]
    for name in METRIC_FIELDS:
        assert math.isfinite(getattr(last, name)), name
    assert last.gain_min <= last.gain_mean <= last.gain_max
    assert 0 < last.attn_entropy < math.log(run.config.block_size)
    assert s.best_val_loss == min(r.val_loss for r in s.history)


def test_learning_rate_of_one_without_clipping_is_detected_as_divergence(corpus):
    # lr ≤ 1 is the bound of a real run (training/bounds.py); unclipped, at a high gain, it diverges
    run = train(resolve_config("smoke", {"lr": 1.0, "grad_clip": 0.0, "warmup_steps": 0, "gain_init": 64.0,
                                         "max_steps": 400}), corpus)
    s = run.summary
    assert s.diverged
    assert 0 < s.diverged_step < 400
    assert s.steps == s.diverged_step  # it stopped there


def test_seeded_runs_are_identical_to_the_last_digit(corpus):
    cfg = resolve_config("smoke", {"max_steps": 40, "eval_interval": 20, "p": 2.5, "seed": 7})
    a, b = train(cfg, corpus).summary, train(cfg, corpus).summary
    assert [r.val_loss for r in a.history] == [r.val_loss for r in b.history]
    assert [r.train_loss for r in a.history] == [r.train_loss for r in b.history]
    c = train(resolve_config("smoke", {"max_steps": 40, "eval_interval": 20, "p": 2.5, "seed": 8}), corpus).summary
    assert c.final_val_loss != a.final_val_loss


def test_evaluation_callback_can_stop_the_run(corpus):
    seen = []

    def stop_after_first_real_eval(record):
        seen.append(record.step)
        return record.step >= 25

    s = train(resolve_config("smoke"), corpus, on_eval=stop_after_first_real_eval).summary
    assert seen == [0, 25] and s.stopped and s.steps == 25 and not s.diverged


def test_should_stop_is_polled_every_step(corpus):
    steps = []
    s = train(resolve_config("smoke"), corpus, on_step=lambda step, loss: steps.append(step),
              should_stop=lambda: len(steps) >= 7).summary
    assert s.stopped and s.steps == 7


@pytest.mark.slow
def test_threshold_records_the_first_step_below_it(corpus):
    s = train(resolve_config("smoke"), corpus, loss_threshold=3.3).summary
    first = next(r.step for r in s.history if r.val_loss <= 3.3)
    assert s.steps_to_threshold == first


def test_warmup_then_cosine_to_a_tenth():
    cfg = resolve_config("cpu")
    assert lr_at(0, cfg) < lr_at(50, cfg) < lr_at(99, cfg) <= cfg.lr
    assert lr_at(cfg.warmup_steps, cfg) == pytest.approx(cfg.lr)
    assert lr_at(cfg.max_steps, cfg) == pytest.approx(cfg.lr / 10)
    mid = (cfg.warmup_steps + cfg.max_steps) // 2
    assert lr_at(mid, cfg) == pytest.approx((cfg.lr + cfg.lr / 10) / 2, rel=1e-2)


def test_a_run_resumed_from_a_checkpoint_records_what_the_uninterrupted_run_recorded(corpus, monkeypatch):
    """Every metric after the checkpoint, the loss-spike count included (a counter that flags every
    loss after its first 10 steps, so that a count restarted at the resume would show), equals the
    uninterrupted run's; only the clock readings differ."""
    import functools

    from lpstudy.training import trainer
    from lpstudy.training.spikes import LossSpikes

    monkeypatch.setattr(trainer, "LossSpikes", functools.partial(LossSpikes, ratio=-1.0))
    cfg = resolve_config("smoke", {"device": "cpu", "max_steps": 100, "eval_interval": 20, "threads": 1})
    saved = []
    whole = train(cfg, corpus, on_checkpoint=saved.append, checkpoint_every=2).summary
    (checkpoint, *_) = saved
    assert checkpoint.step == 40
    resumed = train(cfg, corpus, resume=checkpoint).summary
    clock = {"tokens_per_s", "elapsed_s"}
    assert [{k: v for k, v in r.to_dict().items() if k not in clock} for r in resumed.history] == \
           [{k: v for k, v in r.to_dict().items() if k not in clock} for r in whole.history]
    assert resumed.history[-1].loss_spikes == 100 - 10
