"""A study read into frames: the read side's readers. What a study database holds (studies, trials,
learning curves) as pandas frames, through the storage object a command or page made once from its
URL (frames, the one builder of the trials frame in trial_table); a grid cell counted once (cells);
the samples a big study's charts draw (curve_sample, point_sample); the dashboard's copy of a live
study, read again incrementally (live_study); where a study stands from a few queries (summary) and
every study of a database (study_list); a comparison read back through its arms (compare); and what
a study has spent on training (compute). Reads only."""
