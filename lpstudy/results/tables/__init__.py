"""The results' tables as a person reads them, one for every reader (`lpstudy verdict`, `status`,
`report` and the dashboard): the verdict table of an answer's arms and its colour rule (verdicts),
the convergence tables (convergence), and every column's label and number format, declared once
(columns)."""
