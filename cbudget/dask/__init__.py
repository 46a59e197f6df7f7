"""cbudget on a Dask cluster (``pip install cbudget[dask]``): scoring, cost paths and
parameter sweeps, and data-parallel training of gbdt, cegb and greedy_miser
(docs/architecture.md, "Dask").
"""
from .scoring import *  # noqa: F403
from .scoring import __all__ as _scoring_all
from .training import *  # noqa: F403
from .training import __all__ as _training_all

__all__ = _scoring_all + _training_all
