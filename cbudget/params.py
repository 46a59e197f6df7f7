"""Training parameters: names (XGBoost's where one exists, plus LightGBM's num_leaves,
max_bin, min_data_in_leaf), defaults, aliases and validation."""
import numbers

import numpy as np

__all__ = ["DEFAULT_PARAMS", "ALIASES", "resolve_params"]

ALGORITHMS = ("gbdt", "cegb", "greedy_miser", "budget_rf", "cstc", "cscc", "cronus",
              "adapt_gbrt", "adapt_lin")
BOOSTING_ALGORITHMS = ("gbdt", "cegb", "greedy_miser")
# algorithms whose splits pay a feature-cost penalty (``cost_tradeoff``)
COST_AWARE_ALGORITHMS = ("cegb", "greedy_miser")
# trees / cascades of linear classifiers (Xu et al., JMLR 2014); return a ClassifierTree
CLASSIFIER_TREE_ALGORITHMS = ("cstc", "cscc", "cronus")
# gated models (Nan & Saligrama, NIPS 2017); return a GatedModel
ADAPT_ALGORITHMS = ("adapt_gbrt", "adapt_lin")

DEFAULT_PARAMS = {
    "algorithm": "gbdt",           # "cegb": cost-efficient gradient boosting;
                                   # "greedy_miser": stage-wise regression, Xu et al. 2012;
                                   # "budget_rf": feature-budgeted random forest, Nan et
                                   # al. 2015 (returns a Forest); "cstc", "cscc",
                                   # "cronus": trees / cascades of linear classifiers, Xu
                                   # et al. 2014 (return a ClassifierTree / Cascade);
                                   # "adapt_gbrt", "adapt_lin": a gate and a low-cost
                                   # model in front of an expensive one, Nan and
                                   # Saligrama 2017 (return a GatedModel)
    "cost_tradeoff": None,         # lambda of cegb / greedy_miser / adapt_gbrt (default
                                   # 1.0) and of cstc / cscc / cronus / adapt_lin
                                   # (default 0.01); gamma in the ADAPT paper
    "objective": None,             # default reg:squarederror; budget_rf: binary:logistic,
                                   # multi:softprob when num_class is given
    "num_class": None,
    "eval_metric": None,           # default: the objective's
    "base_score": None,            # default: fitted to the labels
    "learning_rate": 0.1,
    "grow_policy": None,           # "lossguide" (best-first) or "depthwise" (level by
                                   # level); default lossguide, depthwise for greedy_miser
    "num_leaves": None,            # default: 31 for lossguide, no cap for depthwise
    "max_depth": None,             # default: none for lossguide, 6 for depthwise (4 for
                                   # greedy_miser)
    "min_child_weight": 1e-3,
    "min_data_in_leaf": 20,
    "reg_lambda": None,            # default 1; 0 for greedy_miser (CART: mean leaves)
    "gamma": 0.0,                  # minimum net gain of a split
    "subsample": 1.0,
    "colsample_bytree": 1.0,
    "seed": 0,
    "n_jobs": None,                # None / -1: all cores
    "verbosity": 1,
    # budget_rf only (see BUDGET_RF_DEFAULTS)
    "alpha": None,
    "impurity": None,
    "path_free": None,
    "n_stumps": None,
    "stump_node_sizes": None,
    "budget": None,
    "n_estimators": None,
    # cstc / cscc / cronus only (see CLASSIFIER_TREE_DEFAULTS)
    "reg_alpha": None,
    "tree_structure": None,
    "loss": None,
    "fine_tune": None,
    "class_weight": None,
    "basis_trees": None,
    "basis_max_depth": None,
    "basis_learning_rate": None,
    "tol": None,
    # adapt_gbrt / adapt_lin only (see ADAPT_DEFAULTS)
    "p_full": None,
    "q_update_period": None,
    "acquisition": None,
    "gate_threshold": None,
    "n_restarts": None,
}

BUDGET_RF_DEFAULTS = {
    "alpha": 0.0,                  # threshold-Pairs alpha: larger -> shallower trees
    "impurity": "threshold_pairs",  # or "gini", "entropy" (not admissible; comparison)
    "path_free": False,            # True: a feature already tested on the path costs 0
    "n_stumps": (80, 40, 20),      # random stumps per feature for nodes of more than
    "stump_node_sizes": (2000, 500),  # 2000, more than 500, or fewer examples; "all":
                                   # every threshold
    "budget": None,                # mean validation cost per input (last eval set)
    "n_estimators": None,          # cap on the trees; default num_boost_round
}
IMPURITIES = ("threshold_pairs", "gini", "entropy")

CLASSIFIER_TREE_DEFAULTS = {
    "cost_tradeoff": 0.01,         # lambda: weight of the relaxed expected feature cost
    "reg_alpha": 0.01,             # rho: l1 weight of every node's coefficients
    "tree_structure": "full",      # "full" tree / cascade of max_depth levels, "prune"
                                   # (bottom-up on validation, 3.6.1) or "greedy"
                                   # (top-down on validation, 3.6.2)
    "loss": "squared",             # the paper's (targets +-1 for binary), or "logistic"
    "fine_tune": True,             # re-fit the leaves without the cost term (3.5)
    "class_weight": None,          # None, "balanced" or [w0, w1] (CSCC's w_y)
    "basis_trees": 0,              # T > 0: the boosting trick (section 5), T CART trees
    "basis_max_depth": 4,          # of this depth by gradient boosting on the labels,
    "basis_learning_rate": 0.1,    # with this learning rate
    "tol": 1e-4,                   # relative objective change that ends a node's /
                                   # the sweeps' iterations
}
ADAPT_DEFAULTS = {
    "p_full": 0.2,                 # at most this fraction of the training inputs goes to
                                   # the expensive model (the q-step's constraint)
    "q_update_period": 10,         # adapt_gbrt: rounds between q-steps (T of Algorithm 2)
    "acquisition": "model",        # adapt_gbrt: "model" -- the paper's u_alpha, a feature
                                   # is free once any tree of g or f1 uses it; "input" --
                                   # CEGB's per-input state, free for the inputs that
                                   # already acquired it (in g or f1)
    "gate_threshold": None,        # an input goes to the expensive model when the gate's
                                   # margin is above it; None: calibrated so that the
                                   # p_full share of the training inputs with the highest
                                   # margins go (0: the paper's sigmoid(g) > 1/2)
    "n_restarts": 4,               # adapt_lin: starts of the alternating minimisation
                                   # (the first from zero, the others from random
                                   # gates); the lowest objective is kept
}
ACQUISITIONS = ("model", "input")
# parameters of one adapt algorithm only
ADAPT_GBRT_ONLY = ("q_update_period", "acquisition")
ADAPT_LIN_ONLY = ("n_restarts",)
TREE_STRUCTURES = ("full", "prune", "greedy")
LOSSES = ("squared", "logistic")
# what budget_rf uses that others do not, and the same for the classifier trees
BUDGET_RF_ONLY = tuple(BUDGET_RF_DEFAULTS)
CLASSIFIER_TREE_ONLY = tuple(name for name in CLASSIFIER_TREE_DEFAULTS
                             if name != "cost_tradeoff")
ADAPT_ONLY = tuple(ADAPT_DEFAULTS)
# what only the boosting algorithms use; given with budget_rf it is an error
BOOSTING_ONLY = ("cost_tradeoff", "base_score", "learning_rate", "grow_policy", "num_leaves",
                 "min_child_weight", "min_data_in_leaf", "reg_lambda", "gamma",
                 "colsample_bytree")

ALIASES = {
    "eta": "learning_rate",
    "lambda": "reg_lambda",
    "min_split_gain": "gamma",
    "max_leaves": "num_leaves",
    "nthread": "n_jobs",
    "random_state": "seed",
    "min_child_samples": "min_data_in_leaf",
    "cegb_tradeoff": "cost_tradeoff",
}


def _number(params, name, *, integer=False, low=None, high=None, low_open=False,
            allow_none=False):
    value = params[name]
    if value is None and allow_none:
        return
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"parameter {name} must be {'an integer' if integer else 'a number'}"
                        f", got {value!r}")
    if value != value:
        raise ValueError(f"parameter {name} is NaN")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"parameter {name} must be {'>' if low_open else '>='} {low}, "
                         f"got {value}")
    if high is not None and value > high:
        raise ValueError(f"parameter {name} must be <= {high}, got {value}")
    params[name] = int(value) if integer else float(value)


def resolve_params(params):
    """Defaults filled in, aliases resolved, every value checked.

    Raises ValueError for an unknown name (listing the valid ones) or a bad value.
    """
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    resolved = dict(DEFAULT_PARAMS)
    seen = {}
    for key, value in params.items():
        name = ALIASES.get(key, key)
        if name not in DEFAULT_PARAMS:
            valid = sorted(set(DEFAULT_PARAMS) | set(ALIASES))
            raise ValueError(f"unknown parameter {key!r}; valid parameters: {', '.join(valid)}")
        if name in seen:
            raise ValueError(f"parameter {name!r} given twice (as {seen[name]!r} and {key!r})")
        seen[name] = key
        resolved[name] = value
    p = resolved
    if p["algorithm"] not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {p['algorithm']!r}; valid: {list(ALGORITHMS)}")
    if p["algorithm"] == "budget_rf":
        return _resolve_budget_rf(p, seen)
    if p["algorithm"] in CLASSIFIER_TREE_ALGORITHMS:
        return _resolve_classifier_tree(p, seen)
    if p["algorithm"] == "adapt_lin":
        return _resolve_adapt_lin(p, seen)
    _refuse(p, seen, BUDGET_RF_ONLY, "apply to algorithm 'budget_rf'")
    _refuse(p, seen, CLASSIFIER_TREE_ONLY, "apply to algorithms 'cstc', 'cscc', 'cronus'")
    if p["algorithm"] == "adapt_gbrt":
        _resolve_adapt(p, seen)
    else:
        _refuse(p, seen, ADAPT_ONLY, "apply to algorithms 'adapt_gbrt', 'adapt_lin'")
    if p["objective"] is None:
        p["objective"] = "reg:squarederror"
    # ADAPT-GBRT's trees are Greedy Miser's (the same cost impurity, first order)
    greedy_miser = p["algorithm"] in ("greedy_miser", "adapt_gbrt")
    if p["algorithm"] in COST_AWARE_ALGORITHMS or p["algorithm"] == "adapt_gbrt":
        if p["cost_tradeoff"] is None:
            p["cost_tradeoff"] = 1.0
        _number(p, "cost_tradeoff", low=0)
        if p["cost_tradeoff"] == float("inf"):
            raise ValueError("parameter cost_tradeoff must be finite")
    elif p["cost_tradeoff"] is not None:
        raise ValueError(f"parameter cost_tradeoff applies to algorithm "
                         f"{' or '.join(map(repr, COST_AWARE_ALGORITHMS))}, not "
                         f"{p['algorithm']!r}")
    if p["grow_policy"] is None:
        p["grow_policy"] = "depthwise" if greedy_miser else "lossguide"
    if p["reg_lambda"] is None:
        p["reg_lambda"] = 0.0 if greedy_miser else 1.0
    if p["grow_policy"] not in ("lossguide", "depthwise"):
        raise ValueError("grow_policy must be 'lossguide' or 'depthwise', "
                         f"got {p['grow_policy']!r}")
    _number(p, "learning_rate", low=0, low_open=True)
    _number(p, "num_leaves", integer=True, low=2, allow_none=True)
    _number(p, "max_depth", integer=True, low=0, allow_none=True)
    if p["max_depth"] == 0:
        p["max_depth"] = None
    if p["grow_policy"] == "lossguide" and p["num_leaves"] is None:
        p["num_leaves"] = 31
    if p["grow_policy"] == "depthwise" and p["max_depth"] is None:
        p["max_depth"] = 4 if greedy_miser else 6
    _number(p, "min_child_weight", low=0)
    _number(p, "min_data_in_leaf", integer=True, low=1)
    _number(p, "reg_lambda", low=0)
    _number(p, "gamma", low=0)
    _number(p, "subsample", low=0, low_open=True, high=1)
    _number(p, "colsample_bytree", low=0, low_open=True, high=1)
    _number(p, "base_score", allow_none=True)
    _check_common(p)
    return p


def _check_common(p):
    """The parameters every algorithm shares."""
    _number(p, "seed", integer=True, low=0)
    _number(p, "n_jobs", integer=True, allow_none=True)
    _number(p, "verbosity", integer=True, low=0)
    _number(p, "num_class", integer=True, low=1, allow_none=True)
    metric = p["eval_metric"]
    if isinstance(metric, str):
        p["eval_metric"] = [metric]
    elif metric is not None:
        if not isinstance(metric, (list, tuple)) or not all(isinstance(m, str) for m in metric):
            raise TypeError("eval_metric must be a str or a list of str")
        p["eval_metric"] = list(metric)
    return p


def _int_tuple(p, name, length):
    value = p[name]
    if (not isinstance(value, (list, tuple)) or len(value) != length
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1
                       for v in value)):
        raise ValueError(f"parameter {name} must be {length} integers >= 1, got {value!r}")
    p[name] = tuple(int(v) for v in value)


def _refuse(p, seen, names, why):
    """ValueError if any of ``names`` was given; otherwise drop them from ``p``."""
    wrong = [seen[name] for name in names if name in seen]
    if wrong:
        raise ValueError(f"parameter(s) {', '.join(map(repr, wrong))} {why}, not to "
                         f"algorithm {p['algorithm']!r}")
    for name in names:
        p.pop(name)


def _resolve_adapt(p, seen):
    """What adapt_gbrt and adapt_lin share: their defaults, a binary logistic
    objective, ``p_full``; the other one's own parameters and row / column sampling are
    refused."""
    gbrt = p["algorithm"] == "adapt_gbrt"
    _refuse(p, seen, ADAPT_LIN_ONLY if gbrt else ADAPT_GBRT_ONLY,
            f"apply to algorithm {'adapt_lin' if gbrt else 'adapt_gbrt'!r}")
    sampled = [seen[name] for name in ("subsample", "colsample_bytree", "base_score")
               if name in seen]
    if sampled:
        raise ValueError(f"parameter(s) {', '.join(map(repr, sampled))} apply to the "
                         f"boosting algorithms, not to algorithm {p['algorithm']!r}")
    for name in ADAPT_ONLY:
        if name in p and p[name] is None and name != "gate_threshold":
            p[name] = ADAPT_DEFAULTS[name]
    if p["objective"] is None:
        p["objective"] = "binary:logistic"
    if p["objective"] != "binary:logistic" or p["num_class"] not in (None, 1):
        raise ValueError(f"{p['algorithm']} is a binary classifier (binary:logistic, labels "
                         f"0/1 or -1/+1), not {p['objective']!r}"
                         + (f" with num_class={p['num_class']}" if p["num_class"] else ""))
    _number(p, "p_full", low=0, high=1)
    _number(p, "gate_threshold", allow_none=True)
    if p["gate_threshold"] is not None and not np.isfinite(p["gate_threshold"]):
        raise ValueError("parameter gate_threshold must be finite")
    if p["algorithm"] == "adapt_gbrt":
        _number(p, "q_update_period", integer=True, low=1)
        if p["acquisition"] not in ACQUISITIONS:
            raise ValueError(f"parameter acquisition must be one of {list(ACQUISITIONS)}, "
                             f"got {p['acquisition']!r}")
    else:
        _number(p, "n_restarts", integer=True, low=1)


def _resolve_adapt_lin(p, seen):
    """adapt_lin: linear gate and predictor; ``cost_tradeoff`` (gamma, default 0.01),
    ``reg_lambda`` (ridge, default 1e-4) and ``tol``; the tree and budget_rf parameters
    are refused."""
    _refuse(p, seen, [n for n in BOOSTING_ONLY if n not in ("cost_tradeoff", "reg_lambda")]
            + ["max_depth", "subsample"], "apply to the tree learners")
    _refuse(p, seen, BUDGET_RF_ONLY, "apply to algorithm 'budget_rf'")
    _refuse(p, seen, [n for n in CLASSIFIER_TREE_ONLY if n != "tol"],
            "apply to algorithms 'cstc', 'cscc', 'cronus'")
    _resolve_adapt(p, seen)
    for name, default in (("cost_tradeoff", 0.01), ("reg_lambda", 1e-4), ("tol", 1e-5)):
        if p[name] is None:
            p[name] = default
        _number(p, name, low=0)
        if p[name] == float("inf"):
            raise ValueError(f"parameter {name} must be finite")
    _number(p, "tol", low=0, low_open=True)
    return _check_common(p)


def _resolve_budget_rf(p, seen):
    """budget_rf: its own defaults; the boosting-only parameters are refused."""
    _refuse(p, seen, BOOSTING_ONLY, "apply to the boosting algorithms")
    _refuse(p, seen, CLASSIFIER_TREE_ONLY, "apply to algorithms 'cstc', 'cscc', 'cronus'")
    _refuse(p, seen, ADAPT_ONLY, "apply to algorithms 'adapt_gbrt', 'adapt_lin'")
    for name, default in BUDGET_RF_DEFAULTS.items():
        if p[name] is None:
            p[name] = default
    if p["objective"] is None:
        p["objective"] = ("multi:softprob" if p["num_class"] not in (None, 1)
                          else "binary:logistic")
    if p["objective"] not in ("binary:logistic", "multi:softprob"):
        raise ValueError("budget_rf is a classifier: objective must be 'binary:logistic' or "
                         f"'multi:softprob', got {p['objective']!r}")
    _number(p, "alpha", low=0)
    if p["alpha"] == float("inf"):
        raise ValueError("parameter alpha must be finite")
    if p["impurity"] not in IMPURITIES:
        raise ValueError(f"parameter impurity must be one of {list(IMPURITIES)}, "
                         f"got {p['impurity']!r}")
    if not isinstance(p["path_free"], bool):
        raise TypeError(f"parameter path_free must be True or False, got {p['path_free']!r}")
    if p["n_stumps"] != "all":
        _int_tuple(p, "n_stumps", 3)
    _int_tuple(p, "stump_node_sizes", 2)
    _number(p, "budget", low=0, allow_none=True)
    _number(p, "n_estimators", integer=True, low=0, allow_none=True)
    _number(p, "max_depth", integer=True, low=0, allow_none=True)
    if p["max_depth"] == 0:
        p["max_depth"] = None
    _number(p, "subsample", low=0, low_open=True, high=1)
    _check_common(p)
    return p


def _resolve_classifier_tree(p, seen):
    """cstc / cscc / cronus: their own defaults; boosting and budget_rf parameters are
    refused. ``max_depth`` is the number of levels (a cascade's stages): default 3 for
    a tree, 4 for a cascade."""
    _refuse(p, seen, [n for n in BOOSTING_ONLY if n != "cost_tradeoff"] + ["subsample"],
            "apply to the boosting algorithms")
    _refuse(p, seen, BUDGET_RF_ONLY, "apply to algorithm 'budget_rf'")
    _refuse(p, seen, ADAPT_ONLY, "apply to algorithms 'adapt_gbrt', 'adapt_lin'")
    for name, default in CLASSIFIER_TREE_DEFAULTS.items():
        if p[name] is None:
            p[name] = default
    if p["objective"] is None:
        p["objective"] = "reg:squarederror"
    if p["objective"] not in ("reg:squarederror", "binary:logistic"):
        raise ValueError(f"{p['algorithm']} fits regression (reg:squarederror) or binary "
                         f"classification (binary:logistic), not {p['objective']!r}")
    if p["num_class"] not in (None, 1):
        raise ValueError(f"{p['algorithm']} is not multi-class: num_class must be None")
    if p["max_depth"] is None:
        p["max_depth"] = 3 if p["algorithm"] == "cstc" else 4
    _number(p, "max_depth", integer=True, low=1, high=12)
    _number(p, "cost_tradeoff", low=0)
    _number(p, "reg_alpha", low=0)
    for name in ("cost_tradeoff", "reg_alpha"):
        if p[name] == float("inf"):
            raise ValueError(f"parameter {name} must be finite")
    _number(p, "basis_trees", integer=True, low=0)
    _number(p, "basis_max_depth", integer=True, low=1)
    _number(p, "basis_learning_rate", low=0, low_open=True)
    _number(p, "tol", low=0, low_open=True)
    if p["tree_structure"] not in TREE_STRUCTURES:
        raise ValueError(f"parameter tree_structure must be one of {list(TREE_STRUCTURES)}, "
                         f"got {p['tree_structure']!r}")
    if p["loss"] not in LOSSES:
        raise ValueError(f"parameter loss must be one of {list(LOSSES)}, got {p['loss']!r}")
    if p["loss"] == "logistic" and p["objective"] != "binary:logistic":
        raise ValueError("loss 'logistic' needs objective 'binary:logistic'")
    if not isinstance(p["fine_tune"], bool):
        raise TypeError(f"parameter fine_tune must be True or False, got {p['fine_tune']!r}")
    weight = p["class_weight"]
    if weight is not None:
        if p["objective"] != "binary:logistic":
            raise ValueError("class_weight needs objective 'binary:logistic'")
        if weight != "balanced":
            if (not isinstance(weight, (list, tuple)) or len(weight) != 2
                    or not all(isinstance(w, numbers.Real) and not isinstance(w, bool)
                               and w > 0 and w < float("inf") for w in weight)):
                raise ValueError("parameter class_weight must be None, 'balanced' or two "
                                 f"finite numbers > 0 [w0, w1], got {weight!r}")
            p["class_weight"] = [float(w) for w in weight]
    return _check_common(p)
