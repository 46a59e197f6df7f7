"""scikit-learn's fitted tree models as cbudget models (docs/architecture.md,
"Interoperability"): their trees rewritten into cbudget's ``x <= threshold`` convention,
so that every cbudget cost method and on-demand prediction applies to them.

scikit-learn is imported only when a model is converted: cbudget does not need it.
"""
from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..booster import Booster
from ..categories import NO_CATEGORIES, Categories
from ..category_bins import MAX_CATEGORY_CODE
from ..costs import CostGroups, CostModel, FeatureCosts, GroupCosts
from ..forest import Forest
from .trees import (
    COST_ARGUMENTS,
    bitset_of_codes,
    build_tree,
    cost_model_for,
    describe_source,
    finite_thresholds,
    float32_at_most_thresholds,
    imported_booster,
    imported_forest,
    preorder,
    source_feature_names,
)

__all__ = ["from_sklearn", "SUPPORTED_ESTIMATORS"]

# the classes from_sklearn converts (their subclasses too, e.g. the single ExtraTree*)
SUPPORTED_ESTIMATORS = (
    "DecisionTreeRegressor", "DecisionTreeClassifier",
    "RandomForestRegressor", "RandomForestClassifier",
    "ExtraTreesRegressor", "ExtraTreesClassifier",
    "GradientBoostingRegressor", "GradientBoostingClassifier",
    "HistGradientBoostingRegressor", "HistGradientBoostingClassifier",
)

# losses whose prediction is the raw score itself (an identity link)
IDENTITY_LOSSES = ("squared_error", "absolute_error", "huber", "quantile")
# DummyClassifier strategies whose class probabilities do not depend on X
# ("stratified" draws them at random)
CONSTANT_DUMMY_STRATEGIES = ("prior", "uniform", "most_frequent", "constant")

# HistGradientBoosting* keep their trees in this private attribute, a list per iteration
# of TreePredictor objects (one per output): scikit-learn has no public API for them.
# Read through getattr so that the attribute's name is stated in one place.
HGB_PREDICTORS = "_predictors"
# With categorical features, HistGradientBoosting* encode X first (a ColumnTransformer:
# an OrdinalEncoder of the categorical columns, then the numeric ones, so the trees'
# feature indices are in that order) and bin it; the encoder's categories are the
# levels, the bin mapper knows which codes training saw. Private too.
HGB_PREPROCESSOR = "_preprocessor"
HGB_BIN_MAPPER = "_bin_mapper"


def from_sklearn(estimator: Any, *, feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None,
                 group_costs: GroupCosts | None = None,
                 coupled_costs: FeatureCosts | None = None, split_cost: float = 0.0,
                 tree_cost: float = 0.0, default_cost: float | None = None,
                 feature_names: Sequence[str] | None = None) -> Booster | Forest:
    """A fitted scikit-learn tree model as a cbudget model with a cost model.

    ===================================  ===================================================
    scikit-learn estimator               cbudget model
    ===================================  ===================================================
    DecisionTreeRegressor                Booster ``reg:squarederror``: one tree, base 0
    RandomForestRegressor,               Booster ``reg:squarederror``: one tree per round,
    ExtraTreesRegressor                  leaf values / n_estimators (the mean), base 0
    DecisionTreeClassifier               Forest (``vote == "average"``) of one tree
    RandomForestClassifier,              Forest (``vote == "average"``): the average of
    ExtraTreesClassifier                 the trees' class distributions
    GradientBoostingRegressor,           Booster ``reg:squarederror``: leaf values x
    HistGradientBoostingRegressor        learning rate, base score the init's constant
    GradientBoostingClassifier,          Booster ``binary:logistic`` (two classes) or
    HistGradientBoostingClassifier       ``multi:softprob`` (one tree per class and stage)
    ===================================  ===================================================

    Predictions equal scikit-learn's (up to rounding): ``predict`` of a regressor,
    ``predict_proba`` of a classifier (Forest and Booster ``predict``), and
    ``decision_function`` of gradient boosting (``predict(X, output_margin=True)``).
    Classes are indices ``0..K-1``: ``estimator.classes_[pred]`` are scikit-learn's.

    Routing is scikit-learn's: trees with a ``tree_`` compare ``float32(x) <= t``, which
    becomes cbudget's float64 ``x <= T`` (:func:`cbudget.interop.trees.
    float32_at_most_thresholds`), so float64 inputs go where scikit-learn's float32 cast
    sends them; HistGradientBoosting compares float64 already. NaN follows each split's
    ``missing_go_to_left``; where scikit-learn rejects NaN (gradient boosting, trees
    fitted without missing-value support) cbudget routes it that way all the same. A
    split that sends only NaN right (threshold ``inf``) gets the largest finite
    threshold: ``+inf`` inputs, which scikit-learn rejects, go right.

    HistGradientBoosting's categorical splits become cbudget categorical splits. It
    encodes a categorical column's values as their positions among the sorted training
    values (its ``OrdinalEncoder``) and sends a value it did not see in training the
    missing way; cbudget sends a category no split lists right, so a split whose missing
    values go left lists the known categories going right, with its children swapped.
    When the training values are integers 0 .. 65,535 (integer-coded columns) the
    model's categories are those integers, so NumPy arrays and DataFrames predict as in
    scikit-learn; otherwise (strings, fractions) the levels are the encoder's, a
    DataFrame is mapped by level and a NumPy array must hold the codes. Fractional
    values of an integer-coded column are truncated here, unknown (missing) there.

    Refused: multi-output estimators, classifiers of one class, the
    ``poisson`` and ``gamma`` losses of HistGradientBoostingRegressor (a log link), the
    ``exponential`` loss of GradientBoostingClassifier (its probabilities are not a
    sigmoid of the raw score), an ``init`` estimator whose prediction depends on the
    input (ValueError); estimators of other classes, Pipelines included (TypeError: pass
    the final estimator and transform X yourself).

    Parameters
    ----------
    estimator : fitted scikit-learn estimator of a class in the table
    {cost_arguments}

    Returns
    -------
    Booster or Forest
        With ``algorithm == "imported"`` and ``imported_from`` naming scikit-learn, its
        version and the estimator's class.

    Raises
    ------
    TypeError
        The estimator is not of a supported class.
    ValueError
        Not fitted, or a refused model (above).
    """
    converter = _converter_of(estimator)
    name = type(estimator).__name__
    _check_convertible(estimator, name)
    n_features = int(estimator.n_features_in_)
    names = source_feature_names(getattr(estimator, "feature_names_in_", None),
                                 feature_names, n_features)
    cost_model = cost_model_for(names, feature_costs=feature_costs, cost_groups=cost_groups,
                                group_costs=group_costs, coupled_costs=coupled_costs,
                                split_cost=split_cost, tree_cost=tree_cost,
                                default_cost=default_cost)
    return converter(estimator, names, cost_model)


# the cost arguments are documented once, for every importer
from_sklearn.__doc__ = (from_sklearn.__doc__ or "").replace("{cost_arguments}", COST_ARGUMENTS)


# -- dispatch and checks ------------------------------------------------------------------
def _converter_of(estimator: Any) -> Callable[[Any, list[str], CostModel], Booster | Forest]:
    """The converter of the estimator's class; TypeError for any other class."""
    try:      # scikit-learn is only needed when there is a model of it to convert
        from sklearn import ensemble, tree
    except ImportError:
        raise _unsupported(estimator) from None
    converters: list[tuple[tuple[type, ...], Callable[..., Booster | Forest]]] = [
        ((tree.DecisionTreeRegressor, ensemble.RandomForestRegressor,
          ensemble.ExtraTreesRegressor), _tree_regressor),
        ((tree.DecisionTreeClassifier, ensemble.RandomForestClassifier,
          ensemble.ExtraTreesClassifier), _tree_classifier),
        ((ensemble.GradientBoostingRegressor, ensemble.GradientBoostingClassifier),
         _gradient_boosting),
        ((ensemble.HistGradientBoostingRegressor,
          ensemble.HistGradientBoostingClassifier), _hist_gradient_boosting),
    ]
    for classes, converter in converters:
        if isinstance(estimator, classes):
            return converter
    raise _unsupported(estimator)


def _unsupported(estimator: Any) -> TypeError:
    """The error for an estimator of a class from_sklearn does not convert."""
    advice = (" For a Pipeline, convert its final estimator (pipeline[-1]) and transform "
              "X with the steps before it (pipeline[:-1].transform) yourself."
              if hasattr(estimator, "steps") else "")
    return TypeError(f"from_sklearn converts fitted {', '.join(SUPPORTED_ESTIMATORS)}; "
                     f"got {type(estimator).__name__}.{advice}")


def _check_convertible(estimator: Any, name: str) -> None:
    """ValueError for an estimator that is not fitted or has several outputs."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        raise NotFittedError(f"this {name} is not fitted: fit it before converting it "
                             "with from_sklearn") from None
    if getattr(estimator, "n_outputs_", 1) > 1:
        raise ValueError(f"this {name} has {estimator.n_outputs_} outputs; from_sklearn "
                         "converts single-output estimators only")


def _source(estimator: Any, **more: Any) -> dict[str, str]:
    """The ``imported_from`` section of a scikit-learn estimator."""
    import sklearn
    return describe_source("scikit-learn", sklearn.__version__, type(estimator).__name__,
                           **more)


# -- trees with a tree_ (DecisionTree*, forests, GradientBoosting*) -----------------------
def _sklearn_tree(estimator: Any, *, n_features: int, where: str,
                  leaf_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cbudget tree of a fitted tree estimator's ``tree_`` with the given per-node
    ``leaf_values`` (in scikit-learn's node numbering), and per cbudget node the
    scikit-learn node it is.

    Thresholds: scikit-learn sends ``x`` left when ``float32(x) <= threshold``
    (:func:`float32_at_most_thresholds`). ``gain`` is the weighted impurity decrease
    (scikit-learn's feature importance before normalising), ``n_samples`` the training
    examples at the node.
    """
    t = estimator.tree_
    left, right = t.children_left, t.children_right
    weights = t.weighted_n_node_samples * t.impurity
    internal = left != -1
    gain = np.zeros(t.node_count)
    gain[internal] = (weights[internal] - weights[left[internal]]
                      - weights[right[internal]])
    # missing_go_to_left exists since scikit-learn 1.3 (cbudget supports 1.6 and later);
    # a tree fitted without NaN has it too, as where its predict sends NaN
    return _renumbered(left, right, t.feature,
                       float32_at_most_thresholds(finite_thresholds(t.threshold)),
                       t.missing_go_to_left, leaf_values, n_features=n_features,
                       where=where, gain=gain, n_samples=t.n_node_samples)


def _renumbered(left: np.ndarray, right: np.ndarray, feature: np.ndarray,
                threshold: np.ndarray, default_left: np.ndarray, value: np.ndarray, *,
                n_features: int, where: str, gain: np.ndarray, n_samples: np.ndarray,
                categorical: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`build_tree` of a source tree, and per cbudget node the source node it is
    (scikit-learn's best-first trees, those with ``max_leaf_nodes``, number children out
    of depth-first order; a forest needs the order to put each node's class distribution
    on the right row)."""
    tree = build_tree(left, right, feature, threshold, default_left, value,
                      n_features=n_features, where=where, gain=gain, n_samples=n_samples,
                      categorical=categorical)
    return tree, preorder(left, right, where=where)[0]


def _forest_members(estimator: Any) -> list[Any]:
    """The fitted trees: a forest's ``estimators_``, or the single tree itself."""
    return list(getattr(estimator, "estimators_", [estimator]))


def _tree_regressor(estimator: Any, names: list[str], cost_model: CostModel) -> Booster:
    """DecisionTreeRegressor, RandomForestRegressor, ExtraTreesRegressor: a Booster whose
    rounds are the trees, each leaf holding its share of the mean."""
    members = _forest_members(estimator)
    rounds = [[_sklearn_tree(member, n_features=len(names), where=f"tree {i}",
                             leaf_values=member.tree_.value[:, 0, 0] / len(members))[0]]
              for i, member in enumerate(members)]
    return imported_booster(rounds, objective="reg:squarederror", num_class=1,
                            base_score=[0.0], feature_names=names, cost_model=cost_model,
                            imported_from=_source(estimator))


def _tree_classifier(estimator: Any, names: list[str], cost_model: CostModel) -> Forest:
    """DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier: a Forest
    averaging its trees' class distributions; its class prior (the prediction of no tree)
    is the mean of the trees' root distributions, the (bootstrap, class-weighted) class
    frequencies."""
    members = _forest_members(estimator)
    trees, distributions = [], []
    for i, member in enumerate(members):
        # per node the class distribution, as DecisionTreeClassifier.predict_proba
        # normalises it (tree_.value holds weighted counts before scikit-learn 1.4)
        counts = member.tree_.value[:, 0, :].astype(np.float64)
        totals = counts.sum(axis=1, keepdims=True)
        distribution = counts / np.where(totals > 0, totals, 1.0)
        tree, source = _sklearn_tree(member, n_features=len(names), where=f"tree {i}",
                                     leaf_values=np.zeros(len(counts)))
        trees.append(tree)
        distributions.append(distribution[source])
    num_class = distributions[0].shape[1]
    if num_class < 2:
        raise ValueError(f"this {type(estimator).__name__} was fitted to one class; a "
                         "cbudget Forest needs two or more")
    prior = np.mean([d[0] for d in distributions], axis=0)
    if not prior.sum() > 0:
        prior = np.full(num_class, 1.0 / num_class)
    return imported_forest(trees, distributions, num_class=num_class, class_prior=prior,
                           feature_names=names, cost_model=cost_model,
                           imported_from=_source(estimator))


# -- gradient boosting ------------------------------------------------------------------
def _objective_of(estimator: Any, name: str, n_outputs: int) -> tuple[str, int]:
    """The cbudget objective and num_class of a gradient boosting model; ValueError for a
    loss whose prediction is not the identity, sigmoid or softmax of the raw score."""
    loss = estimator.loss
    if not hasattr(estimator, "classes_"):
        if loss not in IDENTITY_LOSSES:
            raise ValueError(f"{name} with loss={loss!r} is not supported: its prediction "
                             "is not the raw score (a log link); from_sklearn converts "
                             f"the losses {', '.join(IDENTITY_LOSSES)}")
        return "reg:squarederror", 1
    if loss != "log_loss":
        raise ValueError(f"{name} with loss={loss!r} is not supported: its class "
                         "probabilities are not the sigmoid / softmax of the raw score "
                         "(only loss='log_loss' is)")
    return ("binary:logistic", 1) if n_outputs == 1 else ("multi:softprob", n_outputs)


def _raw_prediction(estimator: Any, X: np.ndarray) -> np.ndarray:
    """scikit-learn's raw score of ``X``, (n_samples, n_outputs): ``decision_function``
    of a classifier, ``predict`` of a regressor (an identity link)."""
    with warnings.catch_warnings():       # fitted on a DataFrame, given an array
        warnings.simplefilter("ignore", UserWarning)
        raw = (estimator.decision_function(X) if hasattr(estimator, "classes_")
               else estimator.predict(X))
    return np.asarray(raw, dtype=np.float64).reshape(X.shape[0], -1)


def _boosted(estimator: Any, rounds: list[list[np.ndarray]], names: list[str],
             cost_model: CostModel, objective: str, num_class: int,
             categories: Categories = NO_CATEGORIES,
             bitsets: list[list[list[np.ndarray]]] | None = None,
             probe: tuple[Any, np.ndarray] | None = None) -> Booster:
    """The imported Booster of a gradient boosting model's rounds, with its base score:
    scikit-learn's raw score minus the trees' sum at one input (``probe``: that input as
    scikit-learn and as cbudget read it; default all zeros). The initial raw score is
    a constant (checked by the caller), and deriving it this way does not depend on how
    a scikit-learn version computes it from the init estimator or the baseline."""
    model = imported_booster(rounds, objective=objective, num_class=num_class,
                             base_score=np.zeros(num_class),
                             feature_names=names, cost_model=cost_model,
                             imported_from=_source(estimator, loss=estimator.loss),
                             categories=categories, bitsets=bitsets)
    source_x0, x0 = probe if probe is not None else (np.zeros((1, len(names))),) * 2
    base = (_raw_prediction(estimator, source_x0)
            - np.asarray(model.predict(x0, output_margin=True)).reshape(1, -1))[0]
    if base.shape != (model.n_outputs,) or not np.all(np.isfinite(base)):
        raise ValueError(f"the initial raw score of this {type(estimator).__name__} is "
                         "not finite")
    model.base_score = base
    return model


def _gradient_boosting(estimator: Any, names: list[str], cost_model: CostModel) -> Booster:
    """GradientBoostingRegressor / Classifier: ``estimators_[stage, k]`` is the tree of
    output ``k`` in round ``stage``, its leaf values scaled by the learning rate as
    scikit-learn scales them in prediction."""
    name = type(estimator).__name__
    stages = estimator.estimators_
    objective, num_class = _objective_of(estimator, name, stages.shape[1])
    from sklearn.dummy import DummyClassifier, DummyRegressor
    init = estimator.init_
    constant_init = (isinstance(init, str) and init == "zero") or isinstance(
        init, DummyRegressor) or (isinstance(init, DummyClassifier)
                                  and init.strategy in CONSTANT_DUMMY_STRATEGIES)
    if not constant_init:
        raise ValueError(f"{name} with init={type(init).__name__} is not supported: its "
                         "initial prediction depends on the input, which no base score "
                         "holds (the default init, a DummyRegressor or DummyClassifier "
                         "of a constant strategy, or 'zero' are)")
    rate = float(estimator.learning_rate)
    rounds = [[_sklearn_tree(member, n_features=len(names), where=f"stage {s} tree {k}",
                             leaf_values=rate * member.tree_.value[:, 0, 0])[0]
               for k, member in enumerate(stage)]
              for s, stage in enumerate(stages)]
    return _boosted(estimator, rounds, names, cost_model, objective, num_class)


def _hist_gradient_boosting(estimator: Any, names: list[str],
                            cost_model: CostModel) -> Booster:
    """HistGradientBoostingRegressor / Classifier: the trees of each iteration (their leaf
    values include the learning rate). They compare float64 ``x <= num_threshold`` (the
    estimator casts X to float64), so thresholds are kept."""
    name = type(estimator).__name__
    predictors = getattr(estimator, HGB_PREDICTORS)
    objective, num_class = _objective_of(estimator, name,
                                         int(estimator.n_trees_per_iteration_))
    coding = _HGBCategories(estimator, len(names))
    rounds, bitsets = [], []
    for i, per_iteration in enumerate(predictors):
        trees, tree_bitsets = [], []
        for k, predictor in enumerate(per_iteration):
            where = f"iteration {i} tree {k}"
            nodes = predictor.nodes
            leaf = nodes["is_leaf"] != 0
            left = np.where(leaf, -1, nodes["left"].astype(np.int64))
            right = np.where(leaf, -1, nodes["right"].astype(np.int64))
            categorical = (nodes["is_categorical"] != 0) & ~leaf
            threshold = finite_thresholds(nodes["num_threshold"])
            default_left = nodes["missing_go_to_left"] != 0
            swapped = categorical & default_left
            listed = []
            for j, node in enumerate(np.flatnonzero(categorical).tolist()):
                listed.append(coding.bitset(predictor, nodes[node], where))
                threshold[node] = j
            # a swapped split lists the categories going right (see from_sklearn)
            left, right = np.where(swapped, right, left), np.where(swapped, left, right)
            tree, _ = _renumbered(
                left, right, coding.original[nodes["feature_idx"]], threshold,
                default_left & ~categorical, nodes["value"], n_features=len(names),
                where=where, gain=np.where(leaf, 0.0, nodes["gain"]),
                n_samples=nodes["count"], categorical=categorical)
            trees.append(tree)
            tree_bitsets.append(listed)
        rounds.append(trees)
        bitsets.append(tree_bitsets)
    return _boosted(estimator, rounds, names, cost_model, objective, num_class,
                    categories=coding.categories, bitsets=bitsets,
                    probe=coding.probe(estimator, len(names)))


class _HGBCategories:
    """How a HistGradientBoosting model codes its categorical features: the original
    column of each of the trees' feature indices, the cbudget categories, and per split
    the bitset of the categories cbudget sends left (see :func:`from_sklearn`)."""

    def __init__(self, estimator: Any, n_features: int) -> None:
        mask = getattr(estimator, "is_categorical_", None)
        features = np.flatnonzero(mask) if mask is not None else np.zeros(0, np.int64)
        self.original = np.arange(n_features)
        self.categories = NO_CATEGORIES
        if not features.size:
            return
        # the encoder's output: the categorical columns, then the numeric ones
        self.original = np.concatenate([features, np.flatnonzero(~np.asarray(mask))])
        encoder = getattr(estimator, HGB_PREPROCESSOR).named_transformers_["encoder"]
        self.known, self.known_row = getattr(
            estimator, HGB_BIN_MAPPER).make_known_categories_bitsets()
        # per categorical feature (in the trees' order) the value of each code, when the
        # values are integer codes themselves
        self.values: list[np.ndarray | None] = []
        self.first: list[Any] = []      # a known category (missing if none)
        levels: list[list[Any] | None] = []
        for categories in encoder.categories_:
            # the encoder lists the missing value (None or NaN) last, as a category
            present = [v.item() if isinstance(v, np.generic) else v for v in categories
                       if isinstance(v, (str, numbers.Number)) and v == v]
            values = np.asarray(present, dtype=np.float64) if not any(
                isinstance(v, str) for v in present) else None
            integer = values is not None and bool(np.all(
                (values == np.floor(values)) & (values >= 0) & (values <= MAX_CATEGORY_CODE)))
            self.values.append(values if integer else None)
            self.first.append(present[0] if present else np.nan)
            levels.append(None if integer else present if values is None
                          else values.tolist())
        self.categories = Categories(features, levels)

    def probe(self, estimator: Any, n_features: int) -> tuple[Any, np.ndarray]:
        """One input as scikit-learn reads it (each categorical column its first known
        category, the others 0; a DataFrame of the training columns when it was fitted
        on one) and as the imported model reads it (codes)."""
        codes = np.zeros((1, n_features))
        row: list[Any] = [0.0] * n_features
        for j, m in enumerate(self.categories.features.tolist()):
            row[m] = self.first[j]
            values = self.values[j]
            codes[0, m] = (values[0] if values is not None and values.size
                           else 0.0 if self.first[j] == self.first[j] else np.nan)
        columns = getattr(estimator, "feature_names_in_", None)
        if columns is None:
            return np.array([row], dtype=object if any(
                isinstance(v, str) for v in row) else np.float64), codes
        import pandas
        return pandas.DataFrame([row], columns=columns), codes

    def bitset(self, predictor: Any, node: Any, where: str) -> np.ndarray:
        """The bitset of a categorical split: the known categories going left, or, when
        its missing values (and so its unknown categories) go left, those going right."""
        feature = int(node["feature_idx"])
        bits = (predictor.raw_left_cat_bitsets[int(node["bitset_idx"])],
                self.known[int(self.known_row[feature])])
        goes_left, known = (np.unpackbits(np.ascontiguousarray(b, dtype="<u4").view(
            np.uint8), bitorder="little").astype(bool) for b in bits)
        chosen = known & (~goes_left if node["missing_go_to_left"] else goes_left)
        codes = np.flatnonzero(chosen)
        values = self.values[feature]
        return bitset_of_codes(codes if values is None else values[codes], where)
