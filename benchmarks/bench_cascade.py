"""Budget-cascade benchmark: accuracy vs mean cost against the ideal policy (issue 43).

A generator family (``make_cascade``) where a few cheap features (total cost 20) decide
most inputs and a test costing 10x or 100x as much is needed only for a share of them
(0.2, 0.35, 0.5; binary and 3 classes); the ideal policy (buy the test exactly for the
borderline inputs, Bayes decisions) is computed from the generator. Against it: cbudget
CEGB over its cost path (all trees, and with calibrated exits), the manual two-stage
continuation of issue 43 and the same cascades trained with ``cost_stages``, the budget
search a user gets (``cbudget.cost_path(..., cascades=True)``, as the estimators'
``cost_budget`` runs it), LightGBM's CEGB, CatBoost's per_object_feature_penalties
(Lossguide) and cbudget ADAPT-GBRT (binary only). Protocol: benchmarks/README.md.
"""
import sys

import harness as h
import numpy as np

CHEAP_TOTAL = 20.0
SHARES, RATIOS, CLASSES = (0.2, 0.35, 0.5), (10, 100), (2, 3)


def member_name(n_classes, share, ratio):
    return f"{'bin' if n_classes == 2 else f'mc{n_classes}'}_s{round(share * 100)}_r{ratio}"


MEMBERS = {member_name(k, s, r): (k, s, r) for k in CLASSES for s in SHARES for r in RATIOS}
DATASETS = tuple(MEMBERS)
METHODS = ("ideal", "cegb", "two_stage", "cost_stages", "search", "estimator", "lightgbm",
           "catboost", "adapt_gbrt")
IDENT = ("dataset", "method")
ROWS = ("train", "valid", "test")
TIME_BUDGET = 0
# the full run: 200 rounds everywhere; the CEGB path's points and exit epsilons; the
# two-stage grid (stage-1 trade-off as a fraction of lambda_max, stage-2 as a fraction of
# stage 1, rounds per stage, exits checked every `stage_every` iterations); LightGBM's
# cegb_tradeoff = 2 lambda over lambda_max * `lgbm_fractions` and 0; CatBoost's
# penalties_coefficient grid; ADAPT-GBRT's p_full x cost_tradeoff grid
FULL = {"rounds": 200, "n_points": 10, "epsilons": (0.0, 0.005, 0.01, 0.02, 0.05),
        "stage1": (0.3, 0.1, 0.03), "stage2": (0.3, 0.1, 0.03), "stage_every": 10,
        "lgbm_fractions": (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3),
        "cat_coefs": (0.0, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0),
        "p_full": (0.2, 0.35, 0.5, 0.7), "adapt_gammas": (1e-3, 1e-2),
        "ideal_samples": 1_000_000, "train_rows": 4000, "valid_rows": 2000,
        "test_rows": 20000, "search_points": 16, "budget_factors": (0.8, 1.0, 1.2, 1.5, 2.0),
        "estimator_factors": (1.2,)}
QUICK = {"rounds": 20, "n_points": 4, "search_points": 6, "epsilons": (0.0, 0.02),
         "stage1": (0.1,), "stage2": (0.1,), "lgbm_fractions": (0.1, 0.01),
         "cat_coefs": (0.0, 1e-2),
         "p_full": (0.35,), "adapt_gammas": (1e-2,), "ideal_samples": 100_000,
         "train_rows": 1000, "valid_rows": 500, "test_rows": 2000}
TOLERANCE = 0.005   # the goal: within 0.5 point of the ideal accuracy
COST_SLACK = 1.2    # ... at no more than 1.2x its mean cost
# the search's default grid (the estimators' path_points) and the budgets, as multiples of
# the ideal policy's mean cost, at which the search's own choice is recorded


# --------------------------------------------------------------------- generator
# Feature layout: 4 informative cheap features (cost 4 each), 2 cheap noise features
# (cost 2 each): 20 in all; "test" (cost ratio * 20) and "extra" (2.5x the test's cost,
# weakly informative).
CHEAP_COSTS = (4.0, 4.0, 4.0, 4.0, 2.0, 2.0)
CHEAP_SIGNAL = {2: 1.2, 3: 3.0}    # class-prototype scale on the cheap features
TEST_SIGNAL = {2: 1.3, 3: 3.0}     # class-mean spacing of the test
EXTRA_SIGNAL = 0.3                  # ... of the extra feature


def prototypes(n_classes):
    """Class means of the 4 informative cheap features (easy inputs), (K, 4)."""
    a = CHEAP_SIGNAL[n_classes]
    if n_classes == 2:
        return a * np.array([[-1.0] * 4, [1.0] * 4])
    return a * np.eye(4)[:n_classes]


def class_levels(n_classes):
    """Class means of the test / extra feature on one axis, centred: (K,)."""
    return np.arange(n_classes) - (n_classes - 1) / 2.0 if n_classes > 2 else np.array([-1.0, 1.0])


def make_cascade(n_samples, share, ratio, n_classes, seed):
    """``n_samples`` inputs of the family member: label y uniform over ``n_classes``; a
    hidden "borderline" flag with probability ``share``; cheap features x_j ~ N(m_y,j, 1)
    for the others and N(0, 1) (no evidence) for the borderline ones (m: ``prototypes``);
    two cheap noise features; the test ~ N(TEST_SIGNAL * c_y, 1), the extra feature ~
    N(EXTRA_SIGNAL * c_y, 1) (c: ``class_levels``). Returns X (float32), y, hard flag."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_samples)
    hard = rng.random(n_samples) < share
    m = prototypes(n_classes)[y] * (~hard)[:, None]
    c = class_levels(n_classes)[y]
    X = np.column_stack([m + rng.standard_normal((n_samples, 4)),
                         rng.standard_normal((n_samples, 2)),
                         TEST_SIGNAL[n_classes] * c + rng.standard_normal(n_samples),
                         EXTRA_SIGNAL * c + rng.standard_normal(n_samples)])
    return X.astype(np.float32), y.astype(np.int32), hard


def feature_costs(ratio):
    test = ratio * CHEAP_TOTAL
    return np.array([*CHEAP_COSTS, test, 2.5 * test], dtype=np.float64)


FEATURE_NAMES = ["cheap0", "cheap1", "cheap2", "cheap3", "noise0", "noise1", "test", "extra"]


def load_member(name, rows):
    """Train / valid / test of a member (seeds 1, 2, 3) with its costs and sizes."""
    k, share, ratio = MEMBERS[name]
    data = {"n_classes": k, "feature_costs": feature_costs(ratio),
            "feature_names": FEATURE_NAMES, "share": share, "ratio": ratio}
    for seed, part in enumerate(("train", "valid", "test"), start=1):
        X, y, hard = make_cascade(rows[part], share, ratio, k, seed)
        data.update({f"X_{part}": X, f"y_{part}": y, f"hard_{part}": hard})
    return data


def log_posteriors(X, share, n_classes, with_test):
    """Bayes log p(y | cheap features [, test]) up to a constant per input, (n, K):
    p(x | y) = (1 - share) N(x; m_y, I) + share N(x; 0, I) on the informative cheap
    features (the noise features and, without the test, the rest are independent of y)."""
    x = X[:, :4].astype(np.float64)
    easy = -0.5 * ((x[:, None, :] - prototypes(n_classes)[None]) ** 2).sum(axis=2)
    hard = -0.5 * (x ** 2).sum(axis=1)[:, None]
    out = np.logaddexp(np.log1p(-share) + easy, np.log(share) + hard)
    if with_test:
        t = X[:, 6].astype(np.float64)[:, None]
        out = out - 0.5 * (t - TEST_SIGNAL[n_classes] * class_levels(n_classes)[None]) ** 2
    return out


def ideal_policy(name, n_samples, seed=12345):
    """The ideal policy on ``n_samples`` fresh inputs of the member: the cheap features
    for everyone, the test for exactly a ``share`` of them (those with the smallest Bayes
    posterior of the cheap decision: the borderline ones), Bayes decisions. Also the
    cheap-only and test-for-everyone Bayes figures and the policy's front over the share
    tested."""
    k, share, ratio = MEMBERS[name]
    X, y, hard = make_cascade(n_samples, share, ratio, k, seed)
    lc, lt = log_posteriors(X, share, k, False), log_posteriors(X, share, k, True)
    top = np.exp(lc.max(axis=1) - np.logaddexp.reduce(lc, axis=1))   # max posterior, cheap
    right_c, right_t = lc.argmax(axis=1) == y, lt.argmax(axis=1) == y
    order = np.argsort(top)          # the most borderline first
    test_cost = ratio * CHEAP_TOTAL

    def policy(fraction):
        buy = np.zeros(n_samples, dtype=bool)
        buy[order[:round(fraction * n_samples)]] = True
        return {"fraction_tested": float(buy.mean()),
                "accuracy": float(np.where(buy, right_t, right_c).mean()),
                "mean_cost": CHEAP_TOTAL + float(buy.mean()) * test_cost,
                "tested_borderline": float(buy[hard].mean()) if hard.any() else None}

    main = policy(share)
    se = float(np.sqrt(main["accuracy"] * (1 - main["accuracy"]) / n_samples))
    return {"method": "ideal", "samples": n_samples, "accuracy_se": se, **main,
            "cheap_only": {"accuracy": float(right_c.mean()), "mean_cost": CHEAP_TOTAL},
            "test_all": {"accuracy": float(right_t.mean()), "mean_cost": CHEAP_TOTAL + test_cost},
            "front": [policy(f) for f in np.linspace(0, 1, 21)]}


# ------------------------------------------------------------------------- plan
def plan(args, names):
    methods = h.parse_choices(args.methods, METHODS, "method")
    keys = [k for k in FULL if k not in h.ROW_OPTIONS]
    grid = {k: h.setting(args, k) for k in keys}
    rows = {p: getattr(args, f"{p}_rows") or args.grid[f"{p}_rows"] for p in ROWS}
    jobs = [(d, f"{d} / {m}", dict(grid, dataset=d, method=m, rows=rows, threads=args.threads))
            for d in names for m in methods]
    return jobs, {"grid": grid, "rows": rows, "threads": args.threads}


# ------------------------------------------------------------------------ child
def run_point(spec):
    name, method = spec["dataset"], spec["method"]
    k, share, ratio = MEMBERS[name]
    out = {"dataset": name, "method": method, "n_classes": k, "share": share, "ratio": ratio}
    with h.Timer() as t:
        if method == "ideal":
            out.update(ideal_policy(name, spec["ideal_samples"]))
        elif method == "adapt_gbrt" and k != 2:
            out["points"], out["note"] = [], "ADAPT-GBRT is binary only"
        else:
            data = load_member(name, spec["rows"])
            out["points"] = RUNNERS[method](spec, data)
            out.update({f"n_{p}": int(data[f"y_{p}"].shape[0]) for p in ROWS})
    out.update({"train_s": t.wall, "train_cpu_s": t.cpu, "other_cores_during_train": t.other})
    return out


def cbudget_sets(data):
    import cbudget
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], feature_costs=data["feature_costs"],
                             feature_names=data["feature_names"])
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    return dtrain, dvalid


def cegb_base(spec, data):
    return dict(h.library_params("cbudget", data["n_classes"], spec["threads"]),
                algorithm="cegb", eval_metric="error" if data["n_classes"] == 2 else "merror")


def scored_point(score, data, family, **labels):
    """A model's point: ``score(X) -> (probabilities, per-input cost)`` on the test split
    (accuracy, mean cost; binary: AUC; with ``hard_test``: the mean cost on the truly
    borderline and decisive inputs) and, when there is one, the validation split."""
    import datasets
    out = {"family": family, **labels}
    for part, prefix in (("test", ""), ("valid", "valid_")):
        if data.get(f"X_{part}") is None:
            continue
        proba, cost = score(data[f"X_{part}"])
        proba, cost = np.asarray(proba), np.asarray(cost, dtype=np.float64)
        y = data[f"y_{part}"]
        out.update({prefix + "accuracy": h.accuracy(proba, y),
                    prefix + "mean_cost": float(cost.mean())})
        if data["n_classes"] == 2:
            out[prefix + "auc"] = datasets.auc(y, proba.reshape(-1))
        if part == "test" and "hard_test" in data:
            hard = data["hard_test"]
            out.update(mean_cost_borderline=float(cost[hard].mean()),
                       mean_cost_decisive=float(cost[~hard].mean()))
    return out


def model_point(model, data, family, **labels):
    """Test (and validation) accuracy and mean cost of a cbudget model (with its exit
    rules, if any)."""
    return scored_point(lambda X: (model.predict(X), model.predict_cost(X)), data, family,
                        **labels)


def lambda_max(spec, data):
    from cbudget.cost_path import find_lambda_max
    dtrain, _ = cbudget_sets(data)
    return float(find_lambda_max(cegb_base(spec, data), dtrain))


def run_cegb(spec, data):
    """cbudget.cost_path over n_points trade-offs, with an exit copy per epsilon; with
    ``path_cascades`` in the spec (> 0), also that many two-stage cascades of the path's
    own search (``cost_path(cascades=...)``), each with exits per epsilon."""
    import cbudget
    dtrain, dvalid = cbudget_sets(data)
    n_cascades = spec.get("path_cascades", 0)
    path = cbudget.cost_path(cegb_base(spec, data), dtrain, dvalid, n_points=spec["n_points"],
                             num_boost_round=spec["rounds"], exit_epsilons=spec["epsilons"],
                             **({"cascades": n_cascades} if n_cascades else {}))
    points = []
    for k, (lam, eps, model) in enumerate(zip(path.lambdas, path.epsilons, path.models,
                                              strict=True)):
        stages = path.stages[k] if path.stages is not None else None
        family = "path_cascade" if stages else "cegb"
        labels = ({"lambda1": float(stages[0][1]), "lambda2": float(stages[1][1]),
                   "rounds1": int(stages[0][0])} if stages else {"lambda": float(lam)})
        exits = not np.isnan(eps)
        point = model_point(model, data, family + "_exit" if exits else family,
                            **labels, **({"epsilon": float(eps)} if exits else {}))
        if exits:
            # validation as the path scores it (cross-fitted: exits calibrated on the
            # other half), not the copy's own exits on the rows they were calibrated on
            assert path.metric in ("error", "merror")
            point.update(valid_accuracy_in_sample=point["valid_accuracy"],
                         valid_mean_cost_in_sample=point["valid_mean_cost"],
                         valid_accuracy=1.0 - float(path.scores[k]),
                         valid_mean_cost=float(path.costs[k]))
        points.append(point)
    return points


def run_two_stage(spec, data, staged=False):
    """CEGB at lambda_max * s1 for rounds/2, continued (xgb_model=) at that * s2 for
    rounds/2; exits calibrated every stage_every iterations at each epsilon. ``staged``:
    each model trained in one call with the two stages as ``cost_stages`` instead (the
    same trees expected; the points carry the mean raw test score to compare), its exits
    also checked only at the stage boundary (``checks="stages"``)."""
    import cbudget
    dtrain, dvalid = cbudget_sets(data)
    base, lam_max, half = cegb_base(spec, data), lambda_max(spec, data), spec["rounds"] // 2
    family = "cost_stages" if staged else "two_stage"
    points = []
    for s1 in spec["stage1"]:
        first = None if staged else cbudget.train(dict(base, cost_tradeoff=lam_max * s1),
                                                  dtrain, half, verbose_eval=False)
        for s2 in spec["stage2"]:
            lam1, lam2 = lam_max * s1, lam_max * s1 * s2
            if staged:
                model = cbudget.train(dict(base, cost_stages=[[half, lam1], [half, lam2]]),
                                      dtrain, 2 * half, verbose_eval=False)
            else:
                model = cbudget.train(dict(base, cost_tradeoff=lam2), dtrain, half,
                                      xgb_model=first, verbose_eval=False)
            labels = {"lambda1": lam1, "lambda2": lam2, "mean_raw_test": float(np.mean(
                model.predict(data["X_test"], output_margin=True)))}
            points.append(model_point(model, data, family, **labels))
            for eps in spec["epsilons"]:
                model.calibrate_exits(dvalid, eps, every=spec["stage_every"])
                points.append(model_point(model, data, family + "_exit", epsilon=eps, **labels))
                if staged:   # one check only, at the stage boundary
                    model.calibrate_exits(dvalid, eps, checks="stages")
                    points.append(model_point(model, data, family + "_boundary", epsilon=eps,
                                              **labels))
    return points


def ideal_cost(name):
    """The ideal policy's mean cost: the cheap features for everyone, the test for the
    borderline share (``ideal_policy`` buys it for exactly that share)."""
    _, share, ratio = MEMBERS[name]
    return CHEAP_TOTAL * (1.0 + share * ratio)


def run_search(spec, data):
    """What a user gets: ``cbudget.cost_path(..., cascades=True)`` with the estimators'
    defaults (``search_points`` trade-offs, the default validation metric: logloss /
    mlogloss; the default cascade epsilons and checks), the whole validation frontier
    scored on test. Each point records the budgets (``budget_factors`` x the ideal
    policy's mean cost) at which the search itself selects it (``CostPath.best_index``,
    validation only, with the estimators' margin of one standard error of the mean
    cost: what ``CEGBClassifier(cost_budget=B)`` returns; ``picked_without_margin``:
    the same with no margin)."""
    import cbudget
    from cbudget.sklearn import BUDGET_MARGIN
    dtrain, dvalid = cbudget_sets(data)
    params = {k: v for k, v in cegb_base(spec, data).items() if k != "eval_metric"}
    path = cbudget.cost_path(params, dtrain, dvalid, n_points=spec["search_points"],
                             num_boost_round=spec["rounds"], cascades=True)
    ideal = ideal_cost(spec["dataset"])
    picks: dict = {}
    unmargined: dict = {}
    for factor in spec["budget_factors"]:
        for margin, found in ((BUDGET_MARGIN, picks), (0.0, unmargined)):
            try:
                found.setdefault(path.best_index(factor * ideal, margin), []).append(
                    float(factor))
            except ValueError:      # nothing within that budget
                pass
    epsilons = path.epsilons if path.epsilons is not None else [np.nan] * len(path)
    stages = path.stages if path.stages is not None else [None] * len(path)
    points = []
    for i, (lam, eps, stage, model) in enumerate(zip(path.lambdas, epsilons, stages,
                                                     path.models, strict=True)):
        labels = {"index": i, "valid_" + path.metric: float(path.scores[i]),
                  "path_valid_cost": float(path.costs[i]), "pareto": bool(path.pareto[i]),
                  "path_valid_cost_se": float(path.cost_ses[i]),
                  "picked_at": picks.get(i, []),
                  "picked_without_margin": unmargined.get(i, [])}
        if stage is None:
            labels["lambda"] = float(lam)
        else:
            labels["stages"] = [[int(r), float(x)] for r, x in stage]
        if not np.isnan(eps):
            labels["epsilon"] = float(eps)
        family = ("search_cascade" if stage is not None else "search") \
            + ("_exit" if not np.isnan(eps) else "")
        points.append(model_point(model, data, family, **labels))
    return points


def run_estimator(spec, data):
    """``CEGBClassifier(cost_budget=B)`` with its defaults but ``n_estimators=rounds``
    (eval_set the validation split: the search chooses on it) at ``estimator_factors``
    x the ideal policy's mean cost: what a user who only names a budget gets."""
    import warnings

    from cbudget.sklearn import CEGBClassifier
    points = []
    for factor in spec["estimator_factors"]:
        budget = factor * ideal_cost(spec["dataset"])
        est = CEGBClassifier(feature_costs=data["feature_costs"], n_estimators=spec["rounds"],
                             cost_budget=budget, random_state=0, n_jobs=spec["threads"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(data["X_train"], data["y_train"],
                    eval_set=[(data["X_valid"], data["y_valid"])])
        rules = getattr(est.model_, "exit_rules", None)
        labels = {"budget_factor": float(factor), "budget": budget}
        if est.cost_stages_:
            labels["stages"] = [[int(r), float(x)] for r, x in est.cost_stages_]
        elif est.cost_tradeoff_ is not None:
            labels["lambda"] = float(est.cost_tradeoff_)
        if rules is not None:
            labels["epsilon"] = float(rules.calibration.get("epsilon"))

        def score(X, est=est):
            proba = est.predict_proba(X)
            return (proba[:, 1] if data["n_classes"] == 2 else proba), est.predict_cost(X)

        points.append(scored_point(score, data, "estimator", **labels))
    return points


def run_lightgbm(spec, data):
    """LightGBM's CEGB (lazy per-feature penalties) over 2 lambda_max * fractions and 0."""
    import lightgbm as lgb
    costs = data["feature_costs"]
    lam_max, points = lambda_max(spec, data), []
    for fraction in (*spec["lgbm_fractions"], 0.0):
        params = dict(h.library_params("lightgbm", data["n_classes"], spec["threads"]),
                      deterministic=True, force_col_wise=True,
                      cegb_tradeoff=2.0 * lam_max * fraction,
                      cegb_penalty_feature_lazy=[float(c) for c in costs], cegb_penalty_split=0.0)
        booster = lgb.train(params, lgb.Dataset(data["X_train"], data["y_train"], params=params),
                            num_boost_round=spec["rounds"])
        tables = h.PathTables([h.lightgbm_leaf_paths(t["tree_structure"])
                               for t in booster.dump_model()["tree_info"]], costs.shape[0])

        def score(X, booster=booster, tables=tables):
            leaves = booster.predict(X, pred_leaf=True)
            return booster.predict(X), h.prediction_costs(leaves, tables, costs)[0]

        points.append(scored_point(score, data, "lightgbm",
                                   cegb_tradeoff=params["cegb_tradeoff"]))
    return points


def catboost_costs(model, X, costs):
    """Per-input cost of a CatBoost Lossguide model (union of the features on each input's
    paths, from the JSON export; a split goes right when value > border) and the raw
    scores those paths give, to check the walk against CatBoost's own."""
    import json
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        model.save_model(f.name, format="json")
        doc = json.load(open(f.name))
    n, n_out = X.shape[0], max(1, model.predict(X[:1], prediction_type="RawFormulaVal").size)
    used = np.zeros((n, X.shape[1]), dtype=bool)
    raw = np.zeros((n, n_out))
    for tree in doc["trees"]:
        stack = [(tree, np.arange(n))]
        while stack:
            node, rows = stack.pop()
            if "split" not in node:
                raw[rows] += np.asarray(node["value"], dtype=np.float64).reshape(1, -1)
                continue
            j = node["split"]["float_feature_index"]
            used[rows, j] = True
            right = X[rows, j] > np.float32(node["split"]["border"])
            stack += [(node["left"], rows[~right]), (node["right"], rows[right])]
    scale, bias = doc.get("scale_and_bias", [1.0, [0.0]])
    raw = raw * scale + np.asarray(bias, dtype=np.float64).reshape(1, -1)
    own = np.asarray(model.predict(X, prediction_type="RawFormulaVal"), dtype=np.float64)
    diff = float(np.max(np.abs(raw.reshape(own.shape) - own)))
    return used.astype(np.float64) @ costs, diff


def run_catboost(spec, data):
    """CatBoost, grow_policy Lossguide, per_object_feature_penalties = the costs, over
    penalties_coefficient."""
    import catboost
    costs, points = data["feature_costs"], []
    for coef in spec["cat_coefs"]:
        model = catboost.CatBoostClassifier(
            iterations=spec["rounds"], learning_rate=0.1, grow_policy="Lossguide", max_leaves=31,
            min_data_in_leaf=20, l2_leaf_reg=1.0, thread_count=spec["threads"], random_seed=0,
            verbose=0, allow_writing_files=False,
            loss_function="Logloss" if data["n_classes"] == 2 else "MultiClass",
            per_object_feature_penalties={j: float(c) for j, c in enumerate(costs)},
            penalties_coefficient=float(coef))
        model.fit(data["X_train"], data["y_train"])
        diffs = []

        def score(X, model=model, diffs=diffs):
            cost, diff = catboost_costs(model, X, costs)
            diffs.append(diff)
            proba = model.predict_proba(X)
            return (proba[:, 1] if data["n_classes"] == 2 else proba), cost

        point = scored_point(score, data, "catboost", coefficient=coef,
                             iterations=spec["rounds"])
        points.append(dict(point, raw_check_max_abs_diff=max(diffs)))
    return points


def run_adapt(spec, data):
    """ADAPT-GBRT with a cbudget gbdt on all features as f0, over p_full x gamma."""
    import cbudget
    dtrain, dvalid = cbudget_sets(data)
    base = {k: v for k, v in h.library_params("cbudget", 2, spec["threads"]).items()
            if k not in ("subsample", "colsample_bytree")}   # not ADAPT-GBRT parameters
    f0 = cbudget.train(dict(base, algorithm="gbdt"), dtrain, spec["rounds"], verbose_eval=False)
    points = [model_point(f0, data, "f0")]
    for p_full in spec["p_full"]:
        for gamma in spec["adapt_gammas"]:
            model = cbudget.train(dict(base, algorithm="adapt_gbrt", p_full=p_full,
                                       cost_tradeoff=gamma), dtrain, spec["rounds"],
                                  expensive_model=f0, verbose_eval=False)
            points.append(model_point(model, data, "adapt_gbrt", p_full=p_full, gamma=gamma))
    return points


RUNNERS = {"cegb": run_cegb, "two_stage": run_two_stage,
           "cost_stages": lambda spec, data: run_two_stage(spec, data, staged=True),
           "search": run_search, "estimator": run_estimator,
           "lightgbm": run_lightgbm, "catboost": run_catboost, "adapt_gbrt": run_adapt}
FAMILIES = {"cegb": "cbudget CEGB path, all trees", "cegb_exit": "cbudget CEGB path + exits",
            "two_stage": "two-stage CEGB (manual continuation), all trees",
            "two_stage_exit": "two-stage CEGB + exits every 10",
            "cost_stages": "two-stage CEGB (cost_stages), all trees",
            "path_cascade": "cost_path's cascades, all trees",
            "path_cascade_exit": "cost_path's cascades + exits",
            "cost_stages_exit": "cost_stages + exits every 10",
            "cost_stages_boundary": "cost_stages + exits at the stage boundary",
            "search": "search: single trade-offs", "search_exit": "search: single + exits",
            "search_cascade": "search: cascades, all trees",
            "search_cascade_exit": "search: cascades + exits",
            "estimator": "CEGBClassifier(cost_budget=B), defaults",
            "lightgbm": "LightGBM CEGB", "catboost": "CatBoost per-object penalties",
            "adapt_gbrt": "cbudget ADAPT-GBRT", "f0": "f0 (gbdt, all features)"}
SHORT = {"two_stage_exit": "xgb_model=, exits every 10",
         "cost_stages_exit": "cost_stages, exits every 10",
         "cost_stages_boundary": "cost_stages, exits at the boundary"}
SEARCH = ("search", "search_exit", "search_cascade", "search_cascade_exit")
CBUDGET = ("cegb", "cegb_exit", "two_stage", "two_stage_exit", "cost_stages",
           "cost_stages_exit", "cost_stages_boundary", "path_cascade", "path_cascade_exit",
           *SEARCH, "estimator", "adapt_gbrt")


# ------------------------------------------------------------------------ report
def label(p):
    keys = [k for k in ("budget", "lambda", "lambda1", "lambda2", "rounds1", "epsilon",
                        "cegb_tradeoff", "coefficient", "iterations", "p_full", "gamma")
            if k in p]
    stages = ["stages=" + "+".join(f"{r}@{lam:.3g}" for r, lam in p["stages"])] \
        if p.get("stages") else []
    return " ".join(stages + [f"{k}={p[k]:.3g}" for k in keys]) or "-"


def meets_goal(p, ideal):
    """Whether a point meets the accuracy goal on test: at least the ideal accuracy -
    TOLERANCE at no more than COST_SLACK x the ideal mean cost."""
    return p is not None and p["accuracy"] >= ideal["accuracy"] - TOLERANCE - 1e-12 \
        and p["mean_cost"] <= COST_SLACK * ideal["mean_cost"] * (1 + 1e-12)


def search_pick(points, factor):
    """The search point ``CostPath.best_index`` chose at ``factor`` x the ideal cost."""
    return next((p for p in points if factor in p.get("picked_at", ())), None)


def cheaper_than(front, candidates):
    """Per point of ``front`` (its Pareto front): (point, the cheapest candidate of at
    least its test accuracy or None)."""
    return [(p, first_reaching(candidates, p["accuracy"])) for p in h.pareto(front)]


def versus_rows(front, groups):
    """Rows of a competitor's front against the cheapest point of each group of cbudget
    points (``groups``: name -> points) of at least its accuracy, with the cost ratio."""
    rows = []
    for p in h.pareto(front):
        row = [f"{p['accuracy']:.4f}", f"{p['mean_cost']:.1f}"]
        for pts in groups.values():
            c = first_reaching(pts, p["accuracy"])
            row += [f"{c['mean_cost']:.1f} ({label(c)})" if c else "not reached",
                    h.fmt(h.ratio(p["mean_cost"], c["mean_cost"]), ".2f") if c else ""]
        rows.append(row)
    return rows


def pt(p):
    return f"{p['accuracy']:.4f} @ {p['mean_cost']:.1f}" if p else "none"


def search_section(name, fam, ideal):
    """A member's lines on the budget search: its own choices at the budgets, and the
    fronts of LightGBM, CatBoost and ADAPT-GBRT against the search and any cbudget
    point; and its summary row (None without search points)."""
    search = [p for f in SEARCH for p in fam.get(f, [])]
    if not search:
        return [], None
    manual = [p for f in ("two_stage_exit", "cost_stages_exit", "cost_stages_boundary")
              for p in fam.get(f, [])]
    cb_all = [p for f in CBUDGET if f != "adapt_gbrt" for p in fam.get(f, [])]
    metric = next(k for k in search[0] if k.startswith("valid_") and k not in (
        "valid_accuracy", "valid_mean_cost", "valid_auc"))
    lines = [f"Budget search (`cost_path(..., cascades=True)`, {len(search)} models; chosen "
             f"on validation {metric.removeprefix('valid_')} within a budget, as "
             "`CEGBClassifier(cost_budget=B)`):", ""]
    rows = []
    factors = sorted({f for p in search for f in p.get("picked_at", ())})
    for factor in factors:
        p = search_pick(search, factor)
        rows.append([f"{factor:g}x = {factor * ideal['mean_cost']:.1f}",
                     FAMILIES[p["family"]] + ", " + label(p), f"{p['valid_mean_cost']:.1f}",
                     f"{p[metric]:.4f}", f"{p['valid_accuracy']:.4f}", pt(p),
                     h.fmt(p["accuracy"] - ideal["accuracy"], "+.4f")])
    lines += h.table(["budget (x ideal cost)", "model chosen", "valid cost", metric,
                      "valid accuracy", "test acc @ cost", "gap to ideal"], rows,
                     "llrrrrr") + [""]
    groups = {"search": search, "any cbudget": cb_all}
    for family, title in (("lightgbm", "LightGBM CEGB"), ("catboost", "CatBoost"),
                          ("adapt_gbrt", "ADAPT-GBRT")):
        if fam.get(family):
            lines += [f"{title}'s front against the cheapest search point and the cheapest "
                      "cbudget point (any method but ADAPT-GBRT) of at least its test "
                      "accuracy:", ""] + h.table(
                [f"{title} accuracy", "its cost", "search cost", "ratio", "any cbudget cost",
                 "ratio"], versus_rows(fam[family], groups), "rrlrlr") + [""]
    pick = search_pick(search, COST_SLACK)
    best = best_within(search, COST_SLACK * ideal["mean_cost"])
    grid = best_within(manual, COST_SLACK * ideal["mean_cost"])
    target = ideal["accuracy"] - TOLERANCE
    reach = first_reaching(search, target)

    def vs(family):
        other = first_reaching(fam.get(family, []), target)
        return h.fmt(h.ratio(other["mean_cost"], reach["mean_cost"]), ".2f") \
            if other and reach else ("never" if not other and reach else "")

    est = next((p for p in fam.get("estimator", []) if p["budget_factor"] == COST_SLACK), None)
    row = [name, pt(ideal), pt(pick), "yes" if meets_goal(pick, ideal) else "no",
           pt(est) + (f" ({label(est)})" if est else ""),
           ("yes" if meets_goal(est, ideal) else "no") if est else "", pt(best),
           "yes" if meets_goal(best, ideal) else "no",
           pt(grid) + (f" ({SHORT[grid['family']]}, {label(grid)})" if grid else ""),
           "yes" if meets_goal(grid, ideal) else "no",
           h.fmt(reach["mean_cost"], ".1f") if reach else "never",
           vs("lightgbm"), vs("catboost"), vs("adapt_gbrt")]
    return lines, row


SEARCH_HEAD = ["member", "ideal acc @ cost",
               f"search's choice at {COST_SLACK:g}x (validation), test acc @ cost", "goal",
               f"CEGBClassifier(cost_budget={COST_SLACK:g}x), defaults", "goal",
               f"search's best test point within {COST_SLACK:g}x", "goal",
               f"manual two-stage grid's best test point within {COST_SLACK:g}x (chosen on "
               "test)", "goal",
               f"search cost at ideal - {TOLERANCE * 100:g} pt",
               "LightGBM / search there", "CatBoost / search there", "ADAPT-GBRT / search there"]


def first_reaching(points, target):
    """The cheapest point with accuracy >= target, else None."""
    reach = [p for p in points if p["accuracy"] >= target - 1e-12]
    return min(reach, key=lambda p: p["mean_cost"]) if reach else None


def best_within(points, budget):
    within = [p for p in points if p["mean_cost"] <= budget * (1 + 1e-12)]
    return max(within, key=lambda p: (p["accuracy"], -p["mean_cost"])) if within else None


def selected_on_validation(points, budget):
    """The point of best validation accuracy among those of validation mean cost within
    ``budget`` (the points that have validation figures), else None."""
    within = [p for p in points if p.get("valid_mean_cost", np.inf) <= budget * (1 + 1e-12)]
    return max(within, key=lambda p: (p["valid_accuracy"], -p["valid_mean_cost"])) \
        if within else None


def render(doc):
    lines = [f"**Goal** (issue 43): within {TOLERANCE * 100:g} point of the ideal policy's "
             f"accuracy at no more than {COST_SLACK:g}x its mean cost, and at least 2x cheaper "
             "than LightGBM's CEGB at equal accuracy. Accuracy and cost on the held-out test "
             "split (the best point within a cost is the best of the test front; the "
             "validation-chosen column picks on the validation split instead); the ideal "
             "policy from a Monte-Carlo sample of the generator.", ""]
    summary, search_summary = [], []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        ideal = next((r for r in ok if r["method"] == "ideal"), None)
        fam = {}
        for r in ok:
            for p in r.get("points", []):
                fam.setdefault(p["family"], []).append(p)
        if not fam:
            continue
        first = next(r for r in ok if "n_train" in r)
        lines += [f"### {name}: {first['n_classes']} classes, borderline share "
                  f"{first['share']:g}, test cost {first['ratio'] * CHEAP_TOTAL:g} "
                  f"({first['ratio']}x the cheap total {CHEAP_TOTAL:g}); "
                  f"{first['n_train']:,} / {first['n_valid']:,} / {first['n_test']:,} rows", ""]
        if ideal:
            lines += [f"Ideal policy ({ideal['samples']:,} generator samples, SE "
                      f"{ideal['accuracy_se']:.4f}): accuracy **{ideal['accuracy']:.4f}** at "
                      f"mean cost **{ideal['mean_cost']:.1f}** (test bought for "
                      f"{ideal['fraction_tested']:.3f}, {ideal['tested_borderline']:.3f} of the "
                      f"truly borderline); cheap features only: "
                      f"{ideal['cheap_only']['accuracy']:.4f} at {CHEAP_TOTAL:g}; test for "
                      f"everyone: {ideal['test_all']['accuracy']:.4f} at "
                      f"{ideal['test_all']['mean_cost']:g}.", ""]
        rows = []
        cb_all = [p for f in CBUDGET for p in fam.get(f, [])]
        for f, pts in [*fam.items(), ("cbudget (any)", cb_all)]:
            if not pts:
                continue
            row = [FAMILIES.get(f, f), str(len(pts))]
            if ideal:
                b = best_within(pts, COST_SLACK * ideal["mean_cost"])
                reach = first_reaching(pts, ideal["accuracy"] - TOLERANCE)
                row += [f"{b['accuracy']:.4f} @ {b['mean_cost']:.1f}" if b else "none",
                        h.fmt(b["accuracy"] - ideal["accuracy"], "+.4f") if b else "",
                        f"{reach['mean_cost']:.1f} ({label(reach)})" if reach else "never"]
            best = max(pts, key=lambda p: p["accuracy"])
            row += [f"{best['accuracy']:.4f} @ {best['mean_cost']:.1f}"]
            rows.append(row)
        lines += h.table(["method", "points", f"best acc. within {COST_SLACK:g}x ideal cost",
                          "gap to ideal", f"first cost reaching ideal - {TOLERANCE * 100:g} pt",
                          "best accuracy @ cost"], rows, "lrrrrr") + [""]
        if ideal:
            more, row = search_section(name, fam, ideal)
            lines += more
            if row:
                search_summary.append(row)
        lgb = fam.get("lightgbm", [])
        ratio_rows = []
        for p in h.pareto(lgb):
            c = first_reaching(cb_all, p["accuracy"])
            ratio_rows.append([f"{p['accuracy']:.4f}", f"{p['mean_cost']:.1f}",
                               f"{c['mean_cost']:.1f} ({FAMILIES[c['family']]}, {label(c)})"
                               if c else "not reached",
                               h.fmt(h.ratio(p["mean_cost"], c["mean_cost"]), ".2f") if c else ""])
        if ratio_rows:
            lines += ["LightGBM CEGB's front against the cheapest cbudget point (any method) of "
                      "at least its accuracy:", ""] + h.table(
                ["LightGBM accuracy", "LightGBM cost", "cbudget cost", "LightGBM / cbudget"],
                ratio_rows, "rrlr") + [""]
        front_rows = [[FAMILIES.get(f, f), label(p), f"{p['accuracy']:.4f}",
                       f"{p['mean_cost']:.1f}", h.fmt(p.get("mean_cost_borderline"), ".1f"),
                       h.fmt(p.get("mean_cost_decisive"), ".1f")]
                      for f, pts in fam.items() for p in h.pareto(pts)]
        lines += ["<details><summary>Test fronts per method (mean cost on the truly "
                  "borderline and decisive test inputs)</summary>", ""] + h.table(
            ["method", "point", "accuracy", "mean cost", "cost borderline", "cost decisive"],
            front_rows, "llrrrr") + ["", "</details>", ""]
        if ideal:
            lines += ["<details><summary>The ideal policy's front (the test bought for the "
                      "most borderline share by the cheap Bayes posterior)</summary>", ""]
            lines += h.table(["share tested", "accuracy", "mean cost", "truly borderline "
                              "tested"], [[f"{q['fraction_tested']:.2f}", f"{q['accuracy']:.4f}",
                                           f"{q['mean_cost']:.1f}",
                                           h.fmt(q["tested_borderline"], ".3f")]
                                          for q in ideal["front"]], "rrrr") + ["", "</details>", ""]
        diffs = [p["raw_check_max_abs_diff"] for p in fam.get("catboost", [])]
        if diffs:
            lines += [f"CatBoost costs: each input's paths walked in the JSON export; the raw "
                      f"scores of that walk against CatBoost's own: max |diff| "
                      f"{max(diffs):.2g}.", ""]
        if ideal:
            cb = best_within(cb_all, COST_SLACK * ideal["mean_cost"])
            lg = first_reaching(lgb, ideal["accuracy"] - TOLERANCE)
            cr = first_reaching(cb_all, ideal["accuracy"] - TOLERANCE)
            sv = selected_on_validation(cb_all, COST_SLACK * ideal["mean_cost"])
            slack = h.interpolated_accuracy(ideal["front"], COST_SLACK * ideal["mean_cost"])
            summary.append([name, f"{ideal['accuracy']:.4f} @ {ideal['mean_cost']:.1f}",
                            h.fmt(slack, ".4f"),
                            f"{cb['accuracy']:.4f} @ {cb['mean_cost']:.1f}" if cb else "none",
                            h.fmt(cb["accuracy"] - ideal["accuracy"], "+.4f") if cb else "",
                            f"{sv['accuracy']:.4f} @ {sv['mean_cost']:.1f} "
                            f"({FAMILIES[sv['family']]})" if sv else "none",
                            h.fmt(cr["mean_cost"], ".1f") if cr else "never",
                            h.fmt(lg["mean_cost"], ".1f") if lg else "never",
                            h.fmt(h.ratio(lg["mean_cost"], cr["mean_cost"]), ".2f")
                            if lg and cr else ""])
    head = ["member", "ideal acc @ cost", f"ideal policy's front at {COST_SLACK:g}x its cost",
            f"best cbudget within {COST_SLACK:g}x",
            "gap", "cbudget chosen on validation within 1.2x (test acc @ cost)",
            f"cbudget cost at ideal - {TOLERANCE * 100:g} pt",
            f"LightGBM cost at ideal - {TOLERANCE * 100:g} pt", "LightGBM / cbudget"]
    goal = []
    if search_summary:
        goal = [f"**The budget search against the goal** (\"goal\": test accuracy >= ideal - "
                f"{TOLERANCE * 100:g} point at test cost <= {COST_SLACK:g}x the ideal's; the "
                "cost ratios at the ideal accuracy - 0.5 point, \"never\": the other method "
                "never reaches it):", ""] + h.table(SEARCH_HEAD, search_summary,
                                                      "lrrcrcrcrcrrrr") + [""]
    return lines[:2] + goal + h.table(head, summary, "lrrrrrrrr") + [""] + lines[2:]


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
