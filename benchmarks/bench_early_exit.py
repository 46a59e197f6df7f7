"""Early-exit benchmark: accuracy vs mean cost per input with exit rules (issue 26).

cbudget CEGB with and without exit rules calibrated on the validation split
(``Booster.calibrate_exits``) against LightGBM's CEGB with all trees and with its
``pred_early_stop`` rule, costed by cbudget's cost routine on the imported model with the
same rule (``ExitRules.margin_rule``). Protocol: benchmarks/README.md.
"""
import sys
import time

import bench_cegb
import harness as h
import numpy as np

LIBRARIES = ("cbudget", "lightgbm")
DATASETS = h.COST_DATASETS
IDENT = ("library", "dataset", "lambda")
ROWS, SYNTHETIC_ROWS = ("train", "valid", "test"), h.SYNTHETIC_ROWS
# the full run (benchmarks/README.md says how it was chosen): bench_cegb's rounds and
# lambdas (cbudget cost_tradeoff; LightGBM gets twice), fewer on MNIST, trained on its first
# 20,000 rows; the exit grids: epsilons of calibrate_exits (the largest share of validation
# inputs whose exited decision may differ from the full model's), LightGBM's
# pred_early_stop_margin and pred_early_stop_freq
FULL = {"rounds": bench_cegb.FULL["rounds"],
        "lambdas": {"letters": (0.0, 0.01, 0.03, 0.06, 0.1, 0.15),
                    "mnist_multires": (0.0, 0.001, 0.003, 0.01, 0.03, 0.1),
                    "synthetic_costly": bench_cegb.FULL["lambdas"]["synthetic_costly"]},
        "epsilons": (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05),
        "margins": (0.5, 1.0, 2.0, 4.0, 8.0, 16.0), "freqs": (1, 10), "every": 1,
        "train_rows": {"letters": None, "mnist_multires": 20_000, "synthetic_costly": None}}
QUICK = {"rounds": {"letters": 20, "mnist_multires": 5, "synthetic_costly": 20},
         "lambdas": {"letters": (0.0, 0.1), "mnist_multires": (0.0, 0.01),
                     "synthetic_costly": (0.0, 1e-3)},
         "epsilons": (0.0, 0.01, 0.05), "margins": (1.0, 4.0),
         "train_rows": 2000, "valid_rows": 1000, "test_rows": 1000, "n_rows": 20_000}
# the point families: label, plot style (all points, front), colour
FAMILIES = {"cbudget": ("cbudget CEGB, all trees", "o-", "tab:blue"),
            "cbudget_exit": ("cbudget CEGB + calibrated exits", "o-", "tab:green"),
            "lightgbm": ("LightGBM CEGB, all trees", "s--", "tab:orange"),
            "lightgbm_stop": ("LightGBM CEGB + pred_early_stop", "s:", "tab:red"),
            "lightgbm_exit": ("LightGBM CEGB + cbudget calibrated exits", "^-.", "tab:purple")}
GOAL_GAIN, GOAL_RATIO = 0.01, 2 / 3  # the goal: +1 point at <= cost, or < 2/3 cost
COST_TOL = 1e-9
TRUNCATED_POINTS = 60  # iterations of the truncated-model curve kept in the JSON
ZOOM = 0.06  # the plot's lower row: accuracy within this of the best


def plan(args, names):
    """Per data set and lambda the cbudget child, then the LightGBM child."""
    libraries = h.parse_choices(args.libraries, LIBRARIES, "library")
    grid = {k: h.setting(args, k) for k in ("epsilons", "margins", "freqs", "every")}
    jobs, plans = [], {}
    for d in names:
        rounds, lambdas = h.setting(args, "rounds", d), h.setting(args, "lambdas", d)
        spec = dict(grid, dataset=d, rounds=rounds, threads=args.threads, n_rows=args.n_rows,
                    train_rows=args.train_rows or FULL["train_rows"].get(d),
                    valid_rows=args.valid_rows, test_rows=args.test_rows)
        plans[d] = {"rounds": rounds, "lambdas": lambdas, "train_rows": spec["train_rows"]}
        jobs += [(d, f"{d} / {lib} / lambda={lam:g} / {rounds} rounds",
                  dict(spec, library=lib, **{"lambda": lam}))
                 for lam in lambdas for lib in libraries]
    return jobs, {"plan": plans, "threads": args.threads, **grid}


# ------------------------------------------------------------------------- child
def classes(proba):
    """Class decisions of probabilities: (n,) binary (class 1 above 0.5), (n, K) argmax."""
    p = np.asarray(proba)
    if p.ndim == 2 and p.shape[1] > 1:
        return np.argmax(p, axis=1)
    return (p.reshape(-1) > 0.5).astype(np.int64)


def raw_classes(raw):
    """The same of raw scores (n, n_outputs): binary above 0."""
    return np.argmax(raw, axis=1) if raw.shape[1] > 1 else (raw[:, 0] > 0).astype(np.int64)


def margin_of(raw):
    """LightGBM's pred_early_stop margin: 2 |raw| (binary), top-two raw gap (multiclass)."""
    if raw.shape[1] == 1:
        return 2.0 * np.abs(raw[:, 0])
    top = np.partition(raw, raw.shape[1] - 2, axis=1)
    return top[:, -1] - top[:, -2]


class Truncated:
    """Accuracy and mean cost of the model cut after r iterations (every input), each r."""

    def __init__(self, y):
        self.y, self.rows = y, []

    def __call__(self, r, raw, trace):
        self.rows.append([r, float(np.mean(raw_classes(raw) == self.y)), float(trace.cost.mean())])


class AtExit:
    """Each input's decision, cost and acquired features after ``iterations[i]`` iterations."""

    def __init__(self, iterations, n_words):
        n = iterations.shape[0]
        self.iterations = np.asarray(iterations, dtype=np.int64)
        self.decision = np.full(n, -1, dtype=np.int64)
        self.cost = np.full(n, np.nan)
        self.acquired = np.zeros((n, n_words), dtype=np.uint64)

    def __call__(self, r, raw, trace):
        rows = np.flatnonzero(self.iterations == r)
        self.decision[rows] = raw_classes(raw[rows])
        self.cost[rows] = trace.cost[rows]
        self.acquired[rows] = trace.acquired[rows]


class MarginRule(AtExit):
    """LightGBM's pred_early_stop replayed: after iterations freq, 2 freq, ... an input
    whose margin (``margin_of``) exceeds ``margin`` stops."""

    def __init__(self, margin, freq, n, n_rounds, n_words):
        super().__init__(np.full(n, n_rounds), n_words)
        self.margin, self.freq, self.n_rounds = margin, freq, n_rounds
        self.open = np.ones(n, dtype=bool)

    def __call__(self, r, raw, trace):
        if 0 < r < self.n_rounds and r % self.freq == 0:
            rows = np.flatnonzero(self.open)
            stop = rows[margin_of(raw[rows]) > self.margin]
            self.iterations[stop], self.open[stop] = r, False
        super().__call__(r, raw, trace)


def staged_pass(model, leaves, costs, consumers):
    """``leaves`` (n, n_trees) of the cbudget ``model`` added iteration by iteration (raw
    scores from the leaf values, costs by ``harness.CostTrace``, the routine of every
    benchmark): every ``consumer(r, raw, trace)`` after 0, 1, ..., all iterations."""
    tables = h.PathTables([h.cbudget_leaf_paths(t) for t in model.trees], len(costs))
    trace = h.CostTrace(tables, costs, leaves.shape[0])
    raw = np.tile(np.asarray(model.base_score, dtype=np.float64), (leaves.shape[0], 1))
    indptr, outputs = model.iteration_indptr, model.tree_outputs
    for consumer in consumers:
        consumer(0, raw, trace)
    for r in range(model.num_boosted_rounds()):
        t0, t1 = indptr[r], indptr[r + 1]
        for t in range(t0, t1):
            raw[:, outputs[t]] += model.trees[t]["value"][leaves[:, t]]
        trace.add_trees(leaves[:, t0:t1], t0)
        for consumer in consumers:
            consumer(r + 1, raw, trace)
    return tables


def with_exits(model, X):
    """What ``model`` does on ``X`` with its exit rules: probabilities, per-input cost,
    iterations evaluated, the acquisition rates of cost_report and of acquisitions."""
    return {"proba": np.asarray(model.predict(X)),
            "cost": np.asarray(model.predict_cost(X), dtype=np.float64),
            "iterations": np.asarray(model.exit_iterations(X), dtype=np.int64),
            "report_rates": np.asarray(model.cost_report(X).acquisition_rate, dtype=np.float64),
            "acquisition_rates": np.asarray(model.acquisitions(X), dtype=bool).mean(axis=0)}


def exit_point(run, replay, full, data, n_rounds, n_features):
    """The figures of one exit run (``with_exits``) and its checks against the replay
    (``AtExit``) of the same iterations through the leaf paths."""
    y, cost = data["y_test"], run["cost"]
    decided = classes(run["proba"])
    rates = h.bits_matrix(replay.acquired, n_features).mean(axis=0)
    checks = {"decision_agreement": float(np.mean(replay.decision == decided)),
              "cost_max_abs_diff": float(np.max(np.abs(replay.cost - cost))),
              "report_rate_max_abs_diff": float(np.max(np.abs(rates - run["report_rates"]))),
              "acquisitions_rate_max_abs_diff": float(np.max(np.abs(
                  rates - run["acquisition_rates"])))}
    checks["ok"] = bool(checks["decision_agreement"] == 1.0
                        and checks["cost_max_abs_diff"] <= COST_TOL
                        and checks["report_rate_max_abs_diff"] <= 1e-12
                        and checks["acquisitions_rate_max_abs_diff"] <= 1e-12)
    out = {"accuracy": float(np.mean(decided == y)), "mean_cost": float(cost.mean()),
           "cost_ratio": h.ratio(float(cost.mean()), full["mean_cost"]),
           "test_disagreement": float(np.mean(decided != full["classes"])),
           "mean_iterations": float(run["iterations"].mean()),
           "exited": float(np.mean(run["iterations"] < n_rounds)),
           **h.cost_summary(cost), "checks": checks}
    if "hard_test" in data:
        hard = data["hard_test"]
        out["mean_cost_hard"] = float(cost[hard].mean()) if hard.any() else None
        out["mean_cost_easy"] = float(cost[~hard].mean()) if (~hard).any() else None
    return out


def train(spec, data, library):
    """The trained model (a cbudget Booster; LightGBM's imported with the data set's costs),
    LightGBM's booster (else None), timing and the full model's cost checks."""
    import cbudget
    costs, X_test = data["feature_costs"], data["X_test"]
    params = bench_cegb.cegb_params(library, spec["dataset"], data["n_classes"],
                                    float(spec["lambda"]), costs, n_threads=spec["threads"])
    if library == "cbudget":
        (booster, *_), timing = h.timed_training(
            h.train_cbudget_timed, data, params, spec["rounds"],
            feature_names=data["feature_names"], feature_costs=costs)
        _, _, _, diff = h.check_leaf_path_costs(booster, X_test, costs)
        return booster, None, params, timing, {"cost_max_abs_diff": diff}
    (lgb_booster, *_), timing = h.timed_training(h.train_lightgbm_timed, data, params,
                                                 spec["rounds"])
    model = cbudget.from_lightgbm(lgb_booster, feature_costs=costs,
                                  feature_names=data["feature_names"])
    # the import: the same raw scores, and its predict_cost equals the leaf-path cost of
    # LightGBM's own leaves and dumped trees (bench_cegb.py's routine)
    raw = np.asarray(lgb_booster.predict(X_test, raw_score=True)).reshape(X_test.shape[0], -1)
    tables = h.PathTables([h.lightgbm_leaf_paths(t["tree_structure"])
                           for t in lgb_booster.dump_model()["tree_info"]], X_test.shape[1])
    cost, _, _ = h.prediction_costs(lgb_booster.predict(X_test, pred_leaf=True), tables, costs)
    checks = {"import_raw_max_abs_diff": float(np.max(np.abs(
        np.asarray(model.predict(X_test, output_margin=True)).reshape(raw.shape) - raw))),
        **h.check_costs(model, X_test, cost)}
    return model, lgb_booster, params, timing, checks


def run_point(spec):
    """Train one (library, data set, lambda), then every exit rule of the grids."""
    import cbudget
    library = spec["library"]
    data, result = h.start_child(spec, library, keep_valid=True)
    costs, X_test, X_valid, y_test = (data["feature_costs"], data["X_test"], data["X_valid"],
                                      data["y_test"])
    model, lgb_booster, params, timing, checks = train(spec, data, library)
    n_rounds, n_features, n = model.num_boosted_rounds(), X_test.shape[1], X_test.shape[0]
    # the full model (no exit rules set yet); LightGBM's accuracy from its own predict
    own_full = np.asarray(model.predict(X_test))
    proba = own_full if lgb_booster is None else np.asarray(lgb_booster.predict(X_test))
    cost = np.asarray(model.predict_cost(X_test), dtype=np.float64)
    full = {"classes": classes(proba), "mean_cost": float(cost.mean())}
    valid_full = classes(model.predict(X_valid))
    leaves = np.asarray(model.predict(X_test, pred_leaf=True)).reshape(n, -1)
    dvalid = cbudget.Dataset(X_valid, data["y_valid"], feature_names=data["feature_names"],
                             feature_costs=costs)
    runs = []  # (point, with_exits of the test set)
    family = "cbudget_exit" if library == "cbudget" else "lightgbm_exit"
    for eps in spec["epsilons"]:
        t = time.perf_counter()
        made = model.calibrate_exits(dvalid, eps, every=spec["every"])
        point = {"family": family, "epsilon": eps, "calibrate_s": time.perf_counter() - t,
                 "calibration": dict(made.calibration),
                 "firing_checks": int(made.firing().sum()),
                 "checks_total": int(made.check_after.size),
                 "valid_disagreement": float(np.mean(classes(model.predict(X_valid))
                                                     != valid_full))}
        runs.append((point, with_exits(model, X_test)))
    rules = []  # LightGBM's pred_early_stop replayed, one MarginRule per (margin, freq)
    for margin in spec["margins"] if lgb_booster is not None else ():
        for freq in spec["freqs"]:
            own = np.asarray(lgb_booster.predict(
                X_test, pred_early_stop=True, pred_early_stop_freq=int(freq),
                pred_early_stop_margin=float(margin)))
            model.exit_rules = cbudget.ExitRules.margin_rule(model, float(margin), int(freq))
            point = {"family": "lightgbm_stop", "margin": margin, "freq": freq,
                     "lightgbm_classes": classes(own)}
            runs.append((point, with_exits(model, X_test)))
            rules.append(MarginRule(float(margin), int(freq), n, n_rounds, (n_features + 63) // 64))
    # with the last rules still set, early_exit=False is the full model; then clear them
    checks["early_exit_false_equal"] = bool(
        np.array_equal(np.asarray(model.predict(X_test, early_exit=False)), own_full)
        and np.allclose(model.predict_cost(X_test, early_exit=False), cost, rtol=0,
                        atol=COST_TOL))
    try:
        model.exit_rules = None
        checks["cleared_rules_equal"] = bool(np.allclose(model.predict_cost(X_test), cost,
                                                         rtol=0, atol=COST_TOL))
    except Exception as exc:  # noqa: BLE001 - an API finding, reported
        checks["cleared_rules_equal"] = f"{type(exc).__name__}: {exc}"
    t = time.perf_counter()
    replays = [AtExit(run["iterations"], (n_features + 63) // 64) for _, run in runs]
    truncated = Truncated(y_test)
    tables = staged_pass(model, leaves, costs, [truncated, *replays, *rules])
    points = [{"family": library, "accuracy": h.accuracy(proba, y_test),
               "mean_cost": full["mean_cost"], "cost_ratio": 1.0,
               "mean_iterations": float(n_rounds), "exited": 0.0, **h.cost_summary(cost)}]
    stop_runs = iter(rules)
    for (point, run), replay in zip(runs, replays, strict=True):
        point.update(exit_point(run, replay, full, data, n_rounds, n_features))
        if point["family"] == "lightgbm_stop":  # LightGBM's own accuracy; the replay
            rule, own = next(stop_runs), point.pop("lightgbm_classes")
            point.update({
                "accuracy": float(np.mean(own == y_test)),
                "cbudget_rule_accuracy": point["accuracy"],
                "agreement_with_lightgbm": float(np.mean(classes(run["proba"]) == own)),
                "replay_agreement_with_lightgbm": float(np.mean(rule.decision == own)),
                "iterations_equal_replay": float(np.mean(rule.iterations == run["iterations"])),
                "replay_mean_cost": float(rule.cost.mean())})
        point["lambda"] = float(spec["lambda"])
        points.append(point)
    points[0]["lambda"] = float(spec["lambda"])
    keep = np.unique(np.round(np.linspace(0, n_rounds, TRUNCATED_POINTS)).astype(int))
    result.update({
        "lambda": float(spec["lambda"]), "rounds": spec["rounds"], "params": params, **timing,
        "n_trees": int(tables.n_trees), "features_used": int(tables.used_features().shape[0]),
        "accuracy": points[0]["accuracy"], "mean_cost": full["mean_cost"],
        "full_cost": float(np.sum(costs)), "checks": checks, "points": points,
        "truncated": [truncated.rows[i] for i in keep], "replay_s": time.perf_counter() - t})
    return result


# ------------------------------------------------------------------------ report
def label(p):
    """``lambda=0.01 eps=0.005`` etc.: the point's lambda and exit rule."""
    rule = {"cbudget": "all trees", "lightgbm": "all trees",
            "lightgbm_stop": f"stop m={p.get('margin', 0):g} f={p.get('freq')}"}.get(
        p["family"], f"eps={p.get('epsilon', 0):g}")
    return f"lambda={p['lambda']:g} {rule}"


def family_points(results):
    """The points of every successful child, by family."""
    out = {f: [] for f in FAMILIES}
    for r in h.ok_results(results):
        for p in r["points"]:
            out[p["family"]].append(p)
    return out


def goal(points, ref):
    """The goal check of ``points`` against the reference point ``ref``: the best at no
    more cost (gain), the cheapest at no less accuracy (cost ratio), whether it is met."""
    cheaper = [p for p in points if p["mean_cost"] <= ref["mean_cost"] * (1 + 1e-12)]
    best = max(cheaper, key=lambda p: (p["accuracy"], -p["mean_cost"])) if cheaper else None
    gain = best["accuracy"] - ref["accuracy"] if best else None
    reach = [p for p in points if p["accuracy"] >= ref["accuracy"]]
    cheapest = min(reach, key=lambda p: (p["mean_cost"], -p["accuracy"])) if reach else None
    ratio = (cheapest["mean_cost"] / ref["mean_cost"] if cheapest and ref["mean_cost"] > 0
             else None)
    met = bool((gain is not None and gain >= GOAL_GAIN - 1e-12)
               or (ratio is not None and ratio < GOAL_RATIO))
    return {"gain": gain, "cheapest": cheapest, "ratio": ratio, "met": met}


def goal_columns(points):
    """The extra columns of the goal-check table (``harness.comparison_table``)."""
    return [("cheapest at >= accuracy (point / cost)",
             lambda g: (lambda c: f"{label(c)} / {c['mean_cost']:,.2f}" if c else "none")(
                 goal(points, g)["cheapest"])),
            ("cost ratio", lambda g: h.fmt(goal(points, g)["ratio"], ".3f")),
            ("goal met", lambda g: "**yes**" if goal(points, g)["met"] else "no")]


def lightgbm_front(fp):
    return h.pareto(fp["lightgbm"] + fp["lightgbm_stop"])


def checks_text(p):
    c = p.get("checks") or {}
    if c.get("ok", True):
        return "ok"
    return ", ".join(f"{k} {v:.3g}" for k, v in c.items() if k != "ok")


def render(doc):
    lines, summary = [], []
    for name, results in doc["results"].items():
        ok, fp = h.ok_results(results), family_points(results)
        if not ok:
            lines += [f"### {h.title(name)}: no successful run", ""]
            continue
        first = ok[0]
        lines += [f"### {h.title(name)}: {h.sizes_text(first)}, {first['rounds']} rounds "
                  f"({first['n_trees'] // max(first['rounds'], 1)} tree(s) per round), sum of "
                  f"costs {first['full_cost']:,.0f}", ""]
        by = {(r["library"], r["lambda"]): r for r in ok}
        rows = []
        for lam in sorted({r["lambda"] for r in ok}):
            c, g = by.get(("cbudget", lam)), by.get(("lightgbm", lam))
            rows.append([f"{lam:g}"] + [h.fmt(r.get(k), s) if r else "failed"
                                        for k, s in (("accuracy", ".4f"), ("mean_cost", ",.2f"),
                                                     ("features_used", "d"), ("train_s", ".1f"))
                                        for r in (c, g)])
        lines += ["Models (all trees):", ""] + h.table(
            ["lambda", "cbudget accuracy", "LightGBM accuracy", "cbudget mean cost",
             "LightGBM mean cost", "cbudget features used", "LightGBM features used",
             "cbudget train s", "LightGBM train s"], rows, "r") + [""]
        front = lightgbm_front(fp)
        row = [h.title(name, short=True), str(len(front))]
        for family, what in (("cbudget_exit", "cbudget CEGB + exits"),
                             ("cbudget", "cbudget CEGB without exits")):
            if not (front and fp[family]):
                row += ["n/a", ""]
                continue
            goals = [goal(fp[family], g) for g in front]
            row += [f"{sum(x['met'] for x in goals)} of {len(goals)}",
                    h.fmt(min((x["gain"] for x in goals if x["gain"] is not None),
                              default=None), "+.4f")]
            lines += [f"Goal check, {what} against LightGBM's front (its all-trees and "
                      "pred_early_stop points that no other LightGBM point beats):", ""]
            lines += h.comparison_table(fp[family], front, ("LightGBM", what, "mean cost",
                                                            "accuracy"), label,
                                        extra=goal_columns(fp[family])) + [""]
        summary.append(row + [transfer_text(fp)])
        lines += detail_tables(fp) + model_checks(ok)
    head = ["data set", "LightGBM front points", "cbudget + exits: goal met",
            "worst gain at <= cost", "cbudget without exits: goal met", "worst gain at <= cost",
            "test disagreement - epsilon, worst (cbudget / LightGBM + exits)"]
    return (["**Goal** (issue 26): at every cost level of LightGBM's front cbudget with exits "
             "is at least 1 point more accurate (at no more cost) or as accurate at under "
             "two thirds of the cost.", ""] + h.table(head, summary, "lrrrrrr") + [""] + lines)


def transfer_text(fp):
    """The largest excess of the test disagreement over epsilon per exit family."""
    out = []
    for family in ("cbudget_exit", "lightgbm_exit"):
        pts = fp[family]
        out.append(h.fmt(max((p["test_disagreement"] - p["epsilon"] for p in pts),
                             default=None), "+.4f"))
    return " / ".join(out)


def model_checks(ok):
    """One line: the checks of every model (all trees, early_exit=False, cleared rules)."""
    bad = [f"{r['library']} lambda={r['lambda']:g}: " + ", ".join(
        f"{k} {v}" for k, v in r["checks"].items()
        if v is not True and not (isinstance(v, float) and k.endswith("diff") and v <= COST_TOL))
        for r in ok]
    bad = [b for b in bad if not b.endswith(": ")]
    return [("Checks of every model: " + ("all passed" if not bad else "; ".join(bad))
             + " (cbudget's cost with all trees = the leaf-path routine; LightGBM's import: "
             "the same raw scores and predict_cost = the leaf-path cost of LightGBM's own "
             "leaves; early_exit=False with rules set, and the model with its rules "
             "cleared, = all trees; every exit point: decisions, per-input costs and "
             "cost_report / acquisitions rates = the replay of its exit iterations, column "
             "'checks')."), ""]


def detail_tables(fp):
    """All points of each exit family, collapsed."""
    exit_cols = [("point", label), ("valid disagreement", h.col("valid_disagreement", ".4f")),
                 ("test disagreement", h.col("test_disagreement", ".4f")),
                 ("accuracy", h.col("accuracy", ".4f")), ("mean cost", h.col("mean_cost", ",.2f")),
                 ("cost / all trees", h.col("cost_ratio", ".3f")),
                 ("mean iterations", h.col("mean_iterations", ".1f")),
                 ("exited early", h.col("exited", ".3f")),
                 ("calibrate s", h.col("calibrate_s", ".2f")), ("checks", checks_text)]
    stop_cols = [("point", label), ("accuracy (LightGBM)", h.col("accuracy", ".4f")),
                 ("mean cost (cbudget margin_rule)", h.col("mean_cost", ",.2f")),
                 ("cost / all trees", h.col("cost_ratio", ".3f")),
                 ("mean iterations", h.col("mean_iterations", ".1f")),
                 ("exited early", h.col("exited", ".3f")),
                 ("decisions = LightGBM's", h.col("agreement_with_lightgbm", ".4f")),
                 ("replay = LightGBM's", h.col("replay_agreement_with_lightgbm", ".4f")),
                 ("exit iterations = replay", h.col("iterations_equal_replay", ".4f")),
                 ("checks", checks_text)]
    if any("mean_cost_hard" in p for p in fp["cbudget_exit"] + fp["lightgbm_stop"]):
        extra = [("mean cost hard / easy", lambda p: f"{h.fmt(p.get('mean_cost_hard'), ',.1f')}"
                  f" / {h.fmt(p.get('mean_cost_easy'), ',.1f')}")]
        exit_cols, stop_cols = exit_cols + extra, stop_cols + extra
    lines = []
    for family, cols in (("cbudget_exit", exit_cols), ("lightgbm_stop", stop_cols),
                         ("lightgbm_exit", exit_cols)):
        pts = sorted(fp[family], key=lambda p: (p["lambda"], p.get("epsilon", 0),
                                                p.get("freq", 0), p.get("margin", 0)))
        if pts:
            lines += [f"<details><summary>{FAMILIES[family][0]}: all {len(pts)} points"
                      "</summary>", ""] + h.points_table(pts, cols) + ["", "</details>", ""]
    return lines


def plot(doc, path):
    def draw(axes, name, plt):
        ok, fp = h.ok_results(doc["results"][name]), family_points(doc["results"][name])
        every = [p for pts in fp.values() for p in pts]
        best = max(p["accuracy"] for p in every)
        top = [p["mean_cost"] for p in every
               if p["accuracy"] >= best - ZOOM and p["mean_cost"] > 0]
        for row, ax in enumerate(axes):
            for i, r in enumerate(r for r in ok if r["library"] == "cbudget"):
                pts = [{"mean_cost": c, "accuracy": a} for it, a, c in r["truncated"] if it]
                h.curve(ax, pts, "mean_cost", "accuracy", "-", color="tab:gray", linewidth=0.6,
                        alpha=0.5, label=None if i else "cbudget CEGB cut after r >= 1 iterations")
            for family, (text, style, color) in FAMILIES.items():
                pts = fp[family]
                if family in ("cbudget", "lightgbm"):
                    h.curve(ax, pts, "mean_cost", "accuracy", style, color=color, label=text,
                            markersize=4, fontsize=6,
                            annotate=None if row or family != "cbudget" else
                            (lambda p: f"{p['lambda']:g}"))
                    continue
                ax.plot([p["mean_cost"] for p in pts], [p["accuracy"] for p in pts], ".",
                        color=color, markersize=3, alpha=0.35)
                h.curve(ax, h.pareto(pts), "mean_cost", "accuracy", style, color=color,
                        label=text + " (front)", markersize=3, linewidth=1.2)
            h.finish_axis(ax, "mean prediction cost per test input", "test accuracy",
                          h.title(name, short=True) + (" (zoom on the top)" if row else ""),
                          xscale="log" if row and top else "symlog", legend_size=6,
                          legend_loc="lower right")
            if row:
                ax.get_legend().remove()
                ax.xaxis.set_minor_formatter(plt.NullFormatter())
                ax.set_ylim(best - ZOOM, best + ZOOM / 10)
                if top:
                    ax.set_xlim(min(top) / 1.2, max(top) * 1.2)
    panels = [n for n, rs in doc["results"].items() if h.ok_results(rs)]
    return h.plot_panels(path, doc, panels, draw, "Early exit: test accuracy vs mean cost",
                         "test accuracy vs mean test cost per input; top: everything, symlog "
                         f"cost axis; bottom: within {ZOOM:g} of the best accuracy, log cost "
                         "axis; dots: every exit point, lines: each family's front; labels: "
                         "cbudget's lambda", (5.6, 4.6), n_rows=2)


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
