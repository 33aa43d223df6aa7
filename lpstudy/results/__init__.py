"""The read side: a study read into frames (frames), the numbers behind every chart (analysis), the
best trial (best), the charts (charts), the offline report (report), status (status) and the export
of the best configuration (export). Reads only, through lpstudy.db's read-only mode; no torch."""
