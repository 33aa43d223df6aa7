"""The studies whose answers tests/data/answers.json holds, as lpstudy.results.answers.study_answer
gave them before the answer became typed objects: a replicate grid with verdicts (failed and
pending runs among them), a sequential comparison, a search, one with convergence endpoints, one
with diverged runs and one every run of which diverged. The types must give these dicts back
(tests/test_answer_types.py). Regenerate only where the answer's JSON is meant to change:

    PYTHONPATH=. python -m tests.answer_studies    # writes tests/data/answers.json
"""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from pathlib import Path

FIXTURE = Path(__file__).parent / "data" / "answers.json"
NOW = datetime(2026, 1, 1, 12, 0, 0)


def _stored(kind: str, **synthetic) -> tuple:
    """A synthetic study written into a fresh SQLite file and read back as `lpstudy verdict` reads it."""
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.answers import AnswerOptions, study_rope
    from lpstudy.results.reading.compare import verdict_data
    from lpstudy.study.synthetic import write_synthetic_study

    url = f"sqlite:///{tempfile.mkdtemp(prefix='answers-')}/study.db"
    write_synthetic_study(url, "s", kind=kind, now=NOW, **synthetic)
    data = verdict_data(open_reader(url), "s")
    return data, AnswerOptions(rope=study_rope(data.info.spec))


def replicate_grid():
    return _stored("replicate", p_values=[1.0, 2.0, 3.0, 4.0], folds=5, n_evals=6, seed=1, states=True,
                   include_inf=True)


def all_diverged():
    return _stored("replicate", p_values=[1.0, 2.0], folds=3, n_evals=4, seed=2, states=False,
                   include_inf=False, all_diverged=True)


def search():
    return _stored("search", n_trials=60, n_evals=6, seed=3)


def sequential_comparison():
    from lpstudy.results.answers.options import stage_options
    from lpstudy.results.reading.compare import _study_data
    from tests.test_compare_until_decided import planted_compare

    ref = [2.80, 2.90, 2.70]
    data = planted_compare({"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref)],
                            "p=4": [ref[0] + 0.3, ref[1] - 0.25, ref[2] + 0.28]})
    return _study_data(data), stage_options(data.plan.until_decided)


def convergence():
    from lpstudy.results.answers import AnswerOptions
    from tests.test_convergence_verdicts import planted_study

    return planted_study({2.0: 1.0, 1.0: 1.2, 4.0: 0.9}, folds=6, seed=4, pruned={(1.0, 2): 300},
                         diverged={(4.0, 5): 400}), AnswerOptions()


def diverged_runs():
    from lpstudy.results.answers import AnswerOptions
    from lpstudy.results.reading.frames import StudyData, StudyInfo
    from tests.test_verdicts import planted_trials

    trials = planted_trials({2.0: [2.0, 2.1, 1.9, 2.05], 3.0: [2.3, 2.42, 2.19, 4.17]}, diverged={(3.0, 3): True})
    return StudyData(name="diverged", info=StudyInfo(name="diverged", kind="replicate"), trials=trials,
                     curves=None), AnswerOptions()


STUDIES = {"replicate_grid": replicate_grid, "sequential_comparison": sequential_comparison, "search": search,
           "convergence": convergence, "diverged_runs": diverged_runs, "all_diverged": all_diverged}


def answer_json(name: str) -> dict:
    """The answer of study NAME as `lpstudy verdict --json` writes it."""
    from lpstudy.results.answers import study_answer

    answer = study_answer(*STUDIES[name]())
    return answer.to_json() if hasattr(answer, "to_json") else answer


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps({name: answer_json(name) for name in STUDIES}, indent=1, allow_nan=False) + "\n")
    print(f"wrote {FIXTURE}")
