"""The charts: one function per figure, Plotly figures of the frames made by lpstudy.results.analysis
and of the answers, shared by the Streamlit pages and `lpstudy report`. Every figure has a title (the
browser test reads them).

One module per page family, each drawing with the look every chart shares (look: `figure`,
`mark_empty`, `caption`, p's axis, colours): trials (the Home and Trials pages: trials by state, the
optimisation history, one trial's dynamics), effect (Effect of p: loss against p, the mean per p
group, the tuned profile, the loss over a grid, importance), convergence (the curves, their bands,
the steps to a loss threshold and convergence as an answer), stability (divergence, gradient norms,
the gain, a search's spread), lens (the stability lens), search (what a search says about p),
verdicts (the arms' verdicts) and compute (what the trials spent). A reader imports the module of
its page's family (`from lpstudy.results.charts import effect`).

p = ∞ is drawn right of the largest finite p and labelled ∞ (analysis.inf_position/p_ticks);
learning rates are coloured on a log scale; diverged runs are marked apart (a red ×).
"""
