"""The local workers a command that creates a study may also run and wait for (replicate, compare):
--workers, --devices, --data, declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Optional

import typer

from lpstudy.cli.option_groups import OptionGroup


@dataclass(frozen=True)
class LocalWorkers(OptionGroup):
    """How many worker processes this command runs here (0: none, the user starts them), on what."""

    workers: Annotated[int, typer.Option(help="Also run this many local worker processes and wait for them.", min=0)] = 0
    devices: Annotated[str, typer.Option(help="With --workers: auto, cpu, or a list shared out round-robin.")] = "auto"
    data: Annotated[Optional[str], typer.Option(help="With --workers: the text file to train on.")] = None

    def device_list(self) -> list[str]:
        """The device of each local worker, --devices shared out round-robin ([] without --workers);
        a wrong device is refused (UserError) before anything is made."""
        if not self.workers:
            return []
        from lpstudy.study.launch import resolve_devices

        available = resolve_devices(self.devices)
        return [available[i % len(available)] for i in range(self.workers)]
