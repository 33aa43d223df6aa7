"""A study's rows as frames, built once from what its storage hands a reader (lpstudy.db's
StudyTables): the trials frame and the learning curves, the study's info (build, over trial_table),
and a comparison's arms read as one study (arms). Below the stage engine, which reads here what it
hands the verdicts (lpstudy.results.answers), and below the read side (lpstudy.results.reading),
which reads a study through here and adds what a reader shows."""
