"""Whether a run fits the machine, asked before its model is allocated.

A config inside every field's bound (training/bounds.py) can still need more memory than there is
(64 layers × 8192 dimensions is 52 billion parameters); allocating it would fail deep inside torch,
or on Linux's overcommitted memory, bring in the OOM killer. So the trainer compares the run's
estimated need with the memory of its device first and refuses in one line.
"""

from __future__ import annotations

import os

import torch

from lpstudy.errors import UserError
from lpstudy.training.bounds import memory_estimate


def device_memory(device: torch.device) -> int | None:
    """The bytes a run on device can use at most: the GPU's memory, or the machine's (bounded by its
    cgroup's limit where one is set); None when it cannot be told."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[1]
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    except OSError:
        pass
    return total


def check_fits(cfg, device: torch.device, vocab_size: int) -> None:
    """UserError when the run's estimated memory exceeds what the device has."""
    have = device_memory(device)
    need = memory_estimate(cfg, vocab_size)
    if have is not None and need > have:
        raise UserError(f"this model needs about {need / 2**30:.1f} GiB to train ({cfg.n_layer} layers × "
                        f"{cfg.n_embd} dimensions, batch {cfg.batch_size} × context {cfg.block_size}) but "
                        f"{device.type} has {have / 2**30:.1f} GiB; make it smaller")
