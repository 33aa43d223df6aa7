"""The read side, in parts: a study read into frames (reading), the numbers behind every chart
(analysis), what a study can say about p (answers), the charts (charts) and the tables (tables) a
person reads, each dashboard page's charts declared once (pages), the offline report (report),
where a study stands (status), the best a reader shows (measured), runs picked by hand (picked_runs),
the export of the best configuration (export; the best trial is lpstudy.design.best's), and the
replay benchmark of search methods on grids of real curves (replay). Reads only, through
lpstudy.db's read-only mode; no torch."""
