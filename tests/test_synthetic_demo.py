"""The synthetic demo study says what it is: its own name (never the real study's default), the
command that opens it, the mark every page shows as a banner, and an evaluation at step 0 (the
attention entropy at initialisation the stability lens charts)."""

from __future__ import annotations

import json

import optuna


def test_the_synthetic_study_is_named_marked_and_says_how_to_open_it(tmp_path, capsys, monkeypatch):
    from lpstudy.db.kinds import open_reader
    from lpstudy.results import analysis as A
    from lpstudy.results.reading.frames import load_study, study_infos
    from lpstudy.study.synthetic import main

    monkeypatch.chdir(tmp_path)
    main(["sqlite:///demo.db", "--trials", "12", "--evals", "3"])
    out, err = capsys.readouterr()
    assert json.loads(out)["study"] == "synthetic" and json.loads(out)["synthetic"] is True
    assert err == ("a synthetic search study (made-up curves, no training run behind them); open it with: "
                   "lpstudy dashboard --study synthetic --storage sqlite:///demo.db\n")
    assert [s.study_name for s in optuna.get_all_study_summaries("sqlite:///demo.db")] == ["synthetic"]
    with open_reader("sqlite:///demo.db") as reader:
        (info,) = study_infos(reader)
        data = load_study(reader, "synthetic")
    assert info.synthetic and data.info.synthetic
    assert set(data.curves.groupby("trial_id")["step"].min()) == {0}  # every run evaluated before its first step
    assert not A.initial_entropy(data.curves, data.trials).empty
