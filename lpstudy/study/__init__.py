"""A study run: creating and loading it in Optuna (studies), the objective that trains one trial
(objective), the worker loop (worker), worker processes (launch), the paper's replicate grid
(replicate), a comparison (compare), the stages of a study run --until-decided (stages), a search's
races (races) and a synthetic demo study (synthetic); its design (space, spec, options, the best
trial) is declared below it, in lpstudy.design. Only the objective imports torch, and only when a
trial runs."""
