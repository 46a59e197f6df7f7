"""Small models of every type, shared by the tests that run each kind; the lists of
algorithms come from the registry (cbudget.algorithms.REGISTRY), the only list of them."""
import cbudget
from cbudget.algorithms import REGISTRY
from cbudget.model_io import algorithms_of

# every registered algorithm, in registry order
ALGORITHMS = tuple(REGISTRY)
BOOSTERS = algorithms_of(cbudget.Booster)
# models built in stages (boosting rounds, forest trees)
STAGED = BOOSTERS + algorithms_of(cbudget.Forest)
# trees and cascades of linear classifiers
CLASSIFIER_TREES = algorithms_of(cbudget.ClassifierTree) + algorithms_of(cbudget.Cascade)
GATED = algorithms_of(cbudget.GatedModel)


def takes_expensive_model(algorithm):
    """Whether ``train`` needs an ``expensive_model`` for ``algorithm`` (the gated ones)."""
    return REGISTRY[algorithm].takes_expensive_model


def small_model_params(algorithm):
    """Parameters of a small binary model of ``algorithm`` (every model type), for tests
    that run each kind of model on a few hundred rows."""
    declared = REGISTRY[algorithm].declared
    params = {"algorithm": algorithm, "objective": "binary:logistic", "n_jobs": 1,
              "max_depth": 4, "cost_tradeoff": 0.01, "n_restarts": 1}
    if algorithm in CLASSIFIER_TREES:
        params.update(max_depth=2, cost_tradeoff=0.001)
    return {name: value for name, value in params.items() if name in declared}
