"""Learning to rank: query groups in Dataset, the ranking metrics against a slow
per-query reference, the ranking objectives in training (gbdt, cegb, greedy_miser), the
ranking metrics for the other models, costs per query, and the scikit-learn rankers.
The gradient kernel is tested against its reference in test_rank_kernel.py."""
import json

import numpy as np
import pytest

import cbudget
from cbudget.datasets import make_ranking
from cbudget.metrics import check_metric, evaluate_metric, metric_maximize

FEATURE_COSTS = [1.0, 1.0, 50.0, 50.0, 200.0]


def make_queries(n_queries, seed):
    """cbudget.datasets.make_ranking: feature 4 (cost 200) ranks best, 2 and 3 (cost
    50) less well, 0 (cost 1) weakly, 1 is noise."""
    X, y, group, costs = make_ranking(n_queries, seed)
    np.testing.assert_array_equal(costs, FEATURE_COSTS)
    return X, y, group


@pytest.fixture(scope="module")
def ranking_data():
    X, y, sizes = make_queries(120, 0)
    Xv, yv, sizes_v = make_queries(60, 1)
    dtrain = cbudget.Dataset(X, y, group=sizes, feature_costs=FEATURE_COSTS)
    dvalid = cbudget.Dataset(Xv, yv, group=sizes_v, reference=dtrain)
    return dtrain, dvalid


def rank_params(algorithm="gbdt", **extra):
    return {"algorithm": algorithm, "objective": "rank:ndcg", "num_leaves": 7,
            "min_data_in_leaf": 5, "n_jobs": 2, **extra}


# -- query groups ------------------------------------------------------------------------
def test_group_and_qid_give_the_same_boundaries():
    X = np.arange(12.0).reshape(6, 2)
    by_sizes = cbudget.Dataset(X, group=[2, 3, 1])
    by_ids = cbudget.Dataset(X, qid=[7, 7, 2, 2, 2, 9])
    np.testing.assert_array_equal(by_sizes.group_ptr, [0, 2, 5, 6])
    np.testing.assert_array_equal(by_ids.group_ptr, [0, 2, 5, 6])
    np.testing.assert_array_equal(by_ids.get_group(), [2, 3, 1])
    assert by_sizes.num_queries() == 3 and "3 queries" in repr(by_sizes)
    plain = cbudget.Dataset(X)
    assert plain.group_ptr is None and plain.get_group() is None


@pytest.mark.parametrize("kwargs, message", [
    ({"group": [2, 3]}, "sum to 5 but data has 6"),
    ({"group": [2, 0, 4]}, "positive"),
    ({"group": [2.5, 3.5]}, "integer"),
    ({"group": [[2, 4]]}, "1-D"),
    ({"group": [6], "qid": np.zeros(6)}, "not both"),
    ({"qid": [1, 1, 2, 2, 1, 1]}, "not contiguous"),
    ({"qid": [1, 1, 2]}, "one id per row"),
    ({"qid": [1.0, np.nan, 2, 2, 2, 2]}, "NaN"),
])
def test_bad_query_groups_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cbudget.Dataset(np.zeros((6, 2)), **kwargs)


def test_reference_dataset_carries_its_own_queries(ranking_data):
    dtrain, dvalid = ranking_data
    assert dvalid.bin_edges is dtrain.bin_edges
    assert dvalid.num_queries() == 60 and dtrain.num_queries() == 120


# -- metrics -----------------------------------------------------------------------------
def reference_metric(kind, top, threshold, y, pred, sizes, weight=None):
    """Slow per-query reference of the ranking metrics (module doc of cbudget.metrics)."""
    values, weights, start = [], [], 0
    for size in sizes:
        labels, scores = y[start:start + size], pred[start:start + size]
        order = sorted(range(size), key=lambda i: (-scores[i], i))
        k = size if top is None else min(top, size)
        ranked = [labels[i] for i in order]
        if kind == "ndcg":
            dcg = sum((2 ** ranked[r] - 1) / np.log2(r + 2) for r in range(k))
            ideal_labels = sorted(labels, reverse=True)
            ideal = sum((2 ** ideal_labels[r] - 1) / np.log2(r + 2) for r in range(k))
            values.append(dcg / ideal if ideal > 0 else 1.0)
        elif kind == "precision":
            values.append(sum(ranked[r] >= threshold for r in range(k)) / k)
        else:
            hits, total = 0, 0.0
            for r in range(k):
                if ranked[r] >= threshold:
                    hits += 1
                    total += hits / (r + 1)
            n_relevant = min(sum(label >= threshold for label in labels), k)
            values.append(total / n_relevant if n_relevant else 1.0)
        weights.append(1.0 if weight is None else np.mean(weight[start:start + size]))
        start += size
    return float(np.average(values, weights=weights))


@pytest.mark.parametrize("name, kind, top, threshold", [
    ("ndcg@5", "ndcg", 5, None), ("ndcg@1", "ndcg", 1, None), ("ndcg", "ndcg", None, None),
    ("precision@5", "precision", 5, 1), ("precision@5>=3", "precision", 5, 3),
    ("precision@30", "precision", 30, 1), ("map@5", "map", 5, 1),
    ("map@10>=2", "map", 10, 2), ("map", "map", None, 1)])
@pytest.mark.parametrize("weighted", [False, True])
def test_ranking_metrics_match_the_reference(name, kind, top, threshold, weighted):
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 25, size=40)
    n = int(sizes.sum())
    y = rng.integers(0, 5, size=n).astype(float)
    y[:sizes[0]] = 0                       # a query with no relevant document
    pred = np.round(rng.normal(size=n), 1)  # ties
    weight = np.repeat(rng.uniform(0.5, 2.0, size=sizes.size), sizes) if weighted else None
    got = evaluate_metric(name, y, pred, weight, group=sizes)
    assert got == pytest.approx(reference_metric(kind, top, threshold, y, pred, sizes, weight),
                                rel=1e-12)
    assert metric_maximize(name)


def test_perfect_ranking_scores_one_and_reversed_less():
    rng = np.random.default_rng(4)
    sizes = np.array([10, 7, 12])
    y = rng.integers(0, 5, size=sizes.sum()).astype(float)
    for name in ("ndcg@5", "ndcg", "map@5", "precision@3>=4"):
        perfect = evaluate_metric(name, y, y, group=sizes)
        if name.startswith("precision"):
            continue
        assert perfect == pytest.approx(1.0)
        assert evaluate_metric(name, y, -y, group=sizes) < 1.0
    # NDCG of a ranking that only swaps equal labels is still 1
    assert evaluate_metric("ndcg", y, y + rng.uniform(0, 0.1, size=y.size) * 0,
                           group=sizes) == pytest.approx(1.0)


def test_ranking_metric_names_and_their_errors():
    for bad in ("ndcg@0", "ndcg@5>=3"):
        with pytest.raises(ValueError, match="eval_metric"):
            check_metric(bad, "rank:ndcg")
    with pytest.raises(ValueError, match="unknown eval_metric"):
        check_metric("ndcg@five", "rank:ndcg")
    with pytest.raises(ValueError, match="one per class"):
        check_metric("ndcg@5", "multi:softprob")
    with pytest.raises(ValueError, match="does not apply to rank:ndcg"):
        check_metric("rmse", "rank:ndcg")
    check_metric("precision@5>=3", "binary:logistic")
    check_metric("ndcg@5", "reg:squarederror")
    with pytest.raises(ValueError, match="query groups"):
        evaluate_metric("ndcg@5", np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="summing to the 4 rows"):
        evaluate_metric("ndcg@5", np.ones(4), np.ones(4), group=[3])
    with pytest.raises(ValueError, match="labels >= 0"):
        evaluate_metric("ndcg@5", -np.ones(4), np.ones(4), group=[4])


# -- training with the ranking objectives -----------------------------------------------
@pytest.fixture(scope="module")
def gbdt_ranker(ranking_data):
    dtrain, dvalid = ranking_data
    result = {}
    model = cbudget.train(rank_params(eval_metric=["ndcg@5", "precision@5>=3"]), dtrain, 30,
                          evals=[(dvalid, "valid")], evals_result=result, verbose_eval=False)
    return model, result


def test_lambdamart_learns_the_ranking(ranking_data, gbdt_ranker):
    dtrain, dvalid = ranking_data
    model, result = gbdt_ranker
    ndcg = result["valid"]["ndcg@5"]
    assert len(ndcg) == 30 and len(result["valid"]["precision@5>=3"]) == 30
    random_scores = np.random.default_rng(0).normal(size=dvalid.num_data())
    baseline = evaluate_metric("ndcg@5", dvalid.label, random_scores, group=dvalid.get_group())
    assert ndcg[-1] > baseline + 0.25
    assert ndcg[-1] > 0.9
    # the log is the metric of the model's predictions
    assert ndcg[-1] == pytest.approx(evaluate_metric(
        "ndcg@5", dvalid.label, model.predict(dvalid), group=dvalid.get_group()))
    assert model.objective == "rank:ndcg" and model.default_metric == "ndcg@5"
    np.testing.assert_array_equal(model.base_score, [0.0])


def test_pairwise_objective_learns_the_ranking(ranking_data):
    dtrain, dvalid = ranking_data
    result = {}
    cbudget.train(rank_params(objective="rank:pairwise"), dtrain, 20,
                  evals=[(dvalid, "valid")], evals_result=result, verbose_eval=False)
    assert result["valid"]["ndcg@5"][-1] > 0.85


def test_early_stopping_maximises_ndcg(ranking_data):
    dtrain, dvalid = ranking_data
    model = cbudget.train(rank_params(learning_rate=0.5), dtrain, 200,
                          evals=[(dvalid, "valid")], early_stopping_rounds=5,
                          verbose_eval=False)
    scores = model.staged_scores(dvalid, "ndcg@5")
    assert model.best_iteration == int(np.argmax(scores[:model.best_iteration + 6]))
    assert model.best_score == pytest.approx(scores[model.best_iteration])


@pytest.mark.parametrize("algorithm, fraction", [("cegb", 0.1), ("greedy_miser", 0.3)])
def test_cost_aware_rankers_buy_fewer_expensive_features(ranking_data, gbdt_ranker,
                                                         algorithm, fraction):
    dtrain, dvalid = ranking_data
    gbdt_cost = gbdt_ranker[0].predict_cost(dvalid).mean()
    lam = cbudget.lambda_max(rank_params(algorithm), dtrain)
    with pytest.warns(UserWarning, match="predicts a constant"):
        constant = cbudget.train(rank_params(algorithm, cost_tradeoff=lam), dtrain, 3,
                                 verbose_eval=False)
    assert constant.predict_cost(dvalid).mean() == 0
    model = cbudget.train(rank_params(algorithm, cost_tradeoff=fraction * lam), dtrain, 30,
                          verbose_eval=False)
    ndcg = evaluate_metric("ndcg@5", dvalid.label, model.predict(dvalid),
                           group=dvalid.get_group())
    cost = model.predict_cost(dvalid).mean()
    assert cost < 0.75 * gbdt_cost
    assert ndcg > 0.8
    choice = model.best_iteration_within_budget(dvalid, cost, metric="ndcg@5")
    assert choice.metric == "ndcg@5" and choice.cost <= cost
    assert choice.score == pytest.approx(model.staged_scores(dvalid, "ndcg@5")[choice.iteration])


def test_cost_report_gives_the_mean_cost_per_query(ranking_data, gbdt_ranker):
    dtrain, dvalid = ranking_data
    model = gbdt_ranker[0]
    report = model.cost_report(dvalid)
    per_doc = model.predict_cost(dvalid)
    assert report.mean_cost_per_query == pytest.approx(per_doc.sum() / dvalid.num_queries())
    assert "mean cost per query" in str(report)
    assert model.cost_report(dvalid.data).mean_cost_per_query is None


def test_ranking_model_round_trips_through_json(tmp_path, gbdt_ranker, ranking_data):
    model = gbdt_ranker[0]
    path = tmp_path / "rank.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    np.testing.assert_array_equal(loaded.predict(ranking_data[1]),
                                  model.predict(ranking_data[1]))
    assert loaded.params["lambdarank_truncation_level"] == 30
    assert loaded.params["objective"] == "rank:ndcg"


def test_continued_ranking_training_matches_one_run(ranking_data):
    dtrain, _ = ranking_data
    params = rank_params("cegb", cost_tradeoff=0.01)
    whole = cbudget.train(params, dtrain, 6, verbose_eval=False)
    first = cbudget.train(params, dtrain, 3, verbose_eval=False)
    continued = cbudget.train(params, dtrain, 3, xgb_model=first, verbose_eval=False)
    np.testing.assert_allclose(continued.predict(dtrain), whole.predict(dtrain), atol=1e-9)


def test_ranking_objective_errors(ranking_data):
    dtrain, dvalid = ranking_data
    ungrouped = cbudget.Dataset(dtrain.data, dtrain.label)
    with pytest.raises(ValueError, match="query groups"):
        cbudget.train(rank_params(), ungrouped, 2, verbose_eval=False)
    valid_ungrouped = cbudget.Dataset(dvalid.data, dvalid.label, reference=dtrain)
    with pytest.raises(ValueError, match=r"evaluation data \['v'\] has no query groups"):
        cbudget.train(rank_params(), dtrain, 2, evals=[(valid_ungrouped, "v")],
                      verbose_eval=False)
    fractional = cbudget.Dataset(dtrain.data, dtrain.label + 0.5, group=dtrain.get_group())
    with pytest.raises(ValueError, match="integers in"):
        cbudget.train(rank_params(), fractional, 2, verbose_eval=False)
    with pytest.raises(ValueError, match="lambdarank_truncation_level"):
        cbudget.train(rank_params(lambdarank_truncation_level=0), dtrain, 2)
    for algorithm, hint in [("cstc", "reg:squarederror"), ("budget_rf", "binary:logistic"),
                            ("adapt_lin", "binary:logistic")]:
        with pytest.raises(ValueError, match=f"To rank with this algorithm.*{hint}"):
            cbudget.train({"algorithm": algorithm, "objective": "rank:ndcg"}, dtrain, 2)


def test_subsample_bags_whole_queries(ranking_data):
    dtrain, _ = ranking_data
    sizes = dtrain.get_group()
    model = cbudget.train(rank_params(subsample=0.5, seed=3), dtrain, 4, verbose_eval=False)
    for r, tree in enumerate(model.trees):
        in_bag = int(tree["n_samples"][0])
        # the round's sample: half of the queries, whole (the seed and round decide it)
        chosen = np.random.default_rng([3, r]).choice(sizes.size, sizes.size // 2,
                                                      replace=False)
        assert in_bag == sizes[chosen].sum()


def test_pairwise_takes_any_labels_and_ignores_equal_ones(ranking_data):
    dtrain, _ = ranking_data
    scaled = cbudget.Dataset(dtrain.data, dtrain.label * 10 - 7.5, group=dtrain.get_group())
    a = cbudget.train(rank_params(objective="rank:pairwise"), dtrain, 3, verbose_eval=False)
    b = cbudget.train(rank_params(objective="rank:pairwise"), scaled, 3, verbose_eval=False)
    np.testing.assert_allclose(a.predict(dtrain), b.predict(dtrain))


# -- the other models, evaluated with the ranking metrics -------------------------------
@pytest.mark.parametrize("algorithm", ["cstc", "cscc"])
def test_cstc_ranks_by_regression_on_relevance(ranking_data, algorithm):
    dtrain, dvalid = ranking_data
    result = {}
    # without fine-tuning, which follows the last sweep (and so the last log entry)
    model = cbudget.train({"algorithm": algorithm, "objective": "reg:squarederror",
                           "eval_metric": ["ndcg@5"], "cost_tradeoff": 0.001,
                           "fine_tune": False},
                          dtrain, 10, evals=[(dvalid, "valid")], evals_result=result,
                          verbose_eval=False)
    assert result["valid"]["ndcg@5"][-1] == pytest.approx(evaluate_metric(
        "ndcg@5", dvalid.label, model.predict(dvalid), group=dvalid.get_group()))
    assert result["valid"]["ndcg@5"][-1] > 0.8
    assert model.cost_report(dvalid).mean_cost_per_query > 0


def test_budget_rf_on_binary_relevance_with_precision_at_5(ranking_data):
    dtrain, dvalid = ranking_data
    binary = cbudget.Dataset(dtrain.data, dtrain.label >= 3, group=dtrain.get_group(),
                             feature_costs=FEATURE_COSTS)
    valid = cbudget.Dataset(dvalid.data, dvalid.label >= 3, group=dvalid.get_group(),
                            reference=binary)
    result = {}
    model = cbudget.train({"algorithm": "budget_rf", "eval_metric": ["precision@5"]},
                          binary, 20, evals=[(valid, "valid")], evals_result=result,
                          verbose_eval=False)
    assert len(result["valid"]["precision@5"]) == model.num_trees()
    # ranked by the probability of relevance (the leaves' class counts)
    proba = model.predict_proba(valid)[:, 1]
    assert result["valid"]["precision@5"][-1] == pytest.approx(evaluate_metric(
        "precision@5", valid.label, proba, group=valid.get_group()))
    chance = evaluate_metric("precision@5", valid.label, np.zeros(valid.num_data()),
                             group=valid.get_group())
    assert result["valid"]["precision@5"][-1] > chance


# -- scikit-learn ------------------------------------------------------------------------
def test_sklearn_rankers(ranking_data):
    pytest.importorskip("sklearn")
    from sklearn.base import clone

    from cbudget.sklearn import CEGBRanker, GBDTRanker, GreedyMiserRanker
    dtrain, dvalid = ranking_data
    X, y, sizes = dtrain.data, dtrain.label, dtrain.get_group()
    qid = np.repeat(np.arange(sizes.size), sizes)
    common = dict(n_estimators=10, num_leaves=7, params={"min_data_in_leaf": 5})
    by_group = GBDTRanker(**common).fit(X, y, group=sizes)
    by_qid = GBDTRanker(**common).fit(X, y, qid=qid)
    np.testing.assert_array_equal(by_group.predict(dvalid.data), by_qid.predict(dvalid.data))
    assert by_group.score(dvalid.data, dvalid.label, group=dvalid.get_group()) > 0.8
    ranker = CEGBRanker(n_estimators=10, cost_tradeoff=0.001, feature_costs=FEATURE_COSTS,
                        early_stopping_rounds=3, params={"min_data_in_leaf": 5})
    ranker.fit(X, y, group=sizes, eval_set=[(dvalid.data, dvalid.label)],
               eval_group=[dvalid.get_group()])
    assert "ndcg@5" in ranker.evals_result_["valid_0"]
    assert clone(ranker).get_params()["cost_tradeoff"] == 0.001
    path = GreedyMiserRanker(n_estimators=5, cost_tradeoff="path", path_points=3,
                             feature_costs=FEATURE_COSTS).fit(X, y, group=sizes)
    assert len(path.cost_path_.lambdas) == 3
    pairwise = GBDTRanker(n_estimators=3, params={"objective": "rank:pairwise"})
    assert pairwise.fit(X, y, group=sizes).model_.objective == "rank:pairwise"
    with pytest.raises(ValueError, match="query groups"):
        GBDTRanker().fit(X, y)
    with pytest.raises(ValueError, match="eval_group"):
        GBDTRanker().fit(X, y, group=sizes, eval_set=[(dvalid.data, dvalid.label)])
    with pytest.raises(ValueError, match=r"objective.] of a ranker"):
        GBDTRanker(params={"objective": "reg:squarederror"}).fit(X, y, group=sizes)


# -- the command line --------------------------------------------------------------------
def test_command_line_trains_and_reports_a_ranker(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    from cbudget.__main__ import main
    frames = []
    for seed, name in ((0, "train.csv"), (1, "valid.csv")):
        X, y, sizes = make_queries(40, seed)
        frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
        frame.insert(0, "query", np.repeat(np.arange(sizes.size) + 1000 * seed, sizes))
        frame["relevance"] = y
        frame.to_csv(tmp_path / name, index=False)
        frames.append(frame)
    model_path = tmp_path / "rank.json"
    status = main(["train", str(tmp_path / "train.csv"), "--label", "relevance", "--query",
                   "query", "--valid", str(tmp_path / "valid.csv"), "--param",
                   "objective=rank:ndcg", "--param", "algorithm=cegb", "--param",
                   "cost_tradeoff=0.001", "--rounds", "5", "--quiet", "-o", str(model_path)])
    out = capsys.readouterr().out
    assert status == 0 and "validation ndcg@5" in out and "per query" in out
    model = cbudget.load_model(model_path)
    assert "query" not in model.feature_names and "relevance" not in model.feature_names
    assert main(["report", str(model_path), str(tmp_path / "valid.csv"), "--query", "query",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_queries"] == 40
    assert summary["cost_per_query"]["mean"] == pytest.approx(
        summary["cost_per_input"]["mean"] * len(frames[1]) / 40)
