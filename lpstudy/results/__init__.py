"""The read side, in parts: a study's rows built into frames (rows), a study read into frames for a
reader and the best it shows (reading), the numbers behind every chart (analysis), what a study can
say about p (answers), the charts (charts) and the tables (tables) a person reads, each dashboard
page's charts declared once (pages), the offline report (report), where a study stands (status),
runs picked by hand (picked_runs),
the export of the best configuration (export; the best trial is lpstudy.design.best's), and the
replay benchmark of search methods on grids of real curves (replay). Reads only, through
lpstudy.db's read-only mode; no torch. The statistics (answers, analysis) and the rows sit below the
study engine, which reads them too (pyproject.toml's [tool.importlinter] orders the parts)."""
