"""lpstudy: hyperparameter studies of Lp-QKNorm attention (arXiv:2602.05006).

The package follows the data flow: model/ (Lp normalisation, attention, GPT) ← training/ (config,
data, trainer) ← study/ (space, spec, objective, workers) → db/ (the one storage layer) → results/
(frames, analysis, charts, report, status, export) → cli/ and the dashboard in app/. Importing
lpstudy imports no torch: only model/ and training's trainer, data and artifacts do.
"""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """`lpstudy.__version__`, looked up in the installed package's metadata when first asked for:
    importlib.metadata costs about a tenth of a second, which every command paid on start."""
    if name != "__version__":
        raise AttributeError(f"module 'lpstudy' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("lpstudy")
    except PackageNotFoundError:  # running from a source tree that is not installed
        found = "0.0.0+local"
    globals()["__version__"] = found
    return found
