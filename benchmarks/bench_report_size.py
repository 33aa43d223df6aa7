"""The size of `lpstudy report` for a small study (8 trials, as a first afternoon's search), with
plotly.js packed inside (the default: opens offline) and from the CDN (--plotlyjs cdn), against the
size plotly.js alone would add unpacked (what every report carried before it was packed).

    python benchmarks/bench_report_size.py [--trials 8] [--result report_size]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    add_result_argument(parser, "report_size")
    args = parser.parse_args()
    load = load_average()
    from plotly.offline import get_plotlyjs

    from lpstudy.study.synthetic import write_synthetic_study

    plotlyjs = len(get_plotlyjs().encode())
    sizes = {}
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/study.db"
        write_synthetic_study(url, "s", n_trials=args.trials, n_evals=6, seed=1, states=False)
        for how in ("inline", "cdn"):
            out = Path(folder) / f"{how}.html"
            subprocess.run([sys.executable, "-m", "lpstudy", "report", "--study", "s", "--storage", url, "-o", str(out),
                            "--plotlyjs", how], check=True, capture_output=True, cwd=ROOT)
            sizes[how] = out.stat().st_size
    before = sizes["cdn"] + plotlyjs  # the figures with plotly.js unpacked inside, as every report was
    rows = [["report", "bytes", "MB", "of the unpacked report"],
            ["plotly.js unpacked inside (before)", f"{before:,}", f"{before / 1e6:.2f}", "1.00"],
            ["plotly.js packed inside (default)", f"{sizes['inline']:,}", f"{sizes['inline'] / 1e6:.2f}",
             f"{sizes['inline'] / before:.2f}"],
            ["--plotlyjs cdn", f"{sizes['cdn']:,}", f"{sizes['cdn'] / 1e6:.2f}", f"{sizes['cdn'] / before:.2f}"]]
    write_result(args.result, None, rows, f"A synthetic search of {args.trials} trials (6 evaluations each); plotly.js "
                 f"{plotlyjs:,} bytes unpacked. The packed report opens offline in browsers with DecompressionStream "
                 "(Chrome 80, Firefox 113, Safari 16.4 and later); the cdn one needs the network.",
                 title="lpstudy report: file size", load_at_start=load)


if __name__ == "__main__":
    main()
