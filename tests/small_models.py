"""Small models of every type, shared by the tests that run each kind."""


def small_model_params(algorithm):
    """Parameters of a small binary model of ``algorithm`` (every model type), for tests
    that run each kind of model on a few hundred rows."""
    params = {"algorithm": algorithm, "objective": "binary:logistic", "n_jobs": 1,
              "max_depth": 4}
    if algorithm in ("cegb", "greedy_miser", "adapt_gbrt"):
        params["cost_tradeoff"] = 0.01
    if algorithm == "adapt_lin":
        params.update(n_restarts=1, cost_tradeoff=0.01)
        del params["max_depth"]
    if algorithm in ("cstc", "cscc", "cronus"):
        params.update(max_depth=2, cost_tradeoff=0.001)
    return params
