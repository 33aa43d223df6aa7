"""Loss spikes: training losses far above their running median, counted as a run goes.

A step's loss is a spike when it exceeds the median of the previous WINDOW steps' losses by more
than RATIO of that median (25 %: a character-level model's batch-to-batch noise is a few per cent,
and a falling loss stays below its own running median, so early training raises none). The
counts are what Wortsman et al. (2023) and Zhai et al. (2023) look at beside the logits and the
entropy: spikes announce the instabilities that a final loss hides. Torch-free.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

WINDOW = 50  # steps whose median a loss is compared with
MIN_HISTORY = 10  # no verdict before this many steps
RATIO = 0.25  # a spike: loss > (1 + RATIO) · running median


class LossSpikes:
    """Feed it each step's training loss; `count` is the number of spikes so far."""

    def __init__(self, window: int = WINDOW, ratio: float = RATIO, min_history: int = MIN_HISTORY) -> None:
        self.recent: deque[float] = deque(maxlen=window)
        self.ratio, self.min_history = ratio, min_history
        self.count = 0

    def add(self, loss: float) -> bool:
        """Record one loss; True when it is a spike. A non-finite loss is not kept in the window."""
        if not math.isfinite(loss):
            return False
        spike = (len(self.recent) >= self.min_history
                 and loss > (1.0 + self.ratio) * statistics.median(self.recent))
        self.count += spike
        self.recent.append(loss)
        return spike
