"""The numbers behind every chart: pure functions over the trials and curves frames they are handed
(StudyData, study_data; built by lpstudy.results.rows), with a grid's cells (cells) and the curve
sample (curve_sample). No I/O, no plotting; the dashboard, `lpstudy report` and `lpstudy status` share them.

Conventions:
- A trial's loss is its final validation loss: the value of a COMPLETE trial that did not diverge.
  Diverged trials (COMPLETE with diverged=True, valued ln V) count in divergence rates, never in
  loss averages.
- p may be ∞. Groups of p ("p bins") are either the exact values (a replicate study's grid) or
  equal-width bins over the finite range, with ∞ always a bin of its own, last.
- Intervals are 95 % by default: Student's t for means, Wilson's for rates.
"""

from __future__ import annotations

from lpstudy.values import STATES, format_p  # noqa: F401 - the pages read p's labels and the states here
from lpstudy.results.analysis.groups import (  # noqa: F401
    DEFAULT_P_BINS,
    EXACT_P_LIMIT,
    INF_LABEL,
    default_p_bins,
    default_p_groups,
    page_p_groups,
    p_range_edges,
    exact_p_fit,
    inf_position,
    p_bins,
    p_positions,
    p_ticks,
)
from lpstudy.results.analysis.selection import (  # noqa: F401
    best_trial,
    data_problem,
    filter_trials,
    finished,
    grid_progress,
    interrupted,
    running_trials,
    state_counts,
    successful,
    top_trials,
)
from lpstudy.results.analysis.intervals import (  # noqa: F401
    t_interval,
    wilson_interval,
)
from lpstudy.results.analysis.effect import (  # noqa: F401
    MAP_COLUMNS,
    SUMMARY_COLUMNS,
    map_axis,
    p_map,
    per_p_summary,
    with_lr_bins,
)
from lpstudy.results.analysis.tuned import (  # noqa: F401
    TUNED_COLUMNS,
    TUNED_TOP,
    tuned_profile,
)
from lpstudy.results.analysis.importance import (  # noqa: F401
    Importance,
    param_importance,
)
from lpstudy.results.analysis.convergence import (  # noqa: F401
    area_under_curve,
    convergence_by_trial,
    default_threshold,
    run_endpoints,
    shared_horizon,
    steps_to_threshold,
    threshold_rule,
)
from lpstudy.results.analysis.cohort import (  # noqa: F401
    COHORT_RULE,
    with_p,
    CurveBands,
    curve_cohort,
)
from lpstudy.results.analysis.stability import (  # noqa: F401
    divergence_rates,
    max_grad_norms,
    replicate_spread,
)
from lpstudy.results.analysis.lens import (  # noqa: F401
    EXACT_LR_LIMIT,
    LR_BINS,
    LR_CURVE_COLUMNS,
    SENSITIVITY_COLUMNS,
    capped_losses,
    initial_entropy,
    lr_curve,
    lr_groups,
    lr_sensitivity,
)
from lpstudy.results.analysis.arms import (  # noqa: F401
    tuning_summary,
)
