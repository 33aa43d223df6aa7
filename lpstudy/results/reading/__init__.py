"""A study read into frames: the read side's readers. What a study database holds (studies, trials,
learning curves) as pandas frames, through the storage object a command or page made once from its
URL (frames, over the frames built in lpstudy.results.rows), the best a reader shows (measured);
the points a big study's point charts draw (point_sample); the dashboard's copy of a live
study, read again incrementally (live_study); where a study stands from a few queries (summary) and
every study of a database (study_list); a comparison read back through its arms (compare); and what
a study has spent on training (compute). Reads only."""
