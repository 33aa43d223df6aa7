"""The statistical words every verdict table uses, each said once in one plain line: the pages show
them as hovers and under the verdict tables, `lpstudy verdict` and `lpstudy report` print them."""

from __future__ import annotations

GLOSSARY = {
    "ROPE": "region of practical equivalence: a difference smaller than this margin (set before looking, in nats "
            "of loss or a share of the reference's) counts as no difference in practice.",
    "TOST": "two one-sided tests: an arm is called equivalent when its difference is shown to lie inside the ROPE "
            "on both sides at once (read on the 90 % interval).",
    "Holm": "Holm's correction: the p-values are raised for the number of arms compared, so that the chance of any "
            "wrong verdict among them stays at alpha.",
    "corrected t": "the t interval over folds made wider for K-fold cross-validation, whose training sets overlap "
                   "(Nadeau & Bengio 2003): folds are not independent repeats.",
    "ω²": "partial omega squared: the share of the loss's variation within folds that the compared field explains "
          "(0: none, 1: all).",
    "Kaplan–Meier": "the share of runs that reached the loss threshold by each step, counting a run that stopped "
                    "early (pruned, still running) only up to where it stopped.",
}


def glossary_lines() -> list[str]:
    """Each term and its line: "ROPE: region of practical equivalence: ..."."""
    return [f"{term}: {meaning}" for term, meaning in GLOSSARY.items()]


def glossary_markdown() -> str:
    """The glossary as a Markdown list, each term in bold."""
    return "\n".join(f"- **{term}**: {meaning}" for term, meaning in GLOSSARY.items())
