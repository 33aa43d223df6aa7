"""A study's design, declared: its search space (space), every study option (options) and the spec
made of them (spec, spec_fields), how a study run --until-decided spends its folds (until_decided),
which configuration a search returns and which leaders it races (intensify), and the one definition
of the best trial (best). Plain values and rules below the study engine (lpstudy.study) and the
statistics (lpstudy.results.answers, lpstudy.results.analysis), which both read them: no storage, no torch."""
