"""Export: the best trial (or the top K) as the YAML or JSON run file that `lpstudy train --config`
reads, to download, and the exact command that retrains it. The text comes from lpstudy.results.export,
the same as `lpstudy export`; the page says first how it was chosen (lpstudy.results.reading.measured.StudyBest):
a search's configuration over the folds it was measured on (one fold only: "leading on 1 fold", never
"best"), a replicate's or comparison's arm with the lowest mean over its folds and its verdict."""

import streamlit as st

from lpstudy.results import analysis as A

from common import CACHE_TTL_S, no_traceback, page, plain, reader, show_problem
from tables import table

storage, study = page("Export", curves=False)
trials = study.trials
show_problem(trials)
if study.info.synthetic:  # no run stands behind its losses: a run file would retrain to another loss
    st.info("A synthetic study offers no run file: retraining its best configuration would not reproduce its "
            "made-up loss. Run a real study (`lpstudy search --preset smoke`) to export one.")
    table(A.top_trials(trials, 10)[["number", "loss", "p", "lr", "gain_init", "fold", "seed"]])
    st.stop()


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)
def exported(storage_url: str, study_name: str, top_k: int, fmt: str) -> str:
    from lpstudy.results.export import export_text

    return export_text(reader(storage_url), study_name, top_k=top_k, fmt=fmt)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)
def measured(storage_url: str, study_name: str) -> dict | None:
    """How the exported configuration was chosen (the run file's `source` fields): a replicate's,
    grid's or comparison's arm (results.reading.measured.StudyBest), a search's configuration over folds."""
    from lpstudy.results.export import arm_choice, search_choice

    arm = arm_choice(reader(storage_url), study_name)
    if arm is not None:
        return arm[2]
    found = search_choice(reader(storage_url), study_name)
    return None if found is None else found[2]


with no_traceback():
    known = measured(storage, study.name)
if known is not None and known["chosen_as"] == "arm":
    st.info(f"{plain(known['measured'])}. The run file retrains its run on its first fold.")
elif known is not None:
    (st.success if known["chosen_as"] == "best" else st.warning)(
        f"{plain(known['measured'])} (trials {', '.join(map(str, known['trials']))}).")

left, right = st.columns([1, 1])
fmt = left.radio("Format", ["yaml", "json"], horizontal=True)
top_k = right.number_input("How many of the best trials", min_value=1, max_value=50, value=1, step=1)
with no_traceback():
    from lpstudy.results.export import train_command

    text = exported(storage, study.name, int(top_k), fmt)
file_name = f"{study.name}-best.{fmt}" if top_k == 1 else f"{study.name}-top{int(top_k)}.{fmt}"

if known is not None and known["chosen_as"] == "arm" and study.info.kind != "compare":  # the arm's runs, fold by fold
    runs = A.successful(trials)
    table(runs[runs["p"].map(lambda p: f"p = {A.format_p(p)}") == known["arm"]]
          .sort_values("fold")[["number", "loss", "p", "lr", "gain_init", "fold", "seed"]])
elif known is None:  # a study without a spec: its trials by value
    table(A.top_trials(trials, int(top_k))[["number", "loss", "p", "lr", "gain_init", "fold", "seed"]])
st.download_button(f"Download {plain(file_name)}", data=text, file_name=file_name,
                   mime="application/json" if fmt == "json" else "application/x-yaml", type="primary")
st.code(text, language=fmt)
st.markdown("Retrain it:" if top_k == 1 else
            "This file lists the top runs under `runs:`; save one of them as its own file and retrain it with:")
st.code(train_command(file_name), language="bash")
