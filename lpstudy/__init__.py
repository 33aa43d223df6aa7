"""lpstudy: hyperparameter studies of Lp-QKNorm attention (arXiv:2602.05006).

The package follows the data flow: model/ (Lp normalisation, attention, GPT) ← training/ (config,
data, trainer) ← study/ (space, spec, objective, workers) → db/ (the one storage layer) → results/
(frames, analysis, charts, report, status, export) → cli/ and the dashboard in app/. Importing
lpstudy imports no torch: only model/ and training's trainer, data and artifacts do.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lpstudy")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
