"""Reading the study the first visitor sees while the dashboard's server starts (`lpstudy dashboard`
starts it before Streamlit's own code runs), so that the first page does not wait for a whole read of
a big study (7-10 s at 100,000 trials on PostgreSQL), nor for the parameter importance that Effect
of p shows, nor, for a search, for p's surrogate profile that Effect of p opens with (its fit, about
2 s of CPU on a large search). The study goes into the pages' own copy of its current version
(common.cached_study), the importance into its cache (common.cached_importance), the surrogate's
answer into what the pages keep with that version (common.page_inputs: the key Effect of p asks
it by): a page that comes during the read waits for the rest of it; one that comes later reads and
fits nothing while the study is unchanged, and only what changed since otherwise. Nothing is shown
on a page from here; a failure is left to the page, which reads again and says what is wrong.
"""

from __future__ import annotations

import sys
import threading
import time

RUNTIME_WAIT_S = 60.0  # Streamlit's runtime starts within a second or two; common's caches need it


def read_ahead(storage_url: str, study_name: str | None = None, wait_for_runtime: bool = True) -> threading.Thread:
    """Read `study_name` (else the study chooser's first) into the dashboard's copy, in a background
    thread that first waits for Streamlit's runtime (common's caches are made for it; a test without
    a server passes wait_for_runtime=False). Says on stderr what it read and how long it took."""

    def read() -> None:
        from streamlit.runtime import Runtime

        deadline = time.monotonic() + RUNTIME_WAIT_S
        while wait_for_runtime and not Runtime.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.perf_counter()
        try:
            import common
            from lpstudy.results.reading.frames import study_infos

            name = study_name or next((info.name for info in study_infos(common.reader(storage_url))), None)  # the server's reader
            if name is None:
                return
            data = common.cached_study(storage_url, name, curves=False)  # the version the first page draws
            read_s = time.perf_counter() - started
            # Effect of p's longest part on a first draw (0.43 of its 0.77 s of server time at 10,000 trials)
            common.cached_importance(storage_url, name, common.importance_key(data.trials))
            importance_s = time.perf_counter() - started - read_s
            surrogate = ""
            inputs = common.page_inputs(data, storage_url)
            if inputs.searched:  # a search: p's effect with lr and gain held apart, kept with this version
                inputs.effect  # noqa: B018 - computed into the pages' keep (common.once), as Effect of p asks for it
                surrogate = f", p's surrogate profile in {time.perf_counter() - started - read_s - importance_s:.1f} s"
        except Exception:  # noqa: BLE001 - only a head start: the first page reads again and shows the problem
            return
        print(f"lpstudy dashboard: read study {name!r} ahead of the first visitor: {len(data.trials):,} trials "
              f"in {read_s:.1f} s, their parameter importance in {importance_s:.1f} s{surrogate}",
              file=sys.stderr, flush=True)

    thread = threading.Thread(target=read, name="lpstudy-read-ahead", daemon=True)
    thread.start()
    return thread
