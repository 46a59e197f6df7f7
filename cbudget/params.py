"""Training parameters: names (XGBoost's where one exists, plus LightGBM's num_leaves,
max_bin, min_data_in_leaf), defaults, aliases and validation."""
import numbers

__all__ = ["DEFAULT_PARAMS", "ALIASES", "resolve_params"]

ALGORITHMS = ("gbdt", "cegb", "greedy_miser")
# algorithms whose splits pay a feature-cost penalty (``cost_tradeoff``)
COST_AWARE_ALGORITHMS = ("cegb", "greedy_miser")

DEFAULT_PARAMS = {
    "algorithm": "gbdt",           # "cegb": cost-efficient gradient boosting;
                                   # "greedy_miser": stage-wise regression, Xu et al. 2012
    "cost_tradeoff": None,         # lambda of cegb / greedy_miser (default 1.0)
    "objective": "reg:squarederror",
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
}

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
    greedy_miser = p["algorithm"] == "greedy_miser"
    if p["algorithm"] in COST_AWARE_ALGORITHMS:
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
    _number(p, "seed", integer=True, low=0)
    _number(p, "n_jobs", integer=True, allow_none=True)
    _number(p, "verbosity", integer=True, low=0)
    _number(p, "num_class", integer=True, low=1, allow_none=True)
    _number(p, "base_score", allow_none=True)
    metric = p["eval_metric"]
    if isinstance(metric, str):
        p["eval_metric"] = [metric]
    elif metric is not None:
        if not isinstance(metric, (list, tuple)) or not all(isinstance(m, str) for m in metric):
            raise TypeError("eval_metric must be a str or a list of str")
        p["eval_metric"] = list(metric)
    return p
