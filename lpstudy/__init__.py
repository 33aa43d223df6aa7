"""lpstudy: hyperparameter studies of Lp-QKNorm attention (arXiv:2602.05006)."""

from importlib.metadata import PackageNotFoundError, version

from lpstudy.errors import UserError
from lpstudy.lpnorm import CausalSelfAttention, lp_normalize

try:
    __version__ = version("lpstudy")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+local"

__all__ = ["CausalSelfAttention", "UserError", "__version__", "lp_normalize"]
