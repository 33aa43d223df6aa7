"""How often a search's answer about p says what is not there, and how often its band holds the truth,
on planted searches (issue 53, item 5).

Each planted search: 120 configurations (tests/search_planted.py's layout: p, lr and the gain drawn
independently unless the kind ties them, lr's bowl around 1e-3, noise 0.02 a run), the loss's
dependence on p planted, so the true profile (lr tuned at each p) is known. Per kind, the share of
searches whose sentence says "separates" (where the truth is within the ROPE everywhere, a false
claim), that say p cannot be told from the learning rate, and whose simultaneous band holds the
whole true profile (every grid point, ∞ where profiled), each with its Wilson 95 % interval. Kinds:
no effect; lr tied to p (rank correlation about 0.9, no effect of p); p = ∞ in the space (a quarter
of the configurations, no effect); a step (+0.03 from p = 3: 3 ROPE); a linear effect (−0.1 over
[1, 4]). Then a search whose leaders are raced on folds 1–3 against the same search without the
races: the mean width of p's difference band (races alone must not narrow it).

    python benchmarks/bench_search_band.py                  # 40 searches a kind
    python benchmarks/bench_search_band.py --searches 10 --result none
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

N = 120
NOISE = 0.02


def step(p):
    return np.where(np.isfinite(p) & (p >= 3), 0.03, 0.0)


def linear(p):
    return np.where(np.isfinite(p), -0.1 * (p - 1) / 3, 0.0)


def none(p):
    return np.zeros_like(np.asarray(p, dtype="float64"))


KINDS = {  # name: (the truth's p effect, lr tied to p, share of ∞)
    "no effect": (none, False, 0.0),
    "lr tied to p, no effect": (none, True, 0.0),
    "p = ∞ in the space, no effect": (none, False, 0.25),
    "step +0.03 from p = 3 (3 ROPE)": (step, False, 0.0),
    "linear −0.1 over [1, 4] (10 ROPE)": (linear, False, 0.0),
}


def planted(kind: str, seed: int):
    from tests.search_planted import search_trials

    effect, tied, inf_share = KINDS[kind]
    rng = np.random.default_rng(seed)
    u = rng.uniform(0, 1, N)
    log_lr = -4 + 2 * u
    p = 1 + 3 * (0.9 * u + 0.1 * rng.uniform(0, 1, N)) if tied else rng.uniform(1, 4, N)
    p = np.where(rng.uniform(0, 1, N) < inf_share, math.inf, p)
    gain = np.exp(rng.uniform(math.log(2), math.log(64), N))
    loss = 2.0 + 0.3 * (log_lr + 3) ** 2 + effect(p) + rng.normal(0, NOISE, N)
    return search_trials(p, 10 ** log_lr, gain, loss), effect


def wilson(k: int, n: int) -> str:
    from lpstudy.results.analysis.intervals import wilson_interval

    low, high = wilson_interval(k, n, 0.95)
    return f"{k / n:.3f} [{low:.3f}, {high:.3f}]"


def one_kind(kind: str, searches: int) -> list:
    from lpstudy.results.answers.search import search_answer
    from tests.search_planted import study

    separates = tangled = covered = 0
    seconds = []
    for seed in range(searches):
        trials, effect = planted(kind, 1000 + seed)
        start = time.process_time()
        answer = search_answer(study(trials))
        seconds.append(time.process_time() - start)
        separates += "separates p's effect" in answer.sentence
        tangled += "cannot separate p from" in answer.sentence
        profile = answer.p_profile
        if profile:
            p = np.array([math.inf if r.p == "inf" else float(r.p) for r in profile])
            truth = 2.0 + effect(p)
            covered += bool(np.all([(r.low <= t <= r.high) for r, t in zip(profile, truth)]))
        print(f"{kind} {seed}: {answer.sentence[:90]}", file=sys.stderr, flush=True)
    return [kind, searches, wilson(separates, searches), wilson(tangled, searches), wilson(covered, searches),
            f"{np.mean(seconds):.1f}"]


def raced_widths(searches: int) -> list:
    """The mean width of p's difference band: each search without races, then raced with each
    configuration counted once (its folds averaged with the fold as a factor: the answer), with every
    run counted as a configuration, and with only each configuration's first run (the races ignored);
    each with the band as it is and as it was (16 hyperparameter proposals, worlds shared by a
    multinomial draw on their weights), and the search without races under another seed of the band
    (its Monte Carlo spread). Per row: the mean width, the ratio of means to the search without
    races (same band), and the geometric mean of the per-search ratios with its t 95 % interval."""
    import pandas as pd
    from scipy import stats

    import lpstudy.results.answers.search as search
    import lpstudy.results.answers.surrogate as surrogate
    from tests.search_planted import study
    from tests.test_search_configurations import raced

    counted_once = search.configuration_losses

    def every_run(runs, searched):
        return pd.DataFrame({"loss": runs["loss"].astype("float64"), "runs": 1, "folds": 1})

    def first_run(runs, searched):
        configs = counted_once(runs, searched)
        return configs.assign(loss=runs.loc[configs.index, "loss"].astype("float64"))

    def old_resampled(weights, rng):
        return rng.multinomial(surrogate.DRAWS, weights)

    bands = {"the band": {}, "the band before (16 proposals)": {"HYPER_DRAWS": 16, "resampled": old_resampled}}
    variants = {"without races": (False, counted_once, 0),
                "without races, another seed of the band": (False, counted_once, 1),
                "leaders raced on folds 1–3, each configuration once (the answer)": (True, counted_once, 0),
                "leaders raced, every run counted": (True, every_run, 0),
                "leaders raced, each configuration's first run only": (True, first_run, 0)}
    rows = []
    for band, patch in bands.items():
        widths: dict[str, list] = {name: [] for name in variants}
        for seed in range(searches):
            trials, _ = planted("no effect", 2000 + seed)
            for name, (with_races, reading, band_seed) in variants.items():
                saved = {k: getattr(surrogate, k) for k in (*patch, "SEED")}
                search.configuration_losses = reading
                for k, v in {**patch, "SEED": band_seed}.items():
                    setattr(surrogate, k, v)
                try:
                    answer = search.search_answer(study(raced(trials, seed=seed) if with_races else trials))
                finally:
                    search.configuration_losses = counted_once
                    for k, v in saved.items():
                        setattr(surrogate, k, v)
                assert answer.effect is not None, "a planted search with finished runs has an effect of p"
                widths[name].append(np.mean([d.high - d.low for d in answer.effect.differences]))
        base = np.array(widths["without races"])
        for name, w in widths.items():
            logs = np.log(np.array(w) / base)
            if name == "without races":
                per_search = "1 (itself)"
            else:
                half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
                per_search = (f"{math.exp(logs.mean()):.2f} [{math.exp(logs.mean() - half):.2f}, "
                              f"{math.exp(logs.mean() + half):.2f}], each {math.exp(logs.min()):.2f} to "
                              f"{math.exp(logs.max()):.2f}")
            rows.append([band, name, searches, f"{np.mean(w):.4f}", f"{np.mean(w) / base.mean():.2f}", per_search])
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=40, help="planted searches a kind")
    parser.add_argument("--raced", type=int, default=20, help="planted searches raced and not")
    parser.add_argument("--kinds", action=argparse.BooleanOptionalAction, default=True,
                        help="measure the kinds (--no-kinds: the raced table alone)")
    add_result_argument(parser, "search_band")
    args = parser.parse_args(argv)
    load = load_average()
    rows = [["planted search", "searches", "says 'separates'", "says p and lr cannot be separated",
             "band holds the whole true profile", "CPU s a search"]]
    rows += [one_kind(kind, args.searches) for kind in KINDS] if args.kinds else []
    races = [["band", "search", "searches", "mean width of p's difference band", "against without races",
              "per search: geometric mean ratio [95 %], range"]]
    races += raced_widths(args.raced)
    notes = (f"{N} configurations a search, noise {NOISE} nats a run, ROPE ±0.01 nats; rates with their Wilson 95 % "
             "intervals. A reviewer expects 'separates' at no effect (and with lr tied to p, where no search can tell) "
             "at most 5 %, and the band to hold the whole true profile in at least 95 % of the searches where the "
             "shape is smooth; a step narrower than the runs' spacing is said to be beyond the band's reach "
             "(effect.assumes), and its row measures how far.")
    write_result(args.result, None, rows, notes, title="A search's band about p on planted searches",
                 more_tables=[("The 6 leaders of each search raced on folds 1–3 (each fold shifts the loss; fresh noise), "
                               "against the same search without the races, read three ways, with the band as it is "
                               "(128 hyperparameter proposals, 20 resampled) and as it was (16 proposals, whose "
                               "weights' effective sample size was 1 to 5). The search without races under another "
                               "seed of the band measures the band's own Monte Carlo spread: a raced row within it "
                               "is no narrowing.",
                               races)], load_at_start=load)


if __name__ == "__main__":
    main()
