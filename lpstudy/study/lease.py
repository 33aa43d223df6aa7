"""lpstudy's lease, where Optuna has no heartbeats (journal, gRPC): now one of the liveness objects a
storage returns (lpstudy.db.liveness.Lease, StudyStorage.liveness); kept here under its old names."""

from lpstudy.db.liveness import Lease, last_beat, running_beats
from lpstudy.values import LEASE_ATTR

__all__ = ["LEASE_ATTR", "Lease", "last_beat", "running_beats"]
