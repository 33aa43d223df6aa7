"""The stability lens recorded at each evaluation: the largest attention logit, the smallest head
entropy, the logit bound g·d^max(0, 1 − 2/p) and the count of loss spikes; and a metrics table made
by an older lpstudy (without those columns) still reads, and gains them when a worker opens it."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
import torch

from lpstudy.db.kinds import storage_at
from lpstudy.db.metrics_table import METRICS_TABLE, ensure_metrics_table, read_metrics, write_metrics
from lpstudy.model.attention import attention_stats
from lpstudy.training.config import resolve_config
from lpstudy.training.metrics import METRIC_FIELDS, MetricRecord
from lpstudy.training.spikes import LossSpikes
from lpstudy.training.trainer import train

NEW_FIELDS = ("max_logit", "min_head_entropy", "logit_bound", "loss_spikes")


def test_each_evaluation_records_logits_head_entropy_bound_and_spikes(corpus):
    cfg = resolve_config("smoke", {"p": 4, "max_steps": 50, "eval_interval": 25})
    run = train(cfg, corpus)
    d = cfg.n_embd // cfg.n_head
    for r in run.summary.history:
        assert all(math.isfinite(getattr(r, name)) for name in NEW_FIELDS)
        assert r.min_head_entropy <= r.attn_entropy
        assert 0 < r.max_logit <= r.logit_bound  # no logit beats Hölder's bound
        assert r.logit_bound == pytest.approx(r.gain_max * d ** 0.5, rel=1e-6)  # p = 4: g·d^(1/2)
    assert run.summary.history[0].logit_bound == pytest.approx(cfg.resolved_gain_init * d ** 0.5)
    spikes = [r.loss_spikes for r in run.summary.history]
    assert spikes == sorted(spikes) and spikes[0] == 0


def test_attention_stats_on_a_hand_made_head():
    # one batch, two heads, three positions; head 1 sees one key far above the others
    q = torch.zeros(1, 2, 3, 2)
    k = torch.zeros(1, 2, 3, 2)
    q[0, 1, :, 0] = 1.0
    k[0, 1, 0, 0] = 50.0
    stats = attention_stats(q, k, scale=1.0)
    uniform = (0 + math.log(2) + math.log(3)) / 3  # head 0: rows of 1, 2 and 3 equal weights
    assert float(stats["min_head_entropy"]) == pytest.approx(0.0, abs=1e-6)  # head 1 collapsed
    assert float(stats["entropy"]) == pytest.approx(uniform / 2, abs=1e-6)
    assert float(stats["max_logit"]) == 50.0


def test_loss_spikes_count_losses_far_above_their_running_median():
    falling = LossSpikes()
    assert not any(falling.add(4.0 * 0.99 ** i) for i in range(200))  # a falling loss raises none
    noisy = LossSpikes()
    for i in range(60):
        noisy.add(2.0 + 0.05 * (-1) ** i)
    assert noisy.add(2.2) is False and noisy.add(3.0) is True and noisy.add(float("nan")) is False
    assert noisy.count == 1


def test_a_metrics_table_without_the_new_columns_reads_and_is_upgraded(empty_url):
    url = empty_url
    engine = storage_at(url).make_engine()
    old_columns = [c for c in METRIC_FIELDS if c not in NEW_FIELDS and c != "step"]
    with engine.begin() as conn:  # the table as lpstudy before these metrics made it
        conn.execute(sa.text(
            f"CREATE TABLE {METRICS_TABLE} (trial_id INTEGER, step INTEGER, study_name VARCHAR(512), "
            f"trial_number INTEGER, {', '.join(f'{c} FLOAT' for c in old_columns)}, PRIMARY KEY (trial_id, step))"))
        conn.execute(sa.text(f"INSERT INTO {METRICS_TABLE} (trial_id, step, study_name, trial_number, val_loss) "
                             "VALUES (1, 0, 's', 0, 4.0)"))
    old = read_metrics(storage_at(url).make_engine(readonly=True), "s")
    assert list(old.columns) == ["trial_id", "trial_number", *METRIC_FIELDS]
    assert old["val_loss"].tolist() == [4.0] and old["max_logit"].isna().all()

    ensure_metrics_table(engine)  # what a worker does when it opens the database
    ensure_metrics_table(engine)  # and the next one: nothing left to add
    record = MetricRecord(step=10, train_loss=3.0, val_loss=3.1, lr=1e-3, grad_norm=1.0, grad_norm_max=1.0,
                          gain_mean=9.0, gain_min=9.0, gain_max=9.0, attn_entropy=1.0, tokens_per_s=1.0,
                          elapsed_s=1.0, max_logit=7.5, min_head_entropy=0.5, logit_bound=36.0, loss_spikes=2.0)
    write_metrics(engine, "s", 1, 0, [record])
    frame = read_metrics(engine, "s")
    assert frame["step"].tolist() == [0, 10]
    assert frame["max_logit"].tolist()[1] == 7.5 and math.isnan(frame["max_logit"].tolist()[0])
    assert frame["loss_spikes"].tolist()[1] == 2.0
