"""Accuracy/cost fronts on real data: cbudget against LightGBM's CEGB and CatBoost (issue 43).

On Letters (26 classes, every feature costs 1), multi-resolution MNIST (10 classes; a
pixel of the 4x4, 8x8, 16x16 and 28x28 images costs 1, 2, 4 and 8) and the synthetic
costly set (binary, costs 1-200): the accuracy (binary: also AUC) vs mean test cost per
input of cbudget (CEGB over ``cbudget.cost_path``, with and without exits; two-stage
cascades with exits at every 10th iteration), LightGBM's CEGB and CatBoost's
``per_object_feature_penalties`` (Lossguide), with the same costs in all three. Each
system's front is the models on its validation front, reported on test. The issue's
criteria: cbudget never more than 0.2 point below either baseline at any cost, and
cbudget points inside the gaps of their fronts. Protocol: benchmarks/README.md.
"""
import sys

import bench_cascade as bc
import harness as h
import numpy as np

DATASETS = h.COST_DATASETS
METHODS = ("cegb", "two_stage", "cost_stages", "lightgbm", "catboost")
LIBRARY = {"cegb": "cbudget", "two_stage": "cbudget", "cost_stages": "cbudget",
           "lightgbm": "lightgbm", "catboost": "catboost"}
IDENT = ("dataset", "method", "rounds")
ROWS, SYNTHETIC_ROWS = ("train", "valid", "test"), h.SYNTHETIC_ROWS
TIME_BUDGET = 0
# Multi-resolution MNIST: cost of one pixel per tier (feature names r4_*, ..., r28_*): a
# finer pixel costs more; all 1,120 together cost 7,440.
TIER_COSTS = {"r4": 1.0, "r8": 2.0, "r16": 4.0, "r28": 8.0}
# The full run (rows subsampled to keep each data set near 20 minutes on 2 busy cores:
# README.md). The grids are bench_cascade's: the CEGB path's points and exit epsilons;
# the two-stage grid (stage-1 trade-off as a fraction of lambda_max, stage 2 as a fraction
# of stage 1, half the rounds each, exits checked every `stage_every` iterations);
# LightGBM's cegb_tradeoff = 2 lambda_max * `lgbm_fractions` and 0; CatBoost's
# penalties_coefficient grid.
FULL = {"rounds": {"letters": 200, "mnist_multires": 40, "synthetic_costly": 200},
        "n_points": {"letters": 10, "mnist_multires": 8, "synthetic_costly": 10},
        "epsilons": (0.0, 0.01, 0.05), "path_cascades": 4,
        "stage1": {"letters": (0.3, 0.1, 0.03), "mnist_multires": (0.3, 0.1),
                   "synthetic_costly": (0.3, 0.1, 0.03)},
        "stage2": {"letters": (0.3, 0.1, 0.03), "mnist_multires": (0.3, 0.1),
                   "synthetic_costly": (0.3, 0.1, 0.03)},
        "stage_every": 10,
        "lgbm_fractions": {
            "letters": (1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.01, 3e-3, 1e-3, 1e-4),
            "mnist_multires": (1.0, 0.1, 0.03, 0.01, 3e-3, 1e-3),
            "synthetic_costly": (1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.01, 3e-3, 1e-3,
                                 1e-4)},
        # CatBoost's penalty has its own scale: each grid spans its data set's range from
        # all features to the constant model (found with 6- to 30-round probes); on MNIST
        # CatBoost takes 2-4 s per round here (1,120 features), hence a short grid
        "cat_coefs": {
            "letters": (0.0, 1e-5, 1e-4, 2e-4, 4e-4, 7e-4, 1e-3, 1.5e-3, 2e-3, 3e-3),
            "mnist_multires": (0.0, 3e-4, 1e-3, 3e-3, 6e-3),
            "synthetic_costly": (0.0, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 2e-4, 4e-4, 7e-4,
                                 1e-3)},
        "n_rows": 200_000, "train_rows": {"mnist_multires": 10_000},
        "valid_rows": {"mnist_multires": 5_000}, "test_rows": {}}
QUICK = {"rounds": 10, "n_points": 4, "epsilons": (0.0, 0.05), "path_cascades": 2,
         "stage1": (0.1,),
         "stage2": (0.1,), "lgbm_fractions": (0.1, 0.01), "cat_coefs": (0.0, 1e-4),
         "train_rows": 1000, "valid_rows": 500, "test_rows": 1000, "n_rows": 10_000}
SETTINGS = ("rounds", "n_points", "epsilons", "path_cascades", "stage1", "stage2",
            "stage_every", "lgbm_fractions", "cat_coefs")
SHORTFALL = 0.002   # the criterion: never more than 0.2 point below a baseline
SYSTEMS = {"cbudget": bc.CBUDGET, "LightGBM CEGB": ("lightgbm",),
           "CatBoost": ("catboost",)}
BASELINES = ("LightGBM CEGB", "CatBoost")


def tier_costs(names):
    """Per-pixel costs of multi-resolution MNIST from the feature names (``TIER_COSTS``)."""
    return np.array([TIER_COSTS[n.split("_", 1)[0]] for n in names], dtype=np.float64)


# ------------------------------------------------------------------------- plan
def rows_setting(args, part, name):
    """``--<part>-rows`` if given, else the script's setting for data set ``name``."""
    given = getattr(args, f"{part}_rows", None)
    value = args.grid.get(f"{part}_rows")
    return given or (value.get(name) if isinstance(value, dict) else value)


def has_cost_stages():
    """Whether the cbudget imported trains in cost stages (``params["cost_stages"]``)."""
    import cbudget
    return hasattr(cbudget.Booster, "cost_stages")


def plan(args, names):
    methods = h.parse_choices(args.methods, METHODS, "method")
    if "cost_stages" in methods and not has_cost_stages():
        h.log("this cbudget has no cost_stages: method cost_stages skipped")
        methods.remove("cost_stages")
    jobs, grids = [], {}
    for d in names:
        grid = {k: h.setting(args, k, d) for k in SETTINGS}
        rows = {f"{p}_rows": rows_setting(args, p, d) for p in ROWS}
        rows["n_rows"] = rows_setting(args, "n", d) if d == "synthetic_costly" else None
        grids[d] = dict(grid, **rows)
        jobs += [(d, f"{d} / {m}", dict(grids[d], dataset=d, method=m, threads=args.threads))
                 for m in methods]
    return jobs, {"grids": grids, "threads": args.threads, "tier_costs": TIER_COSTS}


# ------------------------------------------------------------------------ child
def run_point(spec):
    """One method's models on one data set, each scored on validation and test."""
    data, result = h.start_child(spec, LIBRARY[spec["method"]], keep_valid=True)
    if spec["dataset"] == "mnist_multires":
        data["feature_costs"] = tier_costs(data["feature_names"])
    with h.Timer() as t:
        points = bc.RUNNERS[spec["method"]](spec, data)
    return dict(result, method=spec["method"], rounds=spec["rounds"], points=points,
                full_cost=float(data["feature_costs"].sum()), **t.fields(),
                other_cores_during_train=t.other)


# ----------------------------------------------------------------------- fronts
def validation_front(points, score):
    """The points on the validation front (validation mean cost, validation ``score``)."""
    return h.pareto(points, cost_key="valid_mean_cost", score_key="valid_" + score)


def best_at(points, cost, score):
    """The point of the best test ``score`` at test cost <= ``cost``, else None."""
    within = [p for p in points if p["mean_cost"] <= cost * (1 + 1e-12) + 1e-12]
    return max(within, key=lambda p: (p[score], -p["mean_cost"])) if within else None


def shortfalls(cb, reference, score):
    """Per point of the ``reference`` front: (point, cbudget's best at no more cost or
    None, difference or None)."""
    out = []
    for g in reference:
        c = best_at(cb, g["mean_cost"], score)
        out.append((g, c, c[score] - g[score] if c else None))
    return out


def worst(rows):
    """The row of the largest shortfall (no cbudget point that cheap counts as worst)."""
    return min(rows, key=lambda r: -np.inf if r[2] is None else r[2]) if rows else None


def in_gaps(cb, reference, score):
    """cbudget points whose test cost lies strictly between two consecutive ``reference``
    points' costs with a higher score than the cheaper one's: [(lower, upper, points)]."""
    out = []
    for lo, hi in zip(reference, reference[1:]):
        inside = [p for p in cb if lo["mean_cost"] < p["mean_cost"] < hi["mean_cost"]
                  and p[score] > lo[score]]
        out.append((lo, hi, sorted(inside, key=lambda p: p["mean_cost"])))
    return out


def system_points(ok):
    """``{system: [points]}`` (each point with its family) of one data set's results."""
    by = {}
    for r in ok:
        for p in r.get("points", []):
            system = next(s for s, fams in SYSTEMS.items() if p["family"] in fams)
            by.setdefault(system, []).append(p)
    return by


def fronts(by, score, selection):
    """``{system: front}``: ``selection`` "validation" (the models on the validation front,
    their test figures) or "test" (every model, the test front)."""
    if selection == "validation":
        return {s: sorted(validation_front(pts, score), key=lambda p: p["mean_cost"])
                for s, pts in by.items()}
    return {s: h.pareto(pts, score_key=score) for s, pts in by.items()}


# ------------------------------------------------------------------------ report
def name(p):
    return f"{bc.FAMILIES.get(p['family'], p['family'])} {bc.label(p)}"


def at(p, score):
    return f"{p[score]:.4f} @ {p['mean_cost']:,.2f}"


def criteria_row(dataset, score, selection, base, front_cb, front_base):
    rows = shortfalls(front_cb, h.pareto(front_base, score_key=score), score)
    w = worst(rows)
    gaps = in_gaps(front_cb, h.pareto(front_base, score_key=score), score)
    filled = sum(bool(g[2]) for g in gaps)
    if w is None:
        shortfall, where, ok = "n/a", "", ""
    elif w[1] is None:
        shortfall, where, ok = "no point this cheap", at(w[0], score), "**no**"
    else:
        shortfall, where = f"{w[2] * 100:+.2f}", f"{at(w[0], score)} vs {at(w[1], score)}"
        ok = "yes" if w[2] >= -SHORTFALL - 1e-12 else "**no**"
    return [h.title(dataset, short=True), score, selection, base, shortfall, where, ok,
            f"{sum(len(g[2]) for g in gaps)} in {filled} of {len(gaps)}"]


def stages_check(points):
    """Lines comparing the cascades trained with ``cost_stages`` to the manual
    continuation, matched by (trade-offs, epsilon): the largest differences."""
    def key(p):
        return (p["family"].split("_exit")[0], round(p["lambda1"], 12),
                round(p["lambda2"], 12), p.get("epsilon"))
    manual = {key(p)[1:]: p for p in points if p["family"].startswith("two_stage")}
    pairs = [(manual[key(p)[1:]], p) for p in points
             if p["family"].startswith("cost_stages") and key(p)[1:] in manual]
    if not pairs:
        return []
    diff = {k: max((abs(a[k] - b[k]) for a, b in pairs if k in a and k in b), default=None)
            for k in ("accuracy", "valid_accuracy", "mean_cost", "valid_mean_cost",
                      "mean_raw_test")}
    return [f"**cost_stages against the manual continuation** ({len(pairs)} matched models, "
            "with and without exits): largest differences " + ", ".join(
                f"{k} {h.fmt(v, '.3g')}" for k, v in diff.items()) + ".", ""]


def render(doc):
    summary, lines = [], []
    for dataset, results in doc["results"].items():
        ok = h.ok_results(results)
        by = system_points(ok)
        if "cbudget" not in by:
            continue
        first = ok[0]
        scores = ["accuracy"] + (["auc"] if first["n_classes"] == 2 else [])
        lines += [f"### {h.title(dataset)}: {h.sizes_text(first)}, {first['rounds']} rounds, "
                  f"all features together cost {first['full_cost']:,.0f}", ""]
        lines += ["Models per system: " + ", ".join(f"{s} {len(p)}" for s, p in by.items())
                  + ".", ""]
        for score in scores:
            for selection in ("validation", "test"):
                fr = fronts(by, score, selection)
                for base in BASELINES:
                    if base in fr:
                        summary.append(criteria_row(dataset, score, selection, base,
                                                    fr["cbudget"], fr[base]))
            fr = fronts(by, score, "validation")
            lines += [f"**{score}: the fronts** (models on each system's validation front; "
                      "test figures)", ""]
            lines += h.points_table(
                [dict(p, system=s) for s, pts in fr.items() for p in pts],
                [("system", lambda p: p["system"]), ("model", name),
                 ("valid cost", h.col("valid_mean_cost", ",.2f")),
                 (f"valid {score}", h.col("valid_" + score, ".4f")),
                 ("test cost", h.col("mean_cost", ",.2f")),
                 (f"test {score}", h.col(score, ".4f"))], "llrrrr") + [""]
            for base in BASELINES:
                if base not in fr:
                    continue
                ref = h.pareto(fr[base], score_key=score)
                lines += [f"**{score}: cbudget against {base}** at each of its front points "
                          "(test Pareto points of its validation-chosen models):", ""]
                lines += h.comparison_table(fr["cbudget"], ref,
                                            (base, "cbudget", "cost", score), name,
                                            score_key=score) + [""]
                gaps = [g for g in in_gaps(fr["cbudget"], ref, score) if g[2]]
                lines += [f"cbudget points inside the gaps of {base}'s front: "
                          + ("; ".join(f"between {at(lo, score)} and {at(hi, score)}: "
                                       + ", ".join(f"{at(p, score)} ({name(p)})" for p in pts)
                                       for lo, hi, pts in gaps) or "none") + ".", ""]
        fam = {}
        for pts in by.values():
            for p in pts:
                fam.setdefault(p["family"], []).append(p)
        lines += ["<details><summary>Test fronts per family (every model, Pareto on test"
                  + (", mean cost of the hard and easy test inputs" if "mean_cost_borderline"
                     in by["cbudget"][0] else "") + ")</summary>", ""]
        columns = ([("family", lambda p: bc.FAMILIES.get(p["family"], p["family"])),
                    ("model", bc.label), ("test cost", h.col("mean_cost", ",.2f")),
                    ("accuracy", h.col("accuracy", ".4f"))]
                   + ([("AUC", h.col("auc", ".4f"))] if "auc" in scores else [])
                   + ([("cost hard", h.col("mean_cost_borderline", ",.1f")),
                       ("cost easy", h.col("mean_cost_decisive", ",.1f"))]
                      if "mean_cost_borderline" in by["cbudget"][0] else []))
        lines += h.points_table([p for pts in fam.values() for p in h.pareto(pts)], columns,
                                "ll" + "r" * (len(columns) - 2))
        lines += ["", "</details>", ""]
        lines += stages_check(by["cbudget"])
        diffs = [p["raw_check_max_abs_diff"] for p in by.get("CatBoost", [])]
        if diffs:
            lines += [f"CatBoost costs: each input's paths walked in the JSON export; the raw "
                      f"scores of that walk against CatBoost's own: max |diff| "
                      f"{max(diffs):.2g}.", ""]
    head = ["data set", "score", "fronts chosen on", "baseline",
            "worst shortfall of cbudget (points)", "where: baseline vs cbudget's best at no "
            "more cost", f"within {SHORTFALL * 100:g} point", "cbudget points in the "
            "baseline front's gaps (in how many gaps)"]
    intro = [f"**Criteria** (issue 43): cbudget never more than {SHORTFALL * 100:g} point "
             "below a baseline at any cost: for each point (c, a) of the baseline's front, "
             "cbudget's best test score at mean test cost <= c, minus a (the worst listed); "
             "and cbudget points inside the gaps of the baseline's front (test cost strictly "
             "between two consecutive front points', score above the cheaper one's). Fronts "
             "chosen on validation: each system's models on its validation front (cost, "
             "score), their test figures; on test: every model, the test front (optimistic "
             "for every system alike).", ""]
    return intro + h.table(head, summary, "llllrlcr") + [""] + lines


def plot(doc, path):
    colors = {"cbudget": "C0", "LightGBM CEGB": "C1", "CatBoost": "C2"}
    panels = [(d, h.ok_results(rs)) for d, rs in doc["results"].items()]
    panels = [(d, system_points(ok)) for d, ok in panels if ok]

    def draw(ax, panel, plt):
        dataset, by = panel
        for s, pts in fronts(by, "accuracy", "validation").items():
            h.curve(ax, pts, "mean_cost", "accuracy", "o-", color=colors[s], label=s,
                    markersize=3)
        h.finish_axis(ax, "mean test cost per input", "test accuracy",
                      h.title(dataset, short=True))
    return h.plot_panels(path, doc, panels, draw, "Accuracy vs cost fronts (issue 43)",
                         "test accuracy vs mean test cost of the models on each system's "
                         "validation front", (5, 4))


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
