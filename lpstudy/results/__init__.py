"""The read side: a study read into frames (frames), the numbers behind every chart (analysis), the
charts (charts), the offline report (report), status (status), a comparison read back (compare) and
the export of the best configuration (export; the best trial is lpstudy.study.best's). Reads only,
through lpstudy.db's read-only mode; no torch."""
