"""The replay benchmark (`lpstudy replay`, `lpstudy export-grid`, benchmarks/bench_search_suite.py):
what a search method spends to find a grid's best configuration, measured on grids of real learning
curves instead of training. A grid study as a table of curves, written to and read from a file
(grid_table), grid studies run in parts joined into one (grid_join); the methods compared, a sampler
and a pruner each, built by the code a study uses (methods); each (method, seed) replayed through
Optuna's real ask/tell into a trace (traces); traces scored with intervals (scores), ranked over a
suite of grids and the default chosen there (suite); and the chart of it (chart)."""
