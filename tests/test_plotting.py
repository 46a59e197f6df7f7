"""cbudget.plotting: every plot for every model type it applies to, checked on what it
draws (the data of the lines and bars, the node texts), written to PNG files."""
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from small_models import (  # noqa: E402
    ALGORITHMS,
    CLASSIFIER_TREES,
    STAGED,
    takes_expensive_model,
)

import cbudget  # noqa: E402
from cbudget import plotting  # noqa: E402
from cbudget.cost_path import pareto_mask  # noqa: E402
from cbudget.metrics import evaluate_metric  # noqa: E402

ENSEMBLES = STAGED
COSTS = dict(feature_costs=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], cost_groups={"pair": [4, 5]},
             group_costs={"pair": 2.5}, split_cost=0.01)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] + 0.6 * X[:, 1] - 0.4 * X[:, 4] + 0.3 * rng.normal(size=n)) > 0
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y.astype(np.float64)


@pytest.fixture(scope="module")
def data():
    X, y = _data(300, 0)
    Xv, yv = _data(150, 1)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    return dtrain, cbudget.Dataset(Xv, yv, reference=dtrain), Xv


@pytest.fixture(scope="module")
def models(data):
    dtrain = data[0]
    f0 = cbudget.train({"objective": "binary:logistic", "n_jobs": 1}, dtrain, 5,
                       verbose_eval=False)
    trained = {}
    for algorithm in ALGORITHMS:
        params = {"algorithm": algorithm, "objective": "binary:logistic", "n_jobs": 1}
        if algorithm == "adapt_lin":
            params["n_restarts"] = 1
        if algorithm in CLASSIFIER_TREES:
            params["max_depth"] = 2
        if algorithm == "budget_rf":    # small trees: quick to draw
            params["max_depth"] = 4
        if algorithm == "cegb":     # cheap enough that its trees split
            params["cost_tradeoff"] = 0.001
        extra = {"expensive_model": f0} if takes_expensive_model(algorithm) else {}
        trained[algorithm] = cbudget.train(params, dtrain, 4, verbose_eval=False, **extra)
    return trained


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _assert_png(ax, path):
    ax.figure.savefig(path, dpi=50)
    content = path.read_bytes()
    assert len(content) > 1000 and content.startswith(PNG_SIGNATURE)


def _node_texts(ax):
    return [t.get_text() for t in ax.texts if t.get_gid() == "node"]


# -- cost curves -------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_cost_curve_of_every_model(models, data, algorithm, tmp_path):
    model = models[algorithm]
    _, dvalid, Xv = data
    ax = plotting.plot_cost_curve(model, dvalid)
    line = ax.get_lines()[0]
    if algorithm in STAGED:   # one point per iteration
        np.testing.assert_array_equal(line.get_xdata(), model.cost_curve(Xv))
        np.testing.assert_array_equal(line.get_ydata(), model.staged_scores(dvalid))
    else:                     # the model is one point
        np.testing.assert_allclose(line.get_xdata(), [model.predict_cost(Xv).mean()])
        expected = evaluate_metric(model.default_metric, dvalid.label, model.predict(Xv))
        np.testing.assert_allclose(line.get_ydata(), [expected])
        assert line.get_marker() == "o"
    assert line.get_label() == algorithm
    assert ax.get_xlabel() == "mean cost per input"
    assert ax.get_ylabel() == model.default_metric
    _assert_png(ax, tmp_path / "curve.png")


def test_cost_curves_share_axes_with_a_metric_and_labels(models, data):
    _, dvalid, _ = data
    _, ax = plt.subplots()
    out = plotting.plot_cost_curve(models["gbdt"], dvalid, metric="auc", ax=ax, label="plain",
                                   color="red")
    plotting.plot_cost_curve(models["cegb"], dvalid, metric="auc", ax=ax)
    assert out is ax
    plain, cegb = ax.get_lines()
    assert plain.get_label() == "plain" and plain.get_color() == "red"
    assert cegb.get_label() == "cegb" and ax.get_ylabel() == "auc"
    np.testing.assert_array_equal(plain.get_ydata(),
                                  models["gbdt"].staged_scores(dvalid, "auc"))


def test_cost_curve_refuses_bad_input(models, data):
    dtrain, dvalid, Xv = data
    with pytest.raises(TypeError, match="cbudget model"):
        plotting.plot_cost_curve("not a model", dvalid)
    with pytest.raises(TypeError, match="Dataset with labels"):
        plotting.plot_cost_curve(models["gbdt"], Xv)
    with pytest.raises(TypeError, match="Dataset with labels"):
        plotting.plot_cost_curve(models["gbdt"], cbudget.Dataset(Xv, reference=dtrain))
    with pytest.raises(ValueError, match="does not apply"):
        plotting.plot_cost_curve(models["cstc"], dvalid, metric="mlogloss")


# -- frontiers ---------------------------------------------------------------------------
class StandIn:
    """What cbudget.cost_path returns: costs, scores, pareto and metric."""

    def __init__(self, costs, scores, pareto, metric):
        self.costs, self.scores, self.pareto, self.metric = costs, scores, pareto, metric


def test_pareto_optimal_points():
    costs = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0]
    errors = [0.5, 0.4, 0.45, 0.42, 0.3, np.nan, 0.3]
    np.testing.assert_array_equal(pareto_mask(costs, errors, False),
                                  [True, True, False, False, True, False, False])
    accuracy = [0.5, 0.6, 0.55, 0.58, 0.7, 0.9, 0.7]
    np.testing.assert_array_equal(pareto_mask(costs, accuracy, True),
                                  [True, True, False, False, True, True, False])


def test_frontier_of_pairs_and_path_objects(tmp_path):
    pairs = (np.array([3.0, 1.0, 2.0, 4.0]), np.array([0.2, 0.4, 0.45, 0.1]))
    pareto = np.array([True, False, True])
    path = StandIn(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.6, 0.3]), pareto, "error")
    ax = plotting.plot_frontier({"cegb": pairs, "greedy miser": path})
    cegb, cegb_faint, miser, miser_faint = ax.get_lines()
    # error: lower is better; (2, 0.45) is beaten by (1, 0.4). Drawn by cost
    np.testing.assert_array_equal(cegb.get_xdata(), [1.0, 3.0, 4.0])
    np.testing.assert_array_equal(cegb.get_ydata(), [0.4, 0.2, 0.1])
    np.testing.assert_array_equal(cegb_faint.get_xdata(), [2.0])
    assert cegb_faint.get_alpha() < 1 and cegb_faint.get_color() == cegb.get_color()
    # the path's own pareto flags are drawn as given
    np.testing.assert_array_equal(miser.get_xdata(), [1.0, 3.0])
    np.testing.assert_array_equal(miser_faint.get_ydata(), [0.6])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["cegb", "greedy miser"]
    assert ax.get_ylabel() == "error"
    _assert_png(ax, tmp_path / "frontier.png")
    only = plotting.plot_frontier({"cegb": pairs}, metric="error", pareto_only=True)
    assert len(only.get_lines()) == 1


def test_frontier_direction_from_the_metric_or_maximize():
    pairs = ([1.0, 2.0], [0.9, 0.8])
    with pytest.raises(ValueError, match="maximize"):
        plotting.plot_frontier({"a": pairs})
    with pytest.raises(ValueError, match="maximize"):
        plotting.plot_frontier({"a": pairs}, metric="my score")
    # accuracy: higher is better, so the second point is beaten; logloss: it is not
    assert len(plotting.plot_frontier({"a": pairs}, metric="accuracy").get_lines()) == 2
    assert len(plotting.plot_frontier({"a": pairs}, metric="logloss").get_lines()) == 1
    assert len(plotting.plot_frontier({"a": pairs}, maximize=True).get_lines()) == 2


def test_frontier_refuses_bad_paths():
    good = StandIn([1.0], [0.5], None, "error")
    with pytest.raises(TypeError, match="non-empty dict"):
        plotting.plot_frontier([([1.0], [0.5])])
    with pytest.raises(TypeError, match="non-empty dict"):
        plotting.plot_frontier({})
    with pytest.raises(TypeError, match="costs and scores"):
        plotting.plot_frontier({"a": 3.0}, maximize=True)
    with pytest.raises(ValueError, match="same"):
        plotting.plot_frontier({"a": ([1.0, 2.0], [0.5])}, maximize=True)
    with pytest.raises(ValueError, match="2 entries"):
        plotting.plot_frontier({"a": ([1.0], [0.5], [0.1])}, maximize=True)
    with pytest.raises(ValueError, match="finite"):
        plotting.plot_frontier({"a": ([np.inf], [0.5])}, maximize=True)
    with pytest.raises(ValueError, match="pareto"):
        plotting.plot_frontier({"a": StandIn([1.0, 2.0], [0.5, 0.4], [True], "error")})
    with pytest.raises(ValueError, match="different metrics"):
        plotting.plot_frontier({"a": good, "b": StandIn([1.0], [0.5], None, "auc")})
    with pytest.raises(ValueError, match="metric='auc'"):
        plotting.plot_frontier({"a": good}, metric="auc")


# -- acquisitions ------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_acquisition_bars_of_every_model(models, data, algorithm, tmp_path):
    model = models[algorithm]
    Xv = data[2]
    share = model.acquisitions(Xv).mean(axis=0)
    bought = np.flatnonzero(share > 0)
    order = bought[np.argsort(-share[bought], kind="stable")]
    ax = plotting.plot_acquisition(model, Xv)
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names == [model.feature_names[m] for m in order]   # by name, never-bought out
    np.testing.assert_allclose([bar.get_width() for bar in ax.patches], share[order])
    _assert_png(ax, tmp_path / "acquisition.png")

    weighted = plotting.plot_acquisition(model, Xv, cost_weighted=True)
    widths = {t.get_text(): bar.get_width()
              for t, bar in zip(weighted.get_yticklabels(), weighted.patches)}
    assert widths == pytest.approx({model.feature_names[m]: share[m] * COSTS["feature_costs"][m]
                                    for m in bought})
    assert list(widths.values()) == sorted(widths.values(), reverse=True)
    # the group cost of the pair {f4, f5} is in the mean cost, not in any bar
    assert "not per feature" in weighted.get_title()


def test_acquisition_of_a_model_that_buys_nothing(data):
    dtrain, _, Xv = data
    stump = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb",
                           "cost_tradeoff": 100.0, "n_jobs": 1}, dtrain, 2, verbose_eval=False)
    assert not stump.acquisitions(Xv).any()
    ax = plotting.plot_acquisition(stump, Xv)
    assert len(ax.patches) == 0 and "0 of 6 features bought" in ax.get_title()
    assert "no input acquires any feature" in [t.get_text() for t in ax.texts]


def test_acquisition_keeps_the_top_features(models, data):
    model, Xv = models["gbdt"], data[2]
    share = model.acquisitions(Xv).mean(axis=0)
    assert np.count_nonzero(share) > 2
    ax = plotting.plot_acquisition(model, Xv, top=2)
    assert len(ax.patches) == 2 and "top 2 shown" in ax.get_title()
    np.testing.assert_allclose([bar.get_width() for bar in ax.patches],
                               np.sort(share)[::-1][:2])
    with pytest.raises(ValueError, match="top"):
        plotting.plot_acquisition(model, Xv, top=0)
    with pytest.raises(TypeError, match="cbudget model"):
        plotting.plot_acquisition(Xv, Xv)


# -- trees -------------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ENSEMBLES)
def test_tree_of_an_ensemble(models, data, algorithm, tmp_path):
    model, Xv = models[algorithm], data[2]
    tree = model.trees[1]
    ax = plotting.plot_tree(model, 1, max_depth=None)      # every node
    texts = _node_texts(ax)
    assert len(texts) == tree.shape[0]
    root = texts[0]         # nodes are drawn in id order; the root first
    m = int(tree["feature"][0])
    assert root.startswith(f"{model.feature_names[m]} <= {tree['threshold'][0]:.4g}\n"
                           f"cost {COSTS['feature_costs'][m]:.4g}")
    assert root.endswith("reach 100.0%")
    _assert_png(ax, tmp_path / "tree.png")

    # reach over X: the share of X's inputs reaching each leaf
    leaves = model.predict(Xv, pred_leaf=True, iteration_range=(1, 2))[:, 0]
    counts = np.bincount(leaves, minlength=tree.shape[0])
    texts = _node_texts(plotting.plot_tree(model, 1, X=Xv, max_depth=None))
    for k in np.flatnonzero(tree["left"] == -1):
        assert texts[k].endswith(f"reach {counts[k] / Xv.shape[0]:.1%}")

    shallow = plotting.plot_tree(model, 1, max_depth=1)
    assert len(_node_texts(shallow)) == np.count_nonzero(tree["depth"] <= 1)
    # by default as deep as a drawing 10 nodes wide allows: the deepest such depth
    readable = plotting.plot_tree(model, 1)
    shown = len(_node_texts(readable))
    widths = {d: np.count_nonzero((tree["depth"] == d) | ((tree["depth"] < d)
                                                          & (tree["left"] == -1)))
              for d in range(int(tree["depth"].max()) + 1)}
    depth = max([d for d, w in widths.items() if w <= plotting.READABLE_COLUMNS] + [1])
    assert shown == np.count_nonzero(tree["depth"] <= depth)
    assert readable.figure.get_figwidth() <= 1.6 * plotting.READABLE_COLUMNS
    with pytest.raises(IndexError, match="out of range"):
        plotting.plot_tree(model, len(model.trees))
    with pytest.raises(ValueError, match="part applies to gated models"):
        plotting.plot_tree(model, 0, part="gate")


@pytest.mark.parametrize("algorithm", CLASSIFIER_TREES)
def test_tree_of_linear_classifiers(models, data, algorithm, tmp_path):
    model, Xv = models[algorithm], data[2]
    ax = plotting.plot_tree(model)
    texts = _node_texts(ax)
    assert len(texts) == model.num_nodes()
    used = [model.feature_names[m] for m in np.flatnonzero(model.weights[0])]
    assert texts[0].startswith(f"node 0: {', '.join(used[:3])}")
    if len(used) > 3:
        assert f"+{len(used) - 3} more" in texts[0]
    assert f"path cost {model.path_costs()[0]:.4g}" in texts[0]
    _assert_png(ax, tmp_path / "tree.png")
    exits = model.predict(Xv, pred_exit=True)
    with_x = _node_texts(plotting.plot_tree(model, X=Xv))
    for k in range(model.num_nodes()):
        if model.is_leaf(k):
            assert f"reach {np.mean(exits == k):.1%}" in with_x[k]
    with pytest.raises(IndexError, match="tree_index must be 0"):
        plotting.plot_tree(model, 1)


def test_tree_of_a_multiclass_booster():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float64)
    model = cbudget.train({"objective": "multi:softprob", "num_class": 3, "n_jobs": 1},
                          cbudget.Dataset(X, y), 2, verbose_eval=False)
    ax = plotting.plot_tree(model, 4, X=X)      # round 1, class 1
    assert "tree 4 (round 1, class 1)" in ax.get_title()
    assert _node_texts(ax)[0].endswith("reach 100.0%")


def test_tree_of_gated_models(models, data, tmp_path):
    model, Xv = models["adapt_gbrt"], data[2]
    gate = plotting.plot_tree(model, 0, part="gate", X=Xv)
    assert len(_node_texts(gate)) == model.gate.trees[0].shape[0]
    assert "gate" in gate.get_title()
    _assert_png(gate, tmp_path / "gate.png")
    # the predictor's root is reached by the inputs the gate keeps away from f0
    predictor = plotting.plot_tree(model, 0, part="predictor", X=Xv)
    assert len(_node_texts(predictor)) == model.predictor.trees[0].shape[0]
    assert _node_texts(predictor)[0].endswith(f"reach {np.mean(model.route(Xv) == 1):.1%}")
    expensive = plotting.plot_tree(model, 0, part="expensive")
    assert len(_node_texts(expensive)) == model.expensive.trees[0].shape[0]
    with pytest.raises(ValueError, match="part="):
        plotting.plot_tree(model, 0)
    with pytest.raises(ValueError, match="part="):
        plotting.plot_tree(model, 0, part="both")
    with pytest.raises(cbudget.NotApplicableError, match="linear classifier"):
        plotting.plot_tree(models["adapt_lin"], 0, part="gate")


def test_tree_refuses_bad_input(models):
    with pytest.raises(TypeError, match="cbudget model"):
        plotting.plot_tree(object())
    with pytest.raises(TypeError, match="tree_index"):
        plotting.plot_tree(models["gbdt"], 0.0)
    with pytest.raises(ValueError, match="max_depth"):
        plotting.plot_tree(models["gbdt"], max_depth=-1)


def test_graphviz_source(models):
    model = models["gbdt"]
    tree = model.trees[0]
    dot = plotting.to_graphviz(model, 0)
    assert dot.startswith("digraph tree {") and dot.rstrip().endswith("}")
    assert dot.count(" [label=") == tree.shape[0] + 2 * np.count_nonzero(tree["left"] != -1)
    cstc = plotting.to_graphviz(models["cstc"], max_depth=0)
    assert cstc.count("->") == 0 and "nodes below" in cstc


def test_plots_need_matplotlib(models, data, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)   # as if not installed
    with pytest.raises(ImportError, match=r"pip install matplotlib \(or cbudget\[plot\]\)"):
        plotting.plot_acquisition(models["gbdt"], data[2])


def test_fitted_estimators_are_plotted_pipelines_explained(data):
    sklearn = pytest.importorskip("cbudget.sklearn")
    pipeline_module = pytest.importorskip("sklearn.pipeline")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    dtrain, dvalid, Xv = data
    estimator = sklearn.CEGBClassifier(n_estimators=5, feature_costs=COSTS["feature_costs"],
                                       cost_tradeoff=0.01).fit(dtrain.data, dtrain.label)
    assert plotting.plot_cost_curve(estimator, cbudget.Dataset(Xv, dvalid.label)).get_lines()
    assert _node_texts(plotting.plot_tree(estimator, 0))
    plotting.plot_acquisition(estimator, Xv)
    with pytest.raises(TypeError, match="fit the estimator first"):
        plotting.plot_tree(sklearn.CEGBClassifier(), 0)
    pipeline = pipeline_module.make_pipeline(preprocessing.StandardScaler(), estimator)
    with pytest.raises(TypeError, match=r"pipeline\[-1\]"):
        plotting.plot_tree(pipeline, 0)
    plt.close("all")


@pytest.mark.parametrize("costs, scale", [
    ([0.1, 0.5, 3.0, 40.0, 720.0], "log"),        # cheap models apart, not in a spike
    ([0.0, 0.1, 3.0, 720.0], "symlog"),           # a model that buys nothing: 0
    ([10.0, 12.0, 15.0, 20.0], "linear")])
def test_cost_axes_scale_by_the_costs(costs, scale):
    scores = np.linspace(0.6, 0.9, len(costs))
    ax = plotting.plot_frontier({"path": (np.array(costs), scores)}, maximize=True)
    assert ax.get_xscale() == scale
    forced = plotting.plot_frontier({"path": (np.array(costs), scores)}, maximize=True,
                                    xscale="linear")
    assert forced.get_xscale() == "linear"
    with pytest.raises(ValueError, match="xscale must be one of"):
        plotting.plot_frontier({"path": (np.array(costs), scores)}, maximize=True,
                               xscale="loglog")
    plt.close("all")


def test_the_plots_are_top_level_as_in_lightgbm():
    for name in plotting.__all__:
        assert getattr(cbudget, name) is getattr(plotting, name)
