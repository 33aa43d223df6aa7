"""An equal-budget comparison (`lpstudy compare`): each arm's tuning budget and best configuration,
each arm's verdict against the reference arm over the folds of its replicate runs (lpstudy.results.answers:
the equal-budget chart in nats, coloured by verdict, its share of the reference's loss in the hover, drawn
once, and the table `lpstudy verdict` prints: the one comparison of arms) and, for a
comparison run --until-decided, its stages: each arm's state at every look, the alpha each look
spends and the fold runs saved (the answer's "sequential" entry, as `lpstudy verdict` prints it)."""

import streamlit as st

from lpstudy.results.charts import verdicts as V
from lpstudy.results.tables.summary import verdict_summary
from lpstudy.results.tables.verdicts import sequential_lines, stages_frame, verdict_frame, verdict_title

from common import STUDY_KEY, cached_study_infos, chart, no_traceback, reader, server_reader, verdict_table
from tables import table

EMPTY_STATE_COMMAND = "lpstudy compare --study NAME --preset smoke --p 1,2,3,4 --budget 20 --folds 5"

st.title("Compare")
with no_traceback():
    storage = server_reader().url  # the server's one reader, as every page (common.page)
comparisons = [i.name for i in cached_study_infos(storage) if i.kind == "compare"]
if not comparisons:
    st.info("This database holds no comparison. Start one (add your --storage), then point workers at it with "
            "`lpstudy worker --study NAME`:")
    st.code(EMPTY_STATE_COMMAND, language="bash", wrap_lines=False)  # one line: never wrapped inside a flag
    st.stop()
chosen = st.session_state.get(STUDY_KEY)
name: str = chosen if isinstance(chosen, str) and chosen in comparisons else comparisons[0]
if chosen not in comparisons:
    st.caption(f"The chosen study is not a comparison; showing `{name}`.")


@st.cache_data(ttl=5, show_spinner="Reading the comparison…")
def cached_compare(storage_url: str, compare_name: str):
    from lpstudy.results.reading.compare import load_compare, stages_answer

    data = load_compare(reader(storage_url), compare_name)
    answer = stages_answer(data)  # with the ROPE and alpha it ran --until-decided with, as `lpstudy verdict`
    return data.plan, data.budgets, data.reference, answer


with no_traceback():
    plan, budgets, reference, answer = cached_compare(storage, name)
stages = "/".join(map(str, plan.until_decided.rounds if plan.until_decided else ()))
replicated = (f"on up to {plan.folds} folds, in stages of {stages} folds until its verdict is decided"
              if plan.until_decided else f"on {plan.folds} folds") + (
    f", {plan.seeds} training seeds a fold" if plan.seeds > 1 else "")
tuned = (f"{plan.budget} tuning trials each on fold {plan.tune_fold}" if plan.tunings == 1 else
         f"{plan.tunings} independent tunings of {plan.budget} trials each (on folds "
         f"{', '.join(str(plan.fold_of_tuning(t)) for t in range(plan.tunings))})")
st.markdown(f"**{name}**: arms of `{plan.factor}` · {tuned} "
            f"(TPE, median pruner) · then each arm's best configuration {replicated} · reference {reference}")
st.subheader("Tuning budget per arm")
table(budgets)
st.subheader("Verdicts")
st.markdown(f"**Verdict.** {answer.sentence}")
chart(V.equal_budget_chart(answer), key="compare")  # each arm's verdict drawn once: nats, its % in the hover
verdicts = verdict_frame(answer)
if len(verdicts):
    st.markdown(verdict_summary(answer))  # what was compared, what is known, what would decide it
    st.caption(verdict_title(answer))
    verdict_table(verdicts)  # every column in view, the glossary under it
if answer.sequential:  # run --until-decided: the stages the verdicts were reached in
    st.subheader("Stages")
    for line in sequential_lines(answer):
        st.caption(line)
    chart(V.stages_chart(answer), key="compare_stages")
    table(stages_frame(answer))
