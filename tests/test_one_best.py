"""One best, defined once (lpstudy.results.reading.measured.StudyBest), shown the same by every reader: a
replicate's is the arm with the lowest mean over its folds with its verdict, never its luckiest single
fold; a search's is the configuration it returns, its mean over folds first."""

from __future__ import annotations

import json
import statistics

import yaml

from lpstudy.design.spec import StudySpec
from tests.study_helpers import cli, trials_of
from tests.test_verdicts import planted_trials


def arm_by_hand(trials):
    """The arm a user means by "the best p": among the p values none of whose runs diverged and that
    ran on the most folds, the one with the lowest mean final loss over its folds; its run on its first
    fold; from Optuna's trials."""
    by_p: dict = {}
    for t in trials:
        if t.state.name == "COMPLETE":
            by_p.setdefault(t.user_attrs["p"], []).append(t)
    clean = {p: runs for p, runs in by_p.items() if not any(r.user_attrs.get("diverged") for r in runs)}
    most = max(len(runs) for runs in clean.values())  # an arm with folds still to run is not ranked yet
    mean = {p: statistics.fmean(r.value for r in runs) for p, runs in clean.items() if len(runs) == most}
    p = min(mean, key=mean.get)
    first = min(clean[p], key=lambda r: (r.user_attrs["fold"], r.number))
    return p, mean[p], sorted(r.user_attrs["fold"] for r in clean[p]), first


def test_a_replicates_best_is_the_arm_with_the_lowest_mean_not_its_luckiest_fold():
    from lpstudy.results.answers import AnswerOptions, study_answer
    from lpstudy.results.reading.measured import arm_best
    from lpstudy.results.reading.frames import StudyData, StudyInfo

    # p = 1 holds the lowest single run (a lucky fold 1), p = 3 the lowest mean, p = 4 a lower mean
    # still on the runs it finished, but one of its runs diverged: a failed run bars it
    trials = planted_trials({2.0: [2.80, 2.82, 2.81], 1.0: [2.95, 2.60, 2.97], 3.0: [2.72, 2.71, 2.73],
                             4.0: [2.50, 2.52, 9.99]}, diverged={(4.0, 2): True})
    data = StudyData(name="planted", info=StudyInfo(name="planted", kind="replicate", spec=StudySpec.from_plain({"folds": 3})),
                     trials=trials, curves=None)
    answer = study_answer(data, AnswerOptions())
    best = arm_best(trials, "replicate", answer)
    assert best.arm == "p = 3" and best.chosen_as == "arm" and best.folds == (0, 1, 2)
    assert abs(best.mean - (2.72 + 2.71 + 2.73) / 3) < 1e-12
    assert best.number == int(trials[(trials["p"] == 3.0) & (trials["fold"] == 0)]["number"].iloc[0])
    verdict = {a.value: a.verdict for a in answer.arms}[3.0]
    assert best.verdict == f"{ {'undecided': 'undecided against', 'better': 'better than'}[verdict]} p = 2"
    assert best.cell() == f"p = 3: {best.mean:.4f} (mean of 3 folds)"


def test_status_studies_and_export_show_the_same_arm_of_a_replicate(seeded, capsys, tmp_path):
    url, _ = seeded
    p, mean, folds, first = arm_by_hand(trials_of(url, "grid"))
    luckiest = min((t for t in trials_of(url, "grid") if t.state.name == "COMPLETE"
                    and not t.user_attrs.get("diverged")), key=lambda t: t.value)
    assert luckiest.number != first.number  # the seeded study tells the two apart
    name = f"p = {p:g}"

    code, out, err = cli(capsys, "status", "--study", "grid", "--storage", url, "--json")
    assert code == 0, err
    best = json.loads(out)["best"]
    assert (best["chosen_as"], best["arm"], best["number"]) == ("arm", name, first.number)
    assert abs(best["mean_over_folds"] - mean) < 1e-9 and best["folds_measured"] == len(folds)
    assert best["verdict"] and (best["verdict"] == "the reference" or best["verdict"].endswith("p = 2"))
    code, out, _ = cli(capsys, "status", "--study", "grid", "--storage", url)
    assert f"best     {name}: mean loss {mean:.4f} over {len(folds)} folds" in out, out

    code, out, _ = cli(capsys, "studies", "--storage", url)
    row = next(line for line in out.splitlines() if line.startswith("grid "))
    assert f"{name}: {mean:.4f} (mean of {len(folds)} folds)" in row, row

    target = tmp_path / "best.yaml"
    code, _, err = cli(capsys, "export", "--study", "grid", "--storage", url, "-o", str(target))
    assert code == 0, err
    source = yaml.safe_load(target.read_text())["source"]
    assert source["trial"] == first.number and source["trial"] != luckiest.number
    assert (source["chosen_as"], source["arm"], source["folds"]) == ("arm", name, folds)
    assert abs(source["mean_over_folds"] - mean) < 1e-9 and source["verdict"] == best["verdict"]


def test_home_and_the_sidebar_show_the_one_best_and_no_history_for_a_grid(seeded, monkeypatch):
    from tests.test_app import chart_titles, run_page, unescaped
    from tests.study_helpers import best_by_hand

    url, _ = seeded
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    p, mean, folds, first = arm_by_hand(trials_of(url, "grid"))
    at = run_page("Home", url, "grid")
    assert "Lowest arm" in [s.value for s in at.subheader]
    metric = next(m for m in at.metric if m.label.startswith("Final validation loss"))
    assert metric.label == "Final validation loss" and metric.value == f"{mean:.4g}"
    assert f"over the {len(folds)} folds it ran on" in metric.help  # the label fits a narrow column; the help says it
    assert f"p = {p:g} has the lowest mean loss, {mean:.4f} over {len(folds)} folds; its verdict:" in \
        " ".join(unescaped(m.value) for m in at.info)
    assert f"Lowest arm: p = {p:g}: {mean:.4f} (mean of {len(folds)} folds)" in [unescaped(c.value) for c in at.sidebar.caption]
    assert "Optimisation history" not in chart_titles(at)  # a grid optimises nothing

    at = run_page("Home", url, "search")  # a search: the configuration it returns, its mean over folds
    trials = trials_of(url, "search")
    best = best_by_hand(trials)
    runs = [t.value for t in trials if t.state.name == "COMPLETE" and t.params == best.params]
    mean = statistics.fmean(runs)
    shown = next(m for m in at.metric if m.label.startswith("Final validation loss"))
    assert shown.value == f"{mean:.4g}"  # its mean over the folds it ran on, not its tuning fold's loss
    heading = "Best configuration" if len(runs) > 1 else "Leading configuration (1 fold)"
    tail = f"(mean of {len(runs)} folds)" if len(runs) > 1 else "(leading, 1 fold)"
    assert f"{heading}: {mean:.4f} {tail}" in [unescaped(c.value) for c in at.sidebar.caption]
    assert f"trial **{best.number}** (exported)" in " ".join(m.value for m in at.markdown)
    assert "Optimisation history" in chart_titles(at)


def test_home_opens_a_replicate_with_its_answer_in_one_sentence(seeded, monkeypatch):
    """A replicate's Home opens with the verdicts in one sentence: each arm named once, with the verdict
    `lpstudy verdict` gives it at the study's ROPE; a search has no such line."""
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.answers import AnswerOptions, study_answer, study_rope
    from lpstudy.results.reading.compare import verdict_data
    from tests.test_app import run_page, unescaped

    url, _ = seeded
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    data = verdict_data(open_reader(url), "grid")
    answer = study_answer(data, AnswerOptions(rope=study_rope(data.info.spec))).to_json()
    at = run_page("Home", url, "grid")
    heads = [unescaped(m.value) for m in at.markdown if m.value.startswith("#### ")]
    assert len(heads) == 1, heads
    line = heads[0]
    if answer["interim"]:
        assert line.startswith("#### Interim")
    else:
        for arm in answer["arms"]:
            assert f"p = {arm['value']:g}" in line
        assert {a["verdict"] for a in answer["arms"]} <= {w for w in ("better", "equivalent", "worse", "undecided")
                                                           if w in line}
    at = run_page("Home", url, "search")
    assert not [m for m in at.markdown if m.value.startswith("#### ")]
