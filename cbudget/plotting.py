"""Plots of what a model's predictions cost: accuracy against cost, cost frontiers of
several models, which features the inputs buy, and one tree with its per-node costs.

Every function draws with matplotlib (an optional dependency: ``pip install matplotlib``
or ``pip install cbudget[plot]``) on the ``ax`` it is given, or on a new figure, and
returns the axes. :func:`to_graphviz` gives a tree as Graphviz DOT text without needing
matplotlib or graphviz.

>>> from cbudget.plotting import plot_acquisition, plot_cost_curve, plot_tree
>>> ax = plot_cost_curve(booster, dvalid)            # metric against mean cost per round
>>> plot_acquisition(booster, X_test, cost_weighted=True)
>>> plot_tree(booster, 0, X=X_test, max_depth=3)
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ._ensemble import TreeEnsemble
from ._model import Model, NotApplicableError
from .adapt import GatedModel, LinearClassifier
from .booster import Booster
from .category_bins import bitset_codes
from .cost_path import pareto_mask
from .cstc import ClassifierTree
from .dataset import Dataset, InputData
from .explain import Explanation
from .forest import Forest
from .metrics import METRICS, check_metric, evaluate_on, is_metric, metric_maximize

if TYPE_CHECKING:  # only for type hints: matplotlib is imported when a plot is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_cost_curve", "plot_frontier", "plot_acquisition", "plot_tree", "to_graphviz",
           "plot_explanation"]

COST_LABEL = "mean cost per input"
GATED_PARTS = ("gate", "predictor", "expensive")
# how many feature names a linear node's box lists before "+k more"
NODE_FEATURES_SHOWN = 3
# metrics that are not cbudget's but whose direction plot_frontier knows
HIGHER_IS_BETTER = ("accuracy",)


def _pyplot() -> ModuleType:
    """matplotlib.pyplot, or an ImportError that says how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("cbudget.plotting needs matplotlib: pip install matplotlib (or "
                          "cbudget[plot])") from exc
    return plt


def _axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.8)
          ) -> tuple[Axes, Figure | None]:
    """``ax``, or the axes of a new figure; and the new figure (None for ``ax``: its
    figure's layout is the caller's)."""
    if ax is not None:
        return ax, None
    figure, new_ax = _pyplot().subplots(figsize=figsize)
    return new_ax, figure


def _finish(ax: Axes, new_figure: Figure | None) -> Axes:
    if new_figure is not None:      # room for the labels and the title
        new_figure.tight_layout()
    return ax


def _check_model(model: Any) -> Model:
    """The cbudget model of ``model``: itself, or a fitted cbudget estimator's
    (``cbudget.sklearn``, its ``model_``)."""
    if not isinstance(model, Model) and isinstance(getattr(model, "model_", None), Model):
        return model.model_
    if not isinstance(model, Model):
        hint = ""
        if hasattr(model, "steps"):
            hint = ("; for a pipeline, give its last step (pipeline[-1]) and the data "
                    "transformed by the others (pipeline[:-1].transform(X))")
        elif type(model).__module__.startswith("cbudget"):
            hint = "; fit the estimator first"
        raise TypeError(f"model must be a cbudget model (Booster, Forest, ClassifierTree, "
                        f"Cascade, GatedModel) or a fitted cbudget.sklearn estimator, got "
                        f"{type(model).__name__}{hint}")
    return model


# cost axes: a linear axis squeezes cheap models into a spike when the costs span more
# than this ratio (largest to smallest positive)
LOG_SCALE_SPAN = 30.0
XSCALES = ("auto", "linear", "log", "symlog")


def _set_cost_scale(ax: Axes, costs: np.ndarray, xscale: str) -> None:
    """The cost axis's scale: ``xscale``, or for "auto" chosen by the costs: log when
    they are positive and span more than :data:`LOG_SCALE_SPAN`, symlog (linear below
    the smallest positive cost) when some are 0, else linear (an axis another call made
    logarithmic stays so)."""
    if xscale not in XSCALES:
        raise ValueError(f"xscale must be one of {XSCALES}, got {xscale!r}")
    positive = costs[np.isfinite(costs) & (costs > 0)]
    if xscale == "auto":
        if ax.get_xscale() != "linear" or positive.size == 0 \
                or positive.max() <= LOG_SCALE_SPAN * positive.min():
            return
        xscale = "log" if positive.size == costs.size else "symlog"
    if xscale == "symlog":
        ax.set_xscale("symlog", linthresh=float(positive.min()) if positive.size else 1.0)
    else:
        ax.set_xscale(xscale)


# -- accuracy against cost ---------------------------------------------------------------
def plot_cost_curve(model: Model, data: Dataset, *, metric: str | None = None,
                    ax: Axes | None = None, label: str | None = None,
                    xscale: str = "auto", **plot_kwargs: Any) -> Axes:
    """The metric on ``data`` against the mean prediction cost per input of ``data``.

    For a model built in stages (a Booster's rounds, a Forest's trees) one point per
    iteration, joined: ``x = model.cost_curve(data)``, ``y = model.staged_scores(data,
    metric)`` (all iterations, also those after ``best_iteration``). Any other model
    (ClassifierTree, Cascade, GatedModel) is one point: its mean cost and its metric.

    Parameters
    ----------
    model : cbudget.Model
    data : cbudget.Dataset with labels
        Validation data.
    metric : str, optional
        A metric of ``cbudget.metrics.METRICS`` that applies to the model's objective,
        or a ranking metric (``ndcg@5``: ``data`` needs query groups). Default: the
        model's (``model.default_metric``).
    ax : matplotlib Axes, optional
        Drawn on a new figure when not given.
    label : str, optional
        Legend entry. Default: the model's algorithm.
    xscale : {"auto", "linear", "log", "symlog"}, default "auto"
        The cost axis's scale; "auto": logarithmic when the costs span more than 30x
        (symlog when some are 0), so that cheap models are not squeezed together.
    **plot_kwargs
        Passed to ``ax.plot`` (color, linestyle, marker...).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        For a model that is not a cbudget model, or data that is not a labelled Dataset.
    ValueError
        For a metric that does not apply, or a staged model without iterations.
    """
    model = _check_model(model)
    if not isinstance(data, Dataset) or data.label is None:
        raise TypeError("data must be a cbudget.Dataset with labels")
    metric = metric or model.default_metric
    check_metric(metric, model.objective)
    try:
        costs = model.cost_curve(data)
    except NotApplicableError:      # optimised as a whole: the model is one point
        costs = np.array([model.predict_cost(data).mean()])
        scores = np.array([evaluate_on(metric, data, model.predict(data))])
        plot_kwargs.setdefault("marker", "o")
    else:
        if costs.size == 0:
            raise ValueError("the model has no iterations: there is no curve to draw")
        scores = model.staged_scores(data, metric)
    ax, new_figure = _axes(ax)
    ax.plot(costs, scores, label=label if label is not None else model.algorithm,
            **plot_kwargs)
    _set_cost_scale(ax, np.asarray(costs, dtype=float), xscale)
    ax.set_xlabel(COST_LABEL)
    ax.set_ylabel(metric)
    ax.legend()
    return _finish(ax, new_figure)


# -- frontiers ---------------------------------------------------------------------------
@dataclass
class FrontierPath:
    """One entry of :func:`plot_frontier`'s ``paths``, validated."""
    costs: np.ndarray
    scores: np.ndarray
    pareto: np.ndarray | None = None
    metric: str | None = None


def _frontier_path(label: str, path: Any) -> FrontierPath:
    """A path given as a pair (costs, scores) or an object with ``costs`` and ``scores``
    (and optionally ``pareto`` and ``metric``), checked."""
    if isinstance(path, (tuple, list)):
        if len(path) != 2:
            raise ValueError(f"paths[{label!r}]: a pair (costs, scores) has 2 entries, "
                             f"got {len(path)}")
        costs, scores, pareto, metric = path[0], path[1], None, None
    elif hasattr(path, "costs") and hasattr(path, "scores"):
        costs, scores = path.costs, path.scores
        pareto, metric = getattr(path, "pareto", None), getattr(path, "metric", None)
    else:
        raise TypeError(f"paths[{label!r}] must be a pair (costs, scores) or an object with "
                        f"attributes costs and scores, got {type(path).__name__}")
    costs = np.asarray(costs, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if costs.ndim != 1 or costs.shape != scores.shape or costs.size == 0:
        raise ValueError(f"paths[{label!r}]: costs and scores must be 1-d arrays of the same "
                         f"non-zero length, got shapes {costs.shape} and {scores.shape}")
    if not np.all(np.isfinite(costs)):
        raise ValueError(f"paths[{label!r}]: costs must be finite")
    if pareto is not None:
        pareto = np.asarray(pareto)
        if pareto.dtype != bool or pareto.shape != costs.shape:
            raise ValueError(f"paths[{label!r}].pareto must be a bool array of the costs' "
                             f"shape {costs.shape}")
    if metric is not None and not isinstance(metric, str):
        raise TypeError(f"paths[{label!r}].metric must be a str")
    return FrontierPath(costs, scores, pareto, metric)


def _metric_direction(metric: str | None, maximize: bool | None) -> bool | None:
    if maximize is not None:
        return bool(maximize)
    if metric is not None and is_metric(metric):
        return metric_maximize(metric)
    if metric in HIGHER_IS_BETTER:
        return True
    return None


def plot_frontier(paths: Mapping[str, Any], *, ax: Axes | None = None,
                  metric: str | None = None, pareto_only: bool = False,
                  maximize: bool | None = None, xscale: str = "auto") -> Axes:
    """Score-against-cost frontiers of several models or libraries, one colour each: the
    Pareto-optimal points as a line with markers, the others faint.

    Parameters
    ----------
    paths : dict {label: path}
        A path is a pair of arrays ``(costs, scores)`` (mean cost per input, and the
        metric, of each model), or an object with attributes ``costs`` and ``scores``
        and optionally ``pareto`` (bool array: the Pareto-optimal points) and ``metric``
        (str), such as ``cbudget.cost_path``'s result.
    ax : matplotlib Axes, optional
    metric : str, optional
        The y axis's name; default: the paths' ``metric`` (they must agree), else
        "score".
    pareto_only : bool, default False
        Leave out the points that are not Pareto-optimal.
    maximize : bool, optional
        Whether a higher score is better. Default: known for cbudget's metrics
        (``auc``: higher; ``error``, ``logloss``...: lower) and "accuracy" (higher).
        Needed only to find the Pareto-optimal points of a path that does not give them.
    xscale : {"auto", "linear", "log", "symlog"}, default "auto"
        As for :func:`plot_cost_curve`: logarithmic when the costs span more than 30x.

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError, ValueError
        For paths that are not pairs or path objects, arrays of different lengths,
        non-finite costs, paths of different metrics, or when the Pareto-optimal points
        must be found and whether higher scores are better is not known.
    """
    if not isinstance(paths, Mapping) or not paths:
        raise TypeError("paths must be a non-empty dict {label: (costs, scores) or an object "
                        "with costs and scores}")
    checked = {str(label): _frontier_path(str(label), path) for label, path in paths.items()}
    metrics = {p.metric for p in checked.values() if p.metric is not None}
    if metric is None and len(metrics) > 1:
        raise ValueError(f"the paths hold different metrics {sorted(metrics)}: one axis "
                         "cannot show them together")
    if metric is not None and metrics - {metric}:
        raise ValueError(f"metric={metric!r}, but paths hold {sorted(metrics)}")
    metric = metric or (metrics.pop() if metrics else None)
    higher_better = _metric_direction(metric, maximize)
    ax, new_figure = _axes(ax)
    for label, path in checked.items():
        pareto = path.pareto
        if pareto is None:
            if higher_better is None:
                raise ValueError(
                    f"whether a higher {metric or 'score'} is better is not known, so the "
                    f"Pareto-optimal points of {label!r} cannot be found: pass maximize=True "
                    f"or False, or a metric cbudget knows ({sorted(METRICS)}, the ranking ones "
                    "such as 'ndcg@5', 'accuracy')")
            pareto = pareto_mask(path.costs, path.scores, higher_better)
        order = np.argsort(path.costs[pareto], kind="stable")
        (line,) = ax.plot(path.costs[pareto][order], path.scores[pareto][order], marker="o",
                          label=label)
        if not pareto_only and not pareto.all():
            ax.plot(path.costs[~pareto], path.scores[~pareto], linestyle="none", marker="o",
                    color=line.get_color(), alpha=0.3)
    _set_cost_scale(ax, np.concatenate([p.costs for p in checked.values()]), xscale)
    ax.set_xlabel(COST_LABEL)
    ax.set_ylabel(metric or "score")
    ax.legend()
    return _finish(ax, new_figure)


# -- acquisitions ------------------------------------------------------------------------
def plot_acquisition(model: Model, X: InputData, *, cost_weighted: bool = False,
                     top: int | None = 20, ax: Axes | None = None) -> Axes:
    """One horizontal bar per feature the inputs of ``X`` buy: the share of inputs that
    acquire it (``model.acquisitions(X).mean(axis=0)``), largest first.

    With ``cost_weighted=True`` each bar is that share times the feature's cost
    (``cost_model.feature_costs``): its part of the mean prediction cost per input.
    Cost groups, split and tree costs (and an external model's declared cost) belong to
    no single feature and are left out; the title then says how much of the mean cost
    they make.

    Parameters
    ----------
    model : cbudget.Model
    X : array-like, DataFrame, sparse or Dataset
    cost_weighted : bool, default False
    top : int or None, default 20
        Keep the ``top`` largest bars (None: all). Features no input buys are left out.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    model = _check_model(model)
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer))
                            or top < 1):
        raise ValueError(f"top must be a positive int or None, got {top!r}")
    acquired = model.acquisitions(X)
    if acquired.shape[0] == 0:
        raise ValueError("X has no inputs")
    share = acquired.mean(axis=0)
    feature_costs = model.cost_model.feature_costs
    value = share * feature_costs if cost_weighted else share
    bought = np.flatnonzero(share > 0)
    # largest first; ties by share, then by feature order
    order = bought[np.lexsort((bought, -share[bought], -value[bought]))]
    shown = order if top is None else order[:top]
    ax, new_figure = _axes(ax, figsize=(6.4, max(3.0, 0.3 * shown.size + 1.5)))
    positions = np.arange(shown.size)
    bars = ax.barh(positions, value[shown])
    ax.bar_label(bars, labels=[f"{v:.3g}" if cost_weighted else f"{v:.0%}"
                               for v in value[shown]], padding=2, fontsize="small")
    ax.set_yticks(positions)
    # a categorical feature is one feature, bought once whatever its level: say which
    categorical = set(model.categories.features.tolist())
    # text from the data (feature names, a categorical split's levels such as "$10-$20")
    # is drawn as it is, parse_math=False: matplotlib reads a pair of "$" as mathtext
    # (and fails to draw the figure on what is not valid mathtext)
    ax.set_yticklabels([model.feature_names[m] + (" (categorical)" if m in categorical else "")
                        for m in shown], parse_math=False)
    ax.invert_yaxis()           # the largest on top
    title = f"{model.algorithm}: {bought.size} of {model.num_features()} features bought"
    if shown.size < bought.size:
        title += f", top {shown.size} shown"
    if cost_weighted:
        ax.set_xlabel("part of the mean cost per input (share of inputs x feature cost)")
        ax.margins(x=0.12)
        mean_cost = float(model.predict_cost(X).mean())
        rest = mean_cost - float(value.sum())
        title += f"\nmean cost {mean_cost:.4g} per input"
        if abs(rest) > 1e-9 * max(1.0, mean_cost):
            title += f"; {rest:.4g} of it is not per feature (not shown)"
    else:
        ax.set_xlabel("share of inputs that acquire the feature")
        ax.set_xlim(0, 1.12)     # room for the labels of bars of 100%
    if bought.size == 0:
        ax.text(0.5, 0.5, "no input acquires any feature", transform=ax.transAxes,
                ha="center", va="center")
    ax.set_title(title, fontsize="medium")
    return _finish(ax, new_figure)


# -- one tree ----------------------------------------------------------------------------
@dataclass
class DrawnNode:
    """A node of a tree to draw: its text and its children with their edge labels."""
    text: str
    children: list[tuple[int, str]] = field(default_factory=list)


def _format_share(count: float, total: float) -> str:
    return f"{count / total:.1%}" if total > 0 else "-"


def _ensemble_reach(model: TreeEnsemble, tree_index: int, X: np.ndarray | None) -> np.ndarray:
    """Per node of tree ``tree_index``: the rows of ``X`` that reach it."""
    tree = model.trees[tree_index]
    counts = np.zeros(tree.shape[0], dtype=np.int64)
    if X is None or X.shape[0] == 0:
        return counts
    indptr = model.iteration_indptr
    iteration = int(np.searchsorted(indptr, tree_index, side="right")) - 1
    leaves = model.predict(X, pred_leaf=True, iteration_range=(iteration, iteration + 1))
    counts += np.bincount(leaves[:, tree_index - indptr[iteration]],
                          minlength=tree.shape[0])
    # children come after their parents: a backward pass adds each subtree up
    for node in range(tree.shape[0] - 1, -1, -1):
        if tree["left"][node] != -1:
            counts[node] = counts[tree["left"][node]] + counts[tree["right"][node]]
    return counts


def _level_set(model: TreeEnsemble, tree: np.ndarray, node: int, shown: int = 8) -> str:
    """The levels a categorical split sends left, as ``{a, b, ...}`` (the first
    ``shown``, then how many more): their names when the model has them (a pandas or
    string column's levels), else their codes."""
    codes = bitset_codes(model.tree_bitsets(tree)[int(np.sum(tree["categorical"][:node]))][1:])
    levels = model.categories.levels_of(int(tree["feature"][node]))
    text = ", ".join(str(code) if levels is None or code >= len(levels)
                     else _shown_level(levels[code]) for code in codes[:shown].tolist())
    more = f", ... ({codes.size - shown} more)" if codes.size > shown else ""
    return "{" + text + more + "}"


def _shown_level(level: Any) -> str:
    """A level as a set of levels shows it: as it is, or quoted (Python's repr) when it
    would not read as one level there (empty, padded with spaces, holding a comma, a
    brace or a line break: "{a, b}" of the one level "a, b")."""
    text = str(level)
    if isinstance(level, str) and (not text or text != text.strip()
                                   or any(c in text for c in ",{}\n")):
        return repr(level)
    return text


def _ensemble_nodes(model: TreeEnsemble, tree_index: int, X: np.ndarray | None,
                    n_inputs: int) -> tuple[list[DrawnNode], str]:
    """The nodes of tree ``tree_index`` and the title; reach over the rows of ``X``
    (shares of ``n_inputs``), else the training counts the nodes store."""
    n_trees = len(model.trees)
    if isinstance(tree_index, bool) or not isinstance(tree_index, (int, np.integer)):
        raise TypeError(f"tree_index must be an int, got {type(tree_index).__name__}")
    if not 0 <= tree_index < n_trees:
        raise IndexError(f"tree_index {tree_index} out of range: the model has {n_trees} "
                         "trees")
    tree = model.trees[tree_index]
    names, costs = model.feature_names, model.cost_model.feature_costs
    if X is not None:
        reach, total = _ensemble_reach(model, tree_index, X), float(n_inputs)
        reach_name = f"reach: share of the {n_inputs} inputs given"
    else:   # what training stored: its inputs that reached the node
        reach, total = tree["n_samples"], float(tree["n_samples"][0])
        reach_name = "reach: share of the training inputs"
    nodes = []
    for k in range(tree.shape[0]):
        share = f"reach {_format_share(reach[k], total)}"
        if tree["left"][k] == -1:
            if isinstance(model, Forest):
                what = f"class {int(tree['value'][k])}"
            else:
                what = f"value {tree['value'][k]:.4g}"
            nodes.append(DrawnNode(f"{what}\npath cost {tree['path_cost'][k]:.4g}\n{share}"))
            continue
        m = int(tree["feature"][k])
        missing = ", missing" if tree["default_left"][k] else ""
        test = (f"{names[m]} in {_level_set(model, tree, k)}" if tree["categorical"][k]
                else f"{names[m]} <= {tree['threshold'][k]:.4g}")
        nodes.append(DrawnNode(
            f"{test}\ncost {costs[m]:.4g}\n{share}",
            [(int(tree["left"][k]), "yes" + missing),
             (int(tree["right"][k]), "no" + ("" if missing else ", missing"))]))
    indptr = model.iteration_indptr
    iteration = int(np.searchsorted(indptr, tree_index, side="right")) - 1
    where = "tree" if isinstance(model, Forest) else "round"
    title = f"{model.algorithm}: tree {tree_index} ({where} {iteration}"
    if isinstance(model, Booster) and model.n_outputs > 1:
        title += f", class {model.tree_outputs[tree_index]}"
    return nodes, f"{title}); {reach_name}"


def _feature_list(model: ClassifierTree, k: int) -> list[int]:
    """The features node ``k`` needs: those with a non-zero weight, or with the boosting
    trick the split features of the basis trees it weighs."""
    coords = model.node_coordinates(k)
    if model.basis is None:
        return coords.tolist()
    features: set[int] = set()
    for c in coords.tolist():
        tree = model.basis.trees[c]
        features.update(tree["feature"][tree["left"] != -1].tolist())
    return sorted(features)


def _classifier_tree_nodes(model: ClassifierTree, tree_index: int, X: np.ndarray | None,
                           n_inputs: int) -> tuple[list[DrawnNode], str]:
    """The linear nodes of a tree of classifiers (or cascade) and the title."""
    if isinstance(tree_index, bool) or tree_index != 0:
        raise IndexError(f"a {type(model).__name__} is one tree of linear classifiers: "
                         f"tree_index must be 0, got {tree_index!r}")
    n_nodes = model.num_nodes()
    if X is not None:
        reach = np.zeros(n_nodes, dtype=np.float64)
        if X.shape[0]:
            reach += np.bincount(model.predict(X, pred_exit=True), minlength=n_nodes)
        parent = model.parents()
        for k in range(n_nodes - 1, 0, -1):     # level order: children after parents
            reach[parent[k]] += reach[k]
        reach /= max(n_inputs, 1)
        reach_name = f"reach: share of the {n_inputs} inputs given"
    else:
        reach = model.reach
        reach_name = "reach: training inputs' mean probability (soft traversal)"
    path_costs = model.path_costs()
    nodes = []
    for k in range(n_nodes):
        features = [model.feature_names[m] for m in _feature_list(model, k)]
        listed = ", ".join(features[:NODE_FEATURES_SHOWN]) or "no features (bias only)"
        if len(features) > NODE_FEATURES_SHOWN:
            listed += f" +{len(features) - NODE_FEATURES_SHOWN} more"
        lines = [f"node {k}: {listed}", f"path cost {path_costs[k]:.4g}",
                 f"reach {reach[k]:.1%}"]
        theta = model.thresholds[k]
        children = [(int(child), label) for child, label in
                    ((model.upper[k], f"f > {theta:.3g}"), (model.lower[k], f"f <= {theta:.3g}"))
                    if child != -1]
        if model.is_leaf(k):
            lines.append("exit")
        elif len(children) == 1:
            lines.append("exit if f " + ("<= " if model.lower[k] == -1 else "> ")
                         + f"{theta:.3g}")
        nodes.append(DrawnNode("\n".join(lines), children))
    kind = "cascade" if model.model_type == "cascade" else "tree of linear classifiers"
    return nodes, f"{model.algorithm} {kind}; {reach_name}"


def _tree_nodes(model: Model, tree_index: int, X: np.ndarray | None, n_inputs: int,
                part: str | None) -> tuple[list[DrawnNode], str]:
    """The nodes to draw of ``model`` (its ``part`` for a gated model) and a title."""
    if isinstance(model, GatedModel):
        if part not in GATED_PARTS:
            raise ValueError(f"a gated model has a gate, a low-cost predictor and an "
                             f"expensive model: give part= one of {GATED_PARTS}, got {part!r}")
        chosen = {"gate": model.gate, "predictor": model.predictor,
                  "expensive": model.expensive}[part]
        if isinstance(chosen, LinearClassifier):
            raise NotApplicableError(
                f"the {part} of this {model.algorithm} model is a linear classifier, not a "
                f"tree: there is no tree to draw (its weights are {part}.weights; "
                "plot_acquisition shows what it reads)")
        if not isinstance(chosen, Model):
            raise NotApplicableError(f"the expensive model of this gated model is not a "
                                     f"cbudget model ({chosen!r}): there is no tree to draw")
        rows = X
        if X is not None and part != "gate":
            # the inputs the gate sends to that part: the others never reach its trees
            route = model.route(X)
            rows = np.ascontiguousarray(X[route == (1 if part == "predictor" else 0)])
        nodes, title = _tree_nodes(chosen, tree_index, rows, n_inputs, None)
        return nodes, f"{model.algorithm} {part}: {title}"
    if part is not None:
        raise ValueError(f"part applies to gated models only, not to a {type(model).__name__}")
    if isinstance(model, TreeEnsemble):
        return _ensemble_nodes(model, tree_index, X, n_inputs)
    if isinstance(model, ClassifierTree):
        return _classifier_tree_nodes(model, tree_index, X, n_inputs)
    raise NotApplicableError(f"plot_tree does not know how to draw a {type(model).__name__}")


def _drawn_tree(model: Any, tree_index: int, X: InputData | None,
                max_depth: int | str | None, part: str | None) -> tuple[list[DrawnNode], str]:
    model = _check_model(model)
    if max_depth is not None and max_depth != "auto" and (
            isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer))
            or max_depth < 0):
        raise ValueError(f"max_depth must be an int >= 0, 'auto' or None, got {max_depth!r}")
    prepared = None if X is None else model.prepare_input(X)
    return _tree_nodes(model, tree_index, prepared,
                       0 if prepared is None else prepared.shape[0], part)


@dataclass
class TreeLayout:
    """Where each drawn node goes: x (leaves 0, 1, 2... left to right), depth, and how
    many nodes below it are cut off by ``max_depth``."""
    x: dict[int, float]
    depth: dict[int, int]
    hidden: dict[int, int]


# plot_tree's max_depth="auto": the deepest drawing at most this many nodes wide (about
# 16 inches at the default font size: readable on a screen)
READABLE_COLUMNS = 10


def _readable_layout(nodes: list[DrawnNode], max_depth: int | str | None) -> TreeLayout:
    """The layout of ``max_depth``; for "auto", of the deepest ``max_depth`` whose
    drawing is at most :data:`READABLE_COLUMNS` nodes wide (at least the root's split)."""
    if max_depth != "auto":
        return _layout(nodes, max_depth)   # type: ignore[arg-type]
    layout = _layout(nodes, None)
    depth = max(layout.depth.values())
    while depth > 1 and len(layout.x) and 1 + max(layout.x.values()) > READABLE_COLUMNS:
        depth -= 1
        layout = _layout(nodes, depth)
    return layout


def _layout(nodes: list[DrawnNode], max_depth: int | None) -> TreeLayout:
    """Leaves side by side in depth-first order, each parent above the middle of its
    children (iterative: a best-first tree may be deeper than Python's recursion)."""
    depth = {0: 0}
    preorder, stack = [], [0]
    while stack:
        k = stack.pop()
        preorder.append(k)
        for child, _ in reversed(nodes[k].children):
            depth[child] = depth[k] + 1
            stack.append(child)
    below = {k: 0 for k in preorder}
    for k in reversed(preorder):
        below[k] = sum(1 + below[c] for c, _ in nodes[k].children)
    shown = [k for k in preorder if max_depth is None or depth[k] <= max_depth]
    x: dict[int, float] = {}
    hidden: dict[int, int] = {}
    next_leaf = 0
    for k in shown:             # preorder: the leaves left to right
        if max_depth is not None and depth[k] == max_depth and nodes[k].children:
            hidden[k] = below[k]
        if not nodes[k].children or k in hidden:
            x[k] = float(next_leaf)
            next_leaf += 1
    for k in reversed(shown):   # children before parents
        if k not in x:
            x[k] = float(np.mean([x[c] for c, _ in nodes[k].children]))
    return TreeLayout(x, {k: depth[k] for k in shown}, hidden)


def plot_tree(model: Model, tree_index: int = 0, *, X: InputData | None = None,
              ax: Axes | None = None, max_depth: int | str | None = "auto",
              part: str | None = None, fontsize: float = 8) -> Axes:
    """Draw one tree with what its nodes cost and how many inputs reach them.

    A tree ensemble's (Booster, Forest) split node shows its feature, threshold (inputs
    with ``value <= threshold`` go left, "yes"; a categorical split: ``in {codes}``, the
    codes that go left; missing values go the way marked "missing"), the feature's cost
    and the reach; a leaf its value (a forest: its majority class), the cost of the
    features on its path and the reach. A tree of linear classifiers (ClassifierTree,
    Cascade) shows per node the features with a non-zero weight (with the boosting
    trick: those of the basis trees it weighs), the cost of the features on the path
    from the root and the reach; an input goes to the upper child when the node's score
    ``f > theta``.

    Parameters
    ----------
    model : cbudget.Model
    tree_index : int, default 0
        The tree of ``model.trees`` (of a multi-class booster: round ``r``'s tree of class
        ``k`` is ``r * num_class + k``); 0 for a tree of classifiers.
    X : array-like or Dataset, optional
        Reach: the share of these inputs that reach each node. Without it, what
        training stored: a tree ensemble's ``n_samples`` (share of the training inputs;
        a forest's: of its bootstrap sample), a tree of classifiers' ``reach`` (the
        training inputs' mean probability of reaching the node under the soft
        traversal of training).
    ax : matplotlib Axes, optional
        Default: a new figure sized to the tree.
    max_depth : int, "auto" or None, default "auto"
        Draw the nodes down to this depth (the root is depth 0); a node with nodes cut
        off below says how many. "auto": as deep as a drawing 10 nodes wide allows (a
        deep tree drawn whole is thousands of pixels wide); None: every node.
    part : {"gate", "predictor", "expensive"}
        For a gated model (required): the booster to draw. The reach counts the inputs
        the gate sends to that part, as a share of all of ``X``.
    fontsize : float, default 8

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    IndexError
        For a ``tree_index`` out of range.
    ValueError
        For a missing or wrong ``part``, or a negative ``max_depth``.
    NotApplicableError
        For a part that is not a tree (ADAPT-LIN's linear gate and predictor, an
        external expensive model).
    """
    nodes, title = _drawn_tree(model, tree_index, X, max_depth, part)
    layout = _readable_layout(nodes, max_depth)
    n_columns = 1 + max(layout.x.values())
    n_levels = 1 + max(layout.depth.values())
    ax, new_figure = _axes(ax, figsize=(min(40.0, max(6.0, 1.6 * n_columns)),
                            min(30.0, max(3.0, 1.3 * n_levels + 0.6))))
    for k in sorted(layout.x):      # in node id order: the root's text first
        x, y = layout.x[k], -layout.depth[k]
        if k not in layout.hidden:
            for child, edge_label in nodes[k].children:
                cx, cy = layout.x[child], -layout.depth[child]
                ax.plot([x, cx], [y, cy], color="0.5", linewidth=1, zorder=1)
                ax.text((x + cx) / 2, (y + cy) / 2, edge_label, ha="center", va="center",
                        fontsize=fontsize - 1, color="0.3", gid="edge", zorder=3,
                        parse_math=False,   # no mathtext: a level may be "$10-$20"
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white",
                              "edgecolor": "none"})
        text = nodes[k].text
        if k in layout.hidden:
            text += f"\n+{layout.hidden[k]} nodes below"
        leaf = not nodes[k].children
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, gid="node", zorder=2,
                parse_math=False,           # the node's levels and names as they are
                bbox={"boxstyle": "round,pad=0.4",
                      "facecolor": "#e8f0e0" if leaf else "#dde8f5",
                      "edgecolor": "0.4", "linestyle": "--" if k in layout.hidden else "-"})
    ax.set_xlim(-0.6, n_columns - 0.4)
    ax.set_ylim(-(n_levels - 1) - 0.5, 0.5)
    ax.set_axis_off()
    ax.set_title(title, fontsize=fontsize + 1, parse_math=False)
    if new_figure is not None:      # the axis is off: only the title needs room
        new_figure.subplots_adjust(left=0.01, right=0.99, bottom=0.01,
                                   top=1 - 0.5 / new_figure.get_figheight())
    return ax


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_graphviz(model: Model, tree_index: int = 0, *, X: InputData | None = None,
                max_depth: int | None = None, part: str | None = None) -> str:
    """One tree as Graphviz DOT source, with the node texts of :func:`plot_tree` (render
    it with ``dot -Tpng`` or the graphviz package; neither is needed here).

    Parameters
    ----------
    model, tree_index, X, max_depth, part
        As for :func:`plot_tree`.

    Returns
    -------
    str
    """
    nodes, title = _drawn_tree(model, tree_index, X, max_depth, part)
    layout = _readable_layout(nodes, max_depth)
    lines = ["digraph tree {", f'  label="{_dot_escape(title)}";', "  labelloc=t;",
             '  node [shape=box, style="rounded,filled", fillcolor="#dde8f5", fontsize=10];']
    for k in sorted(layout.x):
        text = nodes[k].text
        if k in layout.hidden:
            text += f"\n+{layout.hidden[k]} nodes below"
        fill = ', fillcolor="#e8f0e0"' if not nodes[k].children else ""
        lines.append(f'  n{k} [label="{_dot_escape(text)}"{fill}];')
    for k in sorted(layout.x):
        if k in layout.hidden:
            continue
        for child, edge_label in nodes[k].children:
            lines.append(f'  n{k} -> n{child} [label="{_dot_escape(edge_label)}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- one input's explanation -------------------------------------------------------------
def plot_explanation(explanation: Explanation, index: int = 0, *, output: int = 0,
                     top: int = 10, ax: Axes | None = None) -> Axes:
    """What each feature contributed to input ``index``'s ``output`` and what the input
    paid for it: one horizontal bar per feature (its TreeSHAP contribution, the ``top``
    largest in absolute value, largest on top), labelled with the cost paid ("not
    bought" where the input's paths do not test it); the title gives the explained
    output as bias plus contributions, and the input's prediction cost.

    Parameters
    ----------
    explanation : cbudget.explain.Explanation
        From ``model.explain(X)`` (a Booster or a Forest).
    index : int
        The input (row of ``X``).
    output : int
        The output to explain (a class of a multi-class model or a forest).
    top : int, default 10
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    if not isinstance(explanation, Explanation):
        raise TypeError(f"explanation must be a cbudget.explain.Explanation (from "
                        f"model.explain(X)), got {type(explanation).__name__}")
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive int, got {top!r}")
    rows = explanation.top_features(index, output, top)
    ax, new_figure = _axes(ax, figsize=(6.4, max(3.0, 0.35 * len(rows) + 1.6)))
    values = [value for _, value, _, _ in rows]
    positions = np.arange(len(rows))
    bars = ax.barh(positions, values, color=["tab:red" if v > 0 else "tab:blue"
                                             for v in values])
    ax.bar_label(bars, labels=[f"paid {cost:.3g}" if bought else "not bought"
                               for _, _, cost, bought in rows],
                 padding=2, fontsize="small")
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(positions)
    ax.set_yticklabels([name for name, _, _, _ in rows], parse_math=False)
    ax.invert_yaxis()
    ax.margins(x=0.25)      # room for the cost labels on either side
    ax.set_xlabel("contribution (TreeSHAP)")
    bias = float(explanation.expected_value[output])
    ax.set_title(f"input {index}, output {output}: "
                 f"{float(explanation.output[index, output]):.4g} = {bias:.4g} (bias) + "
                 f"contributions\ncost {float(explanation.cost[index]):.4g}, "
                 f"{int(explanation.acquired[index].sum())} features bought",
                 fontsize="medium")
    return _finish(ax, new_figure)
