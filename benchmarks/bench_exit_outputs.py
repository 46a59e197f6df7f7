"""Exit outputs benchmark: test AUC and log-loss of binary exits with partial scores vs
calibrated output maps (issue 43, "Exit outputs that keep their quality").

Per data set: cbudget CEGB trained on the training split; exit rules calibrated on the
validation split at each epsilon, once with ``outputs="partial"`` (an exited input
outputs its scores so far) and once with ``outputs="calibrated"`` (per check, an
isotonic map of the partial score to the full model's probability); also maps fitted to
the validation labels instead (``exits.fit_outputs`` with the labels as the target).
Everything is reported on the test split. Goal (issue 43): test AUC within 0.005 of
the full model's at no more than 2/3 of its mean cost; log-loss too (here: test
log-loss within 0.005 of the full model's at no more than 2/3 of its cost). The
"tolerance" points calibrate binary exits with a probability tolerance
(``calibrate_exits(dvalid, epsilon, every=..., tolerance=t)``: an exit that moves the
probability by more than ``t`` counts against epsilon like a class change).

    CBUDGET_DATA_DIR=/work/shared/data PYTHONPATH=. python benchmarks/bench_exit_outputs.py \
        --output benchmarks/results/exit_outputs.md

Settings chosen on validation: every setting is also scored on the validation set,
cross-fitted (rules calibrated on one half, scored on the other, both ways); per goal
and family, the cheapest setting meeting the goal there, and its test figures with
their standard errors. ``--datasets lending_club``: Lending Club (5 % bad loans, a
costly bureau tier; its full model's parameters from the validation grid ``--tune``
prints); ``--seeds 0,1,...``: also the settings chosen on validation over several
splits. ``hold`` (held exits) is in the grid for Lending Club and MNIST 9 vs 4.

With ``--path``, also ``cbudget.cost_path`` with ``exit_epsilons`` on the synthetic set,
scored by log-loss and by AUC: the validation front and its points with exits. With
``--multiclass``, Letters' 26 classes: multi-class log-loss of partial scores vs the
per-check temperatures.
"""
import argparse
import os
import platform
import sys
import time
import warnings

import datasets
import numpy as np

import cbudget
from cbudget import exits
from cbudget.metrics import METRICS
from cbudget.sklearn import BUDGET_MARGIN

EPSILONS = (0.0, 0.0005, 0.001, 0.005, 0.02)
# the probability tolerance's grid (calibrate_exits(tolerance=...)), with its epsilons
TOLERANCES = (0.01, 0.02, 0.03, 0.05, 0.07, 0.1)
TOLERANCE_EPSILONS = (0.02, 0.05, 0.1, 0.2)
# checks after every 1, 10, 20 or 40 iterations (calibrate_exits(every=...))
EVERY = (1, 10, 20, 40)
GOAL_AUC, GOAL_LOGLOSS, GOAL_RATIO = 0.005, 0.005, 2 / 3
# how a setting is chosen on validation (--choose): "cheapest" meeting the goal there, or
# "budget", the best metric within GOAL_RATIO of the cost, with the estimators'
# cost_budget margin (BUDGET_MARGIN standard errors of the mean cost)
CHOICES = ("cheapest", "budget")
CHOICE = "cheapest"
BASE = {"objective": "binary:logistic", "algorithm": "cegb", "learning_rate": 0.1,
        "grow_policy": "lossguide", "num_leaves": 31, "min_data_in_leaf": 20,
        "reg_lambda": 1.0, "n_jobs": 2, "seed": 0}


def synthetic_costly(rows, seed=0):
    d = datasets.make_synthetic_costly(n_samples=rows, seed=seed)
    return d, f"synthetic costly (make_synthetic_costly seed {seed}, 32 features priced 1-200)"


def mnist_4_vs_9(rows, seed=0):
    d = datasets.load_mnist_multires(seed=seed)
    out = {}
    for part in ("train", "valid", "test"):
        keep = np.isin(d[f"y_{part}"], (4, 9))
        out[f"X_{part}"] = np.ascontiguousarray(d[f"X_{part}"][keep][:rows])
        out[f"y_{part}"] = (d[f"y_{part}"][keep][:rows] == 9).astype(np.int32)
    # the resolutions as cost tiers: a 4x4 pixel costs 1, 8x8 2, 16x16 4, 28x28 8
    costs = np.empty(d["feature_costs"].size)
    for tier, (_, cols) in enumerate(sorted(d["resolution_slices"].items())):
        costs[cols] = 2.0 ** tier
    out["feature_costs"] = costs
    return out, ("MNIST 9 vs 4, multi-resolution (4x4 / 8x8 / 16x16 / 28x28 pixels cost "
                 "1 / 2 / 4 / 8)")


def letters_halves(rows, seed=0):
    d = datasets.load_letters(seed=seed)
    out = {f"{k}_{p}": d[f"{k}_{p}"] for k in ("X", "y") for p in ("train", "valid", "test")}
    for p in ("train", "valid", "test"):
        out[f"y_{p}"] = (d[f"y_{p}"] >= 13).astype(np.int32)      # A-M vs N-Z
    # every feature costs 1 in the papers; priced 1..16 here so that costs differ
    out["feature_costs"] = np.arange(1.0, 17.0)
    return out, "Letters A-M vs N-Z (16 features priced 1, 2, ..., 16)"


def lending_club(rows, seed=0):
    d = datasets.load_lending_club(seed=seed)
    return d, ("Lending Club, bad loans (5 %) vs good: application and credit report 1 per "
               "feature, the extended bureau attributes a group of 20 plus 1 per feature")


DATA = {"synthetic_costly": (synthetic_costly, 1e-4, 200),
        "mnist_4_vs_9": (mnist_4_vs_9, 1e-3, 100),
        "letters_halves": (letters_halves, 3e-3, 200),
        "lending_club": (lending_club, 1e-4, 100)}
# per data set: parameters over BASE, and more settings of the exits' grids. Lending
# Club: the full model's parameters chosen on validation AUC (results file); its
# probabilities are near the 5 % base rate, so finer tolerances; hold (calibrate_exits
# hold=cost): the bureau attributes (first read 21), MNIST's 16x16 and 28x28 pixels (4) or
# its 28x28 pixels (8).
OPTIONS = {"lending_club": {"params": {"learning_rate": 0.03, "num_leaves": 7,
                                       "min_data_in_leaf": 50},
                            "tolerances": (0.002, 0.005) + TOLERANCES,
                            "holds": (None, 20.0)},
           "mnist_4_vs_9": {"holds": (None, 4.0, 8.0)}}


def label_maps(model, X, y, rules):
    """``rules`` with their maps refitted to the labels ``y`` of ``X`` (the
    validation inputs) instead of the full model's probability."""
    rules = exits.ExitRules(rules.rule, rules.iterations, rules.check_after, rules.lower,
                            rules.upper, dict(rules.calibration), hold=rules.hold)

    def stages():
        for k, c in enumerate(rules.check_after.tolist()):
            yield k, model.predict(X, output_margin=True, iteration_range=(0, c),
                                   early_exit=False).reshape(-1, 1)
    exits.fit_outputs(stages(), y.astype(np.float64), None, [rules])
    return rules


def quality(y, p):
    """AUC, log-loss and error of the probabilities ``p``."""
    return {m: METRICS[m](y, p, None) for m in ("auc", "logloss", "error")}


def point(model, X, y, rules, full_cost):
    """Test figures of ``rules``; "p", the probabilities, for the standard errors."""
    model.exit_rules = rules
    p = model.predict(X)
    cost = float(model.predict_cost(X).mean())
    return dict(quality(y, p), cost_ratio=cost / full_cost, p=p)


def valid_halves(y, seed=0):
    """The validation rows in two halves, stratified by the label, for cross-fitting."""
    halves = ([], [])
    rng = np.random.default_rng(seed)
    for cls in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == cls))
        halves[0].append(rows[: rows.size // 2])
        halves[1].append(rows[rows.size // 2:])
    return tuple(np.sort(np.concatenate(h)) for h in halves)


def make_rules(model, data, labels=False, **setting):
    """``model.calibrate_exits(data, **setting)``; ``labels``: with the maps refitted to
    ``data``'s labels (:func:`label_maps`)."""
    rules = model.calibrate_exits(data, **setting)
    return label_maps(model, data.data, data.label, rules) if labels else rules


def crossfit(model, d, full_cost, labels=False, **setting):
    """A setting's validation figures without scoring rules on the inputs they were fitted
    on: rules made (:func:`make_rules`) on one half of the validation set predict the
    other half, both ways, pooled. The settings are chosen on these figures."""
    X, y = d["X_valid"], d["y_valid"]
    p, cost = np.empty(y.size), np.empty(y.size)
    a, b = valid_halves(y)
    for fit, score in ((a, b), (b, a)):
        model.exit_rules = make_rules(model, cbudget.Dataset(X[fit], y[fit]), labels,
                                      **setting)
        p[score] = model.predict(X[score])
        cost[score] = model.predict_cost(X[score])
    return dict(quality(y, p), cost_ratio=cost.mean() / full_cost,
                cost_ratio_se=cost.std(ddof=1) / np.sqrt(cost.size) / full_cost)


def figures(point):
    """A point's figures for the progress log (without its probabilities)."""
    return point and {k: round(v, 4) for k, v in point.items() if k != "p"}


def scores(model, X, y, early_exit=None):
    """AUC, log-loss, error and mean cost of ``model`` (with its exit rules) on X."""
    return dict(quality(y, model.predict(X, early_exit=early_exit)),
                cost=float(model.predict_cost(X, early_exit=early_exit).mean()))


def run(name, rows, epsilons, seed=0):
    """One data set's exits (its split drawn with ``seed``; the model's seed stays 0)."""
    loader, lam, rounds = DATA[name]
    options = OPTIONS.get(name, {})
    d, title = loader(rows, seed)
    dtrain = cbudget.Dataset(d["X_train"], d["y_train"], feature_costs=d["feature_costs"],
                             cost_groups=d.get("cost_groups"),
                             group_costs=d.get("group_costs"))
    dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
    Xt, yt = d["X_test"], d["y_test"]
    params = dict(BASE, cost_tradeoff=lam, **options.get("params", {}))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cbudget.train(params, dtrain, rounds)
    train_s = time.perf_counter() - t0
    p_full = model.predict(Xt, early_exit=False)
    full = scores(model, Xt, yt, early_exit=False)      # p_full: for the standard errors
    full_cost = full["cost"]
    full_valid = scores(model, d["X_valid"], d["y_valid"], early_exit=False)
    cheap = cheap_baseline(d, params, rounds) if d.get("cost_groups") else None
    holds = options.get("holds", (None,))
    points = []
    for every, eps, hold in ((e, x, h) for e in EVERY for x in epsilons for h in holds):
        row = {"epsilon": eps, "every": every, "hold": hold, "valid": {}}
        for outputs in ("partial", "calibrated"):
            setting = {"epsilon": eps, "every": every, "outputs": outputs, "hold": hold}
            row["valid"][outputs] = crossfit(model, d, full_valid["cost"], **setting)
            t0 = time.perf_counter()
            rules = make_rules(model, dvalid, **setting)
            row[f"{outputs}_s"] = time.perf_counter() - t0
            row[outputs] = point(model, Xt, yt, rules, full_cost)
        # label maps: without hold only (they would need the held inputs left out)
        row["labels"] = None
        if hold is None:
            setting = {"epsilon": eps, "every": every}
            row["valid"]["labels"] = crossfit(model, d, full_valid["cost"], True, **setting)
            row["labels"] = point(model, Xt, yt, make_rules(model, dvalid, True, **setting),
                                  full_cost)
        points.append(row)
        print(name, every, eps, hold, {k: figures(row[k]) for k in FAMILIES[:3]},
              file=sys.stderr, flush=True)
    tolerance_points = []
    for every, eps, tol, hold in ((e, x, t, h) for e in EVERY for x in TOLERANCE_EPSILONS
                                  for t in options.get("tolerances", TOLERANCES)
                                  for h in holds):
        setting = {"epsilon": eps, "every": every, "tolerance": tol, "hold": hold}
        valid = crossfit(model, d, full_valid["cost"], **setting)
        t0 = time.perf_counter()
        rules = make_rules(model, dvalid, **setting)
        row = {"epsilon": eps, "every": every, "tolerance": tol, "hold": hold,
               "s": time.perf_counter() - t0,
               "disagreement": rules.calibration["disagreement"],
               "tolerance_family": point(model, Xt, yt, rules, full_cost),
               "valid": {"tolerance_family": valid}}
        tolerance_points.append(row)
        print(name, every, eps, tol, hold, figures(row["tolerance_family"]),
              file=sys.stderr, flush=True)
    return {"name": name, "title": title, "lambda": lam, "rounds": rounds, "params": params,
            "rows": {p: int(d[f"y_{p}"].size) for p in ("train", "valid", "test")},
            "positives": {p: int(d[f"y_{p}"].sum()) for p in ("train", "valid", "test")},
            "train_s": train_s, "full": full, "full_valid": full_valid, "points": points,
            "tolerance_points": tolerance_points, "model": model,
            "test": (yt, p_full), "holds": holds, "cheap": cheap, "seed": seed}


def cheap_baseline(d, params, rounds):
    """The full model's parameters trained on the features outside every cost group (no
    exits): what the cheap tiers alone give, on validation and test."""
    grouped = sorted({j for cols in d["cost_groups"].values() for j in cols})
    keep = np.setdiff1d(np.arange(d["X_train"].shape[1]), grouped)
    dtrain = cbudget.Dataset(np.ascontiguousarray(d["X_train"][:, keep]), d["y_train"],
                             feature_costs=d["feature_costs"][keep])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cbudget.train(params, dtrain, rounds)
    return {part: scores(model, np.ascontiguousarray(d[f"X_{part}"][:, keep]),
                         d[f"y_{part}"], early_exit=False) for part in ("valid", "test")}


FAMILIES = ("partial", "calibrated", "labels", "tolerance_family")


def goal(result, family, metric="auc", on="test", rule="cheapest"):
    """The cheapest point of ``family`` within GOAL_AUC of the full model's test AUC
    (``metric="logloss"``: within GOAL_LOGLOSS of its log-loss) at no more than
    GOAL_RATIO of its cost (None if none). ``on="valid"``: the same on the cross-fitted
    validation figures (:func:`crossfit`), so that the point is chosen without the test
    set; its test figures are then the claim. ``rule="budget"`` (validation only): the
    choice of the library's ``cost_budget`` instead: the best ``metric`` among the points
    whose cost ratio plus one standard error is within GOAL_RATIO (ties: the cheapest),
    whether or not its drop is within the goal."""
    points = result["tolerance_points" if family == "tolerance_family" else "points"]
    full = result["full" if on == "test" else "full_valid"]

    def figures(p):
        return p[family] if on == "test" else p["valid"].get(family)
    if rule == "budget":
        within = [p for p in points if figures(p) is not None and figures(p)["cost_ratio"]
                  + figures(p)["cost_ratio_se"] * BUDGET_MARGIN <= GOAL_RATIO]
        sign = -1.0 if metric == "auc" else 1.0
        return min(within, key=lambda p: (sign * figures(p)[metric],
                                          figures(p)["cost_ratio"])) if within else None
    ok = [p for p in points if figures(p) is not None
          and figures(p)["cost_ratio"] <= GOAL_RATIO
          and (full["auc"] - figures(p)["auc"] <= GOAL_AUC if metric == "auc"
               else figures(p)["logloss"] - full["logloss"] <= GOAL_LOGLOSS)]
    return min(ok, key=lambda p: figures(p)["cost_ratio"]) if ok else None


def hanley_mcneil(auc, n_pos, n_neg):
    """Standard error of an AUC (Hanley and McNeil, 1982)."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    return float(np.sqrt((auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc)
                          + (n_neg - 1) * (q2 - auc * auc)) / (n_pos * n_neg)))


def row_losses(y, p):
    """Per-row log-loss."""
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def reversals(y, p_full, p, far=0.4):
    """How many test inputs the exits move more than ``far`` from the full model's
    probability, and what they add to the mean log-loss (the later trees' reversals)."""
    moved = np.abs(p - p_full) > far
    return int(moved.sum()), float((row_losses(y, p) - row_losses(y, p_full))[moved].sum()
                                   / y.size)


def paired_errors(y, p_full, p, repeats=1000, seed=0):
    """Standard errors on the test set of the exits' AUC minus the full model's (paired
    bootstrap of the test rows) and of their log-loss difference (the mean of per-row
    differences)."""
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(repeats):
        rows = rng.integers(0, y.size, y.size)
        if 0 < y[rows].sum() < y.size:
            diffs.append(METRICS["auc"](y[rows], p[rows], None)
                         - METRICS["auc"](y[rows], p_full[rows], None))
    return float(np.std(diffs)), float(np.std(row_losses(y, p) - row_losses(y, p_full))
                                       / np.sqrt(y.size))


def setting(g):
    """A point's exit setting in words."""
    tol = f", tol {g['tolerance']:g}" if "tolerance" in g else ""
    hold = f", hold {g['hold']:g}" if g.get("hold") is not None else ""
    return f"every {g['every']}, eps {g['epsilon']:g}{tol}{hold}"


def goal_cell(result, family, metric):
    g = goal(result, family, metric)
    if g is None:
        return "no"
    return (f"yes: {setting(g)}, AUC {g[family]['auc']:.4f}, log-loss "
            f"{g[family]['logloss']:.4f}, cost x{g[family]['cost_ratio']:.3f}")


def chosen(result, family, metric):
    """The setting of ``family`` chosen on validation for ``metric``'s goal (by
    ``CHOICE``, the rule of :func:`goal`): (point, its cross-fitted validation figures,
    its test figures, whether the goal holds on test), or None."""
    g = goal(result, family, metric, on="valid", rule=CHOICE)
    if g is None:
        return None
    f, t = result["full"], g[family]
    met = (f["auc"] - t["auc"] <= GOAL_AUC if metric == "auc"
           else t["logloss"] - f["logloss"] <= GOAL_LOGLOSS) and t["cost_ratio"] <= GOAL_RATIO
    return g, g["valid"][family], t, met


def chosen_rows(result):
    """Table rows: per goal and family, the setting chosen on validation and its test
    figures with their standard errors."""
    f, fv = result["full"], result["full_valid"]
    y, p_full = result["test"]
    lines = []
    for metric in ("auc", "logloss"):
        for family in FAMILIES:
            c = chosen(result, family, metric)
            if c is None:
                lines.append(f"| {metric} | {family} | none on validation | | | | | |")
                continue
            g, v, t, met = c
            se_auc, se_loss = paired_errors(y, p_full, t["p"])
            lines.append(
                f"| {metric} | {family} | {setting(g)} | x{v['cost_ratio']:.3f}, AUC "
                f"{v['auc'] - fv['auc']:+.4f}, log-loss {v['logloss'] - fv['logloss']:+.4f} | "
                f"x{t['cost_ratio']:.3f} | {t['auc']:.4f} ({t['auc'] - f['auc']:+.4f} "
                f"± {se_auc:.4f}) | {t['logloss']:.4f} ({t['logloss'] - f['logloss']:+.4f} "
                f"± {se_loss:.4f}) | {'yes' if met else 'no'} |")
    return lines


def seeds_section(runs):
    """Repeated splits of one data set: per goal and family, the setting chosen on
    validation in each split and its test figures, and their means over the splits."""
    seeds = [r["seed"] for r in runs]
    lines = ["", f"## Repeated splits: {runs[0]['name']}, split seeds "
             + ", ".join(map(str, seeds)), "",
             "Each split (the loader's seed; the model's seed 0) trains its full model "
             "and chooses each family's setting on its cross-fitted validation figures "
             "as above; test AUC and log-loss of the chosen exits minus the full "
             "model's. Mean ± standard error over the splits (their spread, divided by "
             "the square root of their number); 'met' counts the splits where the goal "
             "holds on test; 'none' those where no setting meets it on validation.", "",
             "| goal | family | full AUC (mean) | test cost ratio | test AUC - full | "
             "test log-loss - full | met | none | per split with a choice (cost ratio, AUC - "
             "full) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]

    def mean_se(values):
        v = np.asarray(values)
        se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
        return f"{v.mean():+.4f} ± {se:.4f}"
    for metric in ("auc", "logloss"):
        for family in FAMILIES:
            picks = [(r, chosen(r, family, metric)) for r in runs]
            got = [(r, c) for r, c in picks if c is not None]
            ratios = [c[2]["cost_ratio"] for _, c in got]
            d_auc = [c[2]["auc"] - r["full"]["auc"] for r, c in got]
            d_loss = [c[2]["logloss"] - r["full"]["logloss"] for r, c in got]
            each = "; ".join(f"x{a:.3f}, {b:+.4f}" for a, b in zip(ratios, d_auc,
                                                                   strict=True))
            lines.append(
                f"| {metric} | {family} | "
                f"{np.mean([r['full']['auc'] for r in runs]):.4f} | "
                + (f"{np.mean(ratios):.3f} | {mean_se(d_auc)} | {mean_se(d_loss)} | "
                   if got else "| | | ")
                + f"{sum(c[3] for _, c in got)} | {len(runs) - len(got)} | {each} |")
    if runs[0]["cheap"]:
        cheap = [(r["cheap"]["test"], r["full"]) for r in runs]
        lines += ["", "The cheap tiers alone (the full model's parameters on the features "
                  "outside the cost groups, no exits), test minus the full model's: AUC "
                  + mean_se([c["auc"] - f["auc"] for c, f in cheap]) + ", log-loss "
                  + mean_se([c["logloss"] - f["logloss"] for c, f in cheap])
                  + f", cost ratio {np.mean([c['cost'] / f['cost'] for c, f in cheap]):.3f}."]
    return "\n".join(lines) + "\n"


def hold_cell(point):
    return "-" if point["hold"] is None else f"{point['hold']:g}"


def describe(point, full):
    """A tolerance point in words: its setting, cost ratio, log-loss and AUC."""
    t = point["tolerance_family"]
    return (f"{setting(point)}: cost x{t['cost_ratio']:.3f}, log-loss {t['logloss']:.4f} "
            f"({t['logloss'] - full['logloss']:+.4f}), AUC {t['auc']:.4f}")


def render(results, command, timings):
    lines = ["# Exit outputs: partial scores, calibrated maps, a probability tolerance "
             "(issue 43)", "",
             "Command:", "", "```", command, "```", "",
             f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy "
             f"{np.__version__}, cbudget from {cbudget.__file__}.", "",
             "Families: 'partial' (partial scores), 'calibrated' (maps to the full "
             "model's probability, the default), 'labels' (maps to the validation "
             "labels), all with the class rule; 'tolerance' (maps, calibrated with a "
             "probability tolerance)."]
    for metric, what, within in (("auc", "AUC", GOAL_AUC), ("logloss", "log-loss",
                                                           GOAL_LOGLOSS)):
        lines += ["", f"Goal: test {what} within {within} of the full model's at no more "
                  "than 2/3 of its mean cost (cost ratio <= 0.667); the cheapest setting "
                  "meeting it.", "",
                  "| data set | full AUC | full log-loss | partial | calibrated | labels | "
                  "tolerance |", "|---|---:|---:|---|---|---|---|"]
        lines += [f"| {r['name']} | {r['full']['auc']:.4f} | {r['full']['logloss']:.4f} | "
                  + " | ".join(goal_cell(r, fam, metric) for fam in FAMILIES) + " |"
                  for r in results]
    rule = ("the cheapest setting of each family that meets it" if CHOICE == "cheapest"
            else "the setting of each family with the best validation metric (AUC, "
            "log-loss) among those whose cost ratio plus one standard error is within "
            "2/3, as the estimators' cost_budget chooses (`--choose budget`)")
    lines += ["", f"Chosen on validation: per goal, {rule}, "
              "on the cross-fitted validation figures (rules calibrated on "
              "one half of the validation set, scored on the other, both ways; cost ratio, "
              "AUC and log-loss as differences from the full model's on validation), then "
              "calibrated on the whole validation set; its test figures, differences from "
              "the full model's ± their test standard errors (AUC: paired bootstrap of "
              "the test rows, 1,000 draws; log-loss: of the mean per-row difference), "
              "and whether the goal holds on test.", "",
              "| data set | goal | family | setting | validation (cross-fitted) | test cost "
              "ratio | test AUC | test log-loss | goal met on test |",
              "|---|---|---|---|---|---:|---|---|---|"]
    lines += [f"| {r['name']} " + row for r in results for row in chosen_rows(r)]
    for r in results:
        f, pos, n = r["full"], r["positives"]["test"], r["rows"]["test"]
        lines += ["", f"## {r['title']}", "",
                  f"CEGB cost_tradeoff {r['lambda']:g}, {r['rounds']} rounds, learning rate "
                  f"{r['params']['learning_rate']:g}, {r['params']['num_leaves']} leaves; "
                  f"rows {r['rows']['train']:,} train / {r['rows']['valid']:,} valid / "
                  f"{n:,} test (positives {r['positives']['train']:,} / "
                  f"{r['positives']['valid']:,} / {pos:,}); trained in {r['train_s']:.1f} s.",
                  "",
                  f"Full model on test: AUC {f['auc']:.4f} (standard error "
                  f"{hanley_mcneil(f['auc'], pos, n - pos):.4f}, Hanley-McNeil), log-loss "
                  f"{f['logloss']:.4f}, error {f['error']:.4f}, mean cost {f['cost']:.2f}; "
                  f"on validation: AUC {r['full_valid']['auc']:.4f}, log-loss "
                  f"{r['full_valid']['logloss']:.4f}, mean cost {r['full_valid']['cost']:.2f}.",
                  ""]
        if r["cheap"]:
            v, t = r["cheap"]["valid"], r["cheap"]["test"]
            lines += ["The same parameters trained on the features outside the cost groups "
                      f"only (no exits): test AUC {t['auc']:.4f}, log-loss {t['logloss']:.4f}, "
                      f"mean cost {t['cost']:.2f}; validation AUC {v['auc']:.4f}, log-loss "
                      f"{v['logloss']:.4f}.", ""]
        lines += ["Exits (test): cost ratio = mean cost with exits / full model's (the "
                  "same for the three outputs); 'calibrated' maps to the full model's "
                  "probability (the default), 'labels' to the validation labels.", "",
                  "| every | epsilon | hold | cost ratio | AUC partial | AUC calibrated | AUC "
                  "labels | log-loss partial | log-loss calibrated | log-loss labels | error "
                  "partial | error calibrated | calibrate s (partial / calibrated) |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for p in r["points"]:
            a, c, b = p["partial"], p["calibrated"], p["labels"]
            b_auc, b_loss = (f"{b['auc']:.4f}", f"{b['logloss']:.4f}") if b else ("-", "-")
            lines.append(f"| {p['every']} | {p['epsilon']:g} | {hold_cell(p)} | "
                         f"{c['cost_ratio']:.3f} | {a['auc']:.4f} | {c['auc']:.4f} | {b_auc} | "
                         f"{a['logloss']:.4f} | {c['logloss']:.4f} | {b_loss} | "
                         f"{a['error']:.4f} | {c['error']:.4f} | {p['partial_s']:.2f} / "
                         f"{p['calibrated_s']:.2f} |")
        lines += ["", "Exits calibrated with a probability tolerance (maps; test): "
                  "'disagreement' is the validation fraction whose class or probability "
                  "(beyond the tolerance) differs from the full model's.", "",
                  "| every | epsilon | tolerance | hold | cost ratio | AUC | log-loss | "
                  "log-loss - full | moved > 0.4 (their log-loss) | error | validation "
                  "disagreement | calibrate s |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for p in r["tolerance_points"]:
            t = p["tolerance_family"]
            moved, nats = reversals(*r["test"], t["p"])
            lines.append(f"| {p['every']} | {p['epsilon']:g} | {p['tolerance']:g} | "
                         f"{hold_cell(p)} | "
                         f"{t['cost_ratio']:.3f} | {t['auc']:.4f} | {t['logloss']:.4f} | "
                         f"{t['logloss'] - f['logloss']:+.4f} | {moved} ({nats:+.4f}) | "
                         f"{t['error']:.4f} | {p['disagreement']:.4f} | {p['s']:.2f} |")
        near = [p for p in r["tolerance_points"]
                if p["tolerance_family"]["logloss"] - f["logloss"] <= GOAL_LOGLOSS]
        cheap = [p for p in r["tolerance_points"]
                 if p["tolerance_family"]["cost_ratio"] <= GOAL_RATIO]
        lines += ["", "Cheapest tolerance setting with test log-loss within "
                  f"{GOAL_LOGLOSS} (any cost): "
                  + (describe(min(near, key=lambda p: p["tolerance_family"]["cost_ratio"]), f)
                     if near else "none") + ". Lowest test log-loss at a cost ratio <= "
                  "0.667: " + (describe(min(cheap, key=lambda p: p["tolerance_family"]
                                            ["logloss"]), f) if cheap else "none") + "."]
    if timings:
        lines += ["", "## Prediction time", "",
                  "predict (probabilities) with exit rules on 100,000 rows (test rows "
                  "tiled), best of 5, 2 threads:", "",
                  "| data set | no exits s | exits, partial s | exits, calibrated maps s |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {name} | {a:.3f} | {b:.3f} | {c:.3f} |" for name, a, b, c in timings]
    return "\n".join(lines) + "\n"


def time_predict(model, X, rules_partial, rules_calibrated, repeat=5):
    out = []
    for rules, early in ((None, False), (rules_partial, None), (rules_calibrated, None)):
        model.exit_rules = rules
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            model.predict(X, early_exit=early)
            best = min(best, time.perf_counter() - t0)
        out.append(best)
    return out


def multiclass_section():
    """Letters, 26 classes: test mlogloss / merror with partial vs calibrated outputs."""
    d = datasets.load_letters()
    costs = np.arange(1.0, 17.0)
    dtrain = cbudget.Dataset(d["X_train"], d["y_train"], feature_costs=costs)
    dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
    Xt, yt = d["X_test"], d["y_test"]
    params = {"objective": "multi:softprob", "num_class": 26, "algorithm": "cegb",
              "cost_tradeoff": 3e-3, "learning_rate": 0.1, "num_leaves": 31, "n_jobs": 2,
              "seed": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cbudget.train(params, dtrain, 100)
    p_full = model.predict(Xt, early_exit=False)
    full_cost = float(model.predict_cost(Xt, early_exit=False).mean())
    lines = ["", "## Multiclass: Letters, 26 classes", "",
             "CEGB cost_tradeoff 3e-3, 100 rounds, features priced 1..16; full model on "
             f"test: mlogloss {METRICS['mlogloss'](yt, p_full, None):.4f}, merror "
             f"{METRICS['merror'](yt, p_full, None):.4f}. Calibrated: per check a "
             "temperature of the class scores (range of the fitted scales in the last "
             "column).", "",
             "| every | epsilon | cost ratio | mlogloss partial | mlogloss calibrated | "
             "merror partial | merror calibrated | scales min / median / max |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for every, eps in ((e, x) for e in (1, 10) for x in (0.0, 0.005, 0.02)):
        row = {}
        for outputs in ("partial", "calibrated"):
            rules = model.calibrate_exits(dvalid, eps, every=every, outputs=outputs)
            p = model.predict(Xt)
            row[outputs] = (METRICS["mlogloss"](yt, p, None), METRICS["merror"](yt, p, None))
        scales = [m for m in rules.outputs if m is not None]
        ratio = float(model.predict_cost(Xt).mean()) / full_cost
        spread = " / ".join(f"{v:.2f}" for v in np.percentile(scales, [0, 50, 100])) \
            if scales else ""
        lines.append(f"| {every} | {eps:g} | {ratio:.3f} | {row['partial'][0]:.4f} | "
                     f"{row['calibrated'][0]:.4f} | {row['partial'][1]:.4f} | "
                     f"{row['calibrated'][1]:.4f} | {spread} |")
    return "\n".join(lines) + "\n"


def path_section(rows=30_000):
    """The validation front of ``cbudget.cost_path`` with exits, by log-loss and AUC."""
    d, title = synthetic_costly(rows)
    dtrain = cbudget.Dataset(d["X_train"], d["y_train"], feature_costs=d["feature_costs"])
    dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
    params = {k: v for k, v in BASE.items() if k not in ("grow_policy", "min_data_in_leaf",
                                                          "reg_lambda")}
    lines = ["", "## cost_path with exits", "",
             f"{title}, {rows:,} rows; `cbudget.cost_path(params, dtrain, dvalid, "
             "num_boost_round=100, lambdas=[1e-3, 3e-4, 1e-4, 0], metric=..., "
             "exit_epsilons=[0, 0.001, 0.005, 0.02], exit_every=10)`; validation front:", ""]
    for metric in ("logloss", "auc"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = cbudget.cost_path(params, dtrain, dvalid, num_boost_round=100,
                                     lambdas=[1e-3, 3e-4, 1e-4, 0.0], metric=metric,
                                     exit_epsilons=[0.0, 0.001, 0.005, 0.02], exit_every=10)
        front = np.flatnonzero(path.pareto)
        exited = [i for i in front if not np.isnan(path.epsilons[i])]
        lines += [f"- {metric}: {len(front)} front points, {len(exited)} with exits: "
                  + "; ".join(f"lambda {path.lambdas[i]:g} eps {path.epsilons[i]:g} cost "
                              f"{path.costs[i]:.1f} {metric} {path.scores[i]:.4f}"
                              for i in front)]
    return "\n".join(lines) + "\n"


def tune_section(name, rows):
    """The grid on which a data set's full model was chosen (``OPTIONS``, ``DATA``):
    validation AUC, log-loss and mean cost per trade-off, tree size, learning rate and
    number of rounds (the test set is not read)."""
    d, title = DATA[name][0](rows)
    dtrain = cbudget.Dataset(d["X_train"], d["y_train"], feature_costs=d["feature_costs"],
                             cost_groups=d.get("cost_groups"),
                             group_costs=d.get("group_costs"))
    Xv, yv = d["X_valid"], d["y_valid"]
    lines = ["", f"## Full model's parameters ({title}): validation", "",
             "| cost_tradeoff | leaves / min_data_in_leaf | learning rate | rounds | AUC | "
             "log-loss | mean cost |", "|---:|---|---:|---:|---:|---:|---:|"]
    for lam, (leaves, min_data), lr in ((a, b, c) for a in (0.0, 1e-4, 1e-3, 3e-3, 1e-2)
                                        for b in ((31, 20), (7, 50)) for c in (0.1, 0.03)):
        params = dict(BASE, cost_tradeoff=lam, num_leaves=leaves, min_data_in_leaf=min_data,
                      learning_rate=lr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cbudget.train(params, dtrain, 300)
        for r in (50, 100, 200, 300):
            p = model.predict(Xv, iteration_range=(0, r), early_exit=False)
            cost = model.predict_cost(Xv, iteration_range=(0, r), early_exit=False).mean()
            lines.append(f"| {lam:g} | {leaves} / {min_data} | {lr:g} | {r} | "
                         f"{METRICS['auc'](yv, p, None):.4f} | "
                         f"{METRICS['logloss'](yv, p, None):.4f} | {cost:.2f} |")
    return "\n".join(lines) + "\n"


def main():
    global CHOICE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="synthetic_costly,mnist_4_vs_9,letters_halves")
    parser.add_argument("--rows", type=int, default=60_000,
                        help="synthetic: total rows; the others: rows per split at most")
    parser.add_argument("--output", default=None)
    parser.add_argument("--multiclass", action="store_true",
                        help="also Letters' 26 classes: partial vs temperature outputs")
    parser.add_argument("--path", action="store_true",
                        help="also the cost path's front with exits (synthetic set)")
    parser.add_argument("--tune", action="store_true",
                        help="also the validation grid of the full models' parameters")
    parser.add_argument("--seeds", default="0",
                        help="split seeds: the tables use the first; with more, a summary "
                        "of the settings chosen on validation over all of them")
    parser.add_argument("--choose", choices=CHOICES, default=CHOICE,
                        help="how the settings are chosen on validation: the cheapest "
                        "meeting the goal there, or the best metric within its cost "
                        "(the estimators' cost_budget, one-SE cost margin)")
    args = parser.parse_args()
    CHOICE = args.choose
    seeds = [int(x) for x in args.seeds.split(",")]
    env = " ".join(f"{k}={os.environ[k]}" for k in ("CBUDGET_DATA_DIR", "PYTHONPATH")
                   if k in os.environ)
    command = f"{env} python " + " ".join(sys.argv)
    results, timings = [], []
    for name in args.datasets.split(","):
        r = run(name, args.rows, EPSILONS, seeds[0])
        results.append(r)
        d, _ = DATA[name][0](args.rows, seeds[0])
        X = np.resize(d["X_test"], (100_000, d["X_test"].shape[1]))
        model = r["model"]
        dvalid = cbudget.Dataset(d["X_valid"], d["y_valid"])
        rp = model.calibrate_exits(dvalid, 0.005, outputs="partial")
        rc = model.calibrate_exits(dvalid, 0.005)
        timings.append((name, *time_predict(model, X, rp, rc)))
    text = render(results, command, timings)
    if len(seeds) > 1:
        for r in results:
            text += seeds_section([r] + [run(r["name"], args.rows, EPSILONS, seed)
                                         for seed in seeds[1:]])
    if args.tune:
        text += "".join(tune_section(name, args.rows) for name in args.datasets.split(","))
    if args.multiclass:
        text += multiclass_section()
    if args.path:
        text += path_section()
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
