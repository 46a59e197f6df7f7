"""Small real data sets shipped with cbudget."""
from __future__ import annotations

import gzip
import os
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["load_letters", "make_four_clusters", "make_quadrants", "make_ranking",
           "train_valid_test_split"]

_DATA_DIR = os.path.join(os.path.dirname(__file__), "data")

# letter-recognition.data.gz: the UCI Letter Recognition data set (20,000 rows, 16
# integer features in 0..15, label A..Z), copied from ../shared/data (sha256 of the
# uncompressed file 2b89f3602cf768d3c8355267d2f13f2417809e101fc2b5ceee10db19a60de6e2;
# source: UCI Machine Learning Repository, "Letter Recognition", P. W. Frey and
# D. J. Slate, 1991).
LETTER_FEATURES = ["x-box", "y-box", "width", "high", "onpix", "x-bar", "y-bar", "x2bar",
                   "y2bar", "xybar", "x2ybar", "xy2bar", "x-ege", "xegvy", "y-ege", "yegvx"]


def load_letters() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The UCI Letters data set.

    Returns
    -------
    X : ndarray of float64, shape (20000, 16)
    y : ndarray of int64, shape (20000,)
        Classes 0..25 for the letters A..Z.
    feature_names : list of str
    """
    with gzip.open(os.path.join(_DATA_DIR, "letter-recognition.data.gz"), "rt") as f:
        rows = [line.strip().split(",") for line in f if line.strip()]
    y = np.array([ord(r[0]) - ord("A") for r in rows], dtype=np.int64)
    X = np.array([[float(v) for v in r[1:]] for r in rows], dtype=np.float64)
    return X, y, list(LETTER_FEATURES)


def train_valid_test_split(n_samples: int, sizes: Sequence[int], seed: int = 0
                           ) -> list[np.ndarray]:
    """Index arrays of a random split into parts of the given ``sizes`` (fixed seed).

    Parameters
    ----------
    n_samples : int
        Number of rows to split.
    sizes : sequence of int
        Rows in each part; they may add up to less than ``n_samples`` (the rest is in
        no part).
    seed : int, default 0

    Returns
    -------
    list of ndarray of int64
        Sorted, disjoint row indices, one array per part.
    """
    if sum(sizes) > n_samples:
        raise ValueError("the parts are larger than the data")
    order = np.random.default_rng(seed).permutation(n_samples)
    bounds = np.cumsum([0] + list(sizes))
    return [np.sort(order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


QUADRANT_MEANS = (-5.0, -15.0, 15.0, 5.0)


def make_quadrants(n_samples: int, seed: int = 0, means: ArrayLike = QUADRANT_MEANS, *,
                   label_noise: float = 1.0, feature_noise: float = 1.0
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic regression data of the CSTC paper (Xu et al., JMLR 2014, section
    6.1), whose optimal feature cost is 12 per input.

    ``x`` and ``z`` are uniform in [-1, 1]; the quadrant of an input is
    ``q = (x < 0) + 2 (z < 0)`` (order ++, -+, +-, --) and its label is drawn from
    ``N(means[q], label_noise^2)``. The default means, ``-10 sign(z) + 5 sign(x)``, put
    the quadrants with negative ``z`` higher, as in the paper. Features (columns): four
    expensive ones -- column ``q`` equals the label for inputs of quadrant ``q`` and is
    an independent ``N(means[q], feature_noise^2)`` draw for the others (by default with
    the labels' spread, so that all four look alike) -- then ``sign(x)`` and
    ``sign(z)``, the cheap ones. With costs
    ``[10, 10, 10, 10, 1, 1]`` a perfect predictor reads the two signs, then the
    quadrant's expensive feature: cost 12.

    Parameters
    ----------
    n_samples : int
    seed : int, default 0
    means : array-like of 4 floats, default ``(-5, -15, 15, 5)``
        The label mean of each quadrant.
    label_noise : float, default 1
        Standard deviation of the labels around their quadrant's mean.
    feature_noise : float, default 1
        Standard deviation of the expensive features' values outside their quadrant.

    Returns
    -------
    X : ndarray of float64, shape (n_samples, 6)
    y : ndarray of float64, shape (n_samples,)
    """
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-1, 1, n_samples), rng.uniform(-1, 1, n_samples)
    quadrant = (x < 0).astype(np.int64) + 2 * (z < 0)
    means = np.asarray(means, dtype=np.float64)
    if means.shape != (4,) or not np.isfinite(means).all():
        raise ValueError(f"means must be 4 finite numbers, got {means!r}")
    if not (label_noise >= 0 and feature_noise >= 0):
        raise ValueError("label_noise and feature_noise must be >= 0")
    y = means[quadrant] + label_noise * rng.normal(size=n_samples)
    X = np.empty((n_samples, 6))
    X[:, :4] = means + feature_noise * rng.normal(size=(n_samples, 4))
    X[np.arange(n_samples), quadrant] = y
    X[:, 4], X[:, 5] = np.where(x < 0, -1.0, 1.0), np.where(z < 0, -1.0, 1.0)
    return X, y


FOUR_CLUSTER_CENTERS = ((-2.5, 6.0), (0.0, 6.0), (0.0, 0.0), (0.0, -2.0))
FOUR_CLUSTER_LABELS = (1, 0, 1, 0)


def make_four_clusters(n_samples: int, seed: int = 0, noise: ArrayLike = 0.2, *,
                       centers: ArrayLike = FOUR_CLUSTER_CENTERS,
                       labels: ArrayLike = FOUR_CLUSTER_LABELS,
                       proportions: ArrayLike | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two features, four Gaussian clusters: the adaptive-acquisition example of the ADAPT
    paper (Nan and Saligrama, NIPS 2017, Synthetic-2, Figure 3), and with ``centers``,
    ``labels``, ``noise`` and ``proportions`` a family of such geometries.

    By default clusters 1 and 2 (the top, ``x2 = 6``) have labels 1 and 0 and differ in
    ``x1``; clusters 3 and 4 (``x1 = 0``, ``x2 = 0`` and ``-2``) have labels 1 and 0. No
    linear classifier separates the classes, so an expensive model f0 reading both
    features is needed somewhere. An L1-regularised logistic regression picks ``x1``
    first (it isolates cluster 1); with ``x1`` alone a gate can send only cluster 1 to a
    low-cost predictor, so full accuracy costs 1.75 per input with unit costs. The
    adaptive system reads ``x2`` only: the gate sends the top clusters to f0 and a
    predictor on ``x2`` separates clusters 3 and 4 -- full accuracy at cost 1.5.

    In general (unit costs, f0 reading both features, clusters far apart compared with
    ``noise``) the cheapest fully accurate gated model with a linear gate and predictor
    reads one feature ``a`` for every input: the gate keeps the clusters on one side of
    a threshold on ``x_a`` whose labels a threshold on ``x_a`` separates and sends the
    others to f0, which also pays the other feature -- cost 1 + (share of the inputs sent
    to f0), minimised over ``a`` and the threshold.

    Parameters
    ----------
    n_samples : int
    seed : int, default 0
    noise : float or array-like of 4 floats, default 0.2
        Standard deviation of the Gaussian noise around each cluster's centre (one for
        all clusters, or one per cluster).
    centers : array-like of shape (4, 2), default ``FOUR_CLUSTER_CENTERS``
        The clusters' centres ``(x1, x2)``.
    labels : array-like of 4 ints in {0, 1}, default ``FOUR_CLUSTER_LABELS``
        The clusters' labels.
    proportions : array-like of 4 non-negative floats, optional
        The clusters' shares of the rows (normalised to sum 1; counts rounded by largest
        remainder, ties to the first clusters), the rows ordered by cluster. None (the
        default): equally large clusters interleaved, row ``i`` in cluster ``i % 4``.

    Returns
    -------
    X : ndarray of float64, shape (n_samples, 2)
    y : ndarray of int64, shape (n_samples,)
    cluster : ndarray of int64, shape (n_samples,)
        0..3 for clusters 1..4 (by default ``n_samples // 4`` each, the first ones one
        more).
    """
    centers = np.asarray(centers, dtype=np.float64)
    if centers.shape != (4, 2) or not np.isfinite(centers).all():
        raise ValueError(f"centers must be 4 finite points of 2 coordinates (shape (4, 2)), "
                         f"got shape {centers.shape}")
    labels = np.asarray(labels)
    if labels.shape != (4,) or not np.isin(labels, (0, 1)).all():
        raise ValueError(f"labels must be 4 values in {{0, 1}}, got {labels.tolist()!r}")
    noise = np.asarray(noise, dtype=np.float64)
    if noise.shape not in ((), (4,)) or not (np.isfinite(noise).all() and (noise >= 0).all()):
        raise ValueError(f"noise must be a finite number >= 0 or 4 of them, got "
                         f"{noise.tolist()!r}")
    if proportions is None:
        cluster = np.arange(n_samples) % 4
    else:
        share = np.asarray(proportions, dtype=np.float64)
        if (share.shape != (4,) or not np.isfinite(share).all() or (share < 0).any()
                or share.sum() <= 0):
            raise ValueError(f"proportions must be 4 finite numbers >= 0, not all 0, got "
                             f"{share.tolist()!r}")
        exact = n_samples * share / share.sum()
        counts = np.floor(exact).astype(np.int64)
        extra = np.argsort(-(exact - counts), kind="stable")[:n_samples - counts.sum()]
        counts[extra] += 1
        cluster = np.repeat(np.arange(4), counts)
    rng = np.random.default_rng(seed)
    scale = noise if noise.ndim == 0 else noise[cluster][:, None]
    X = centers[cluster] + scale * rng.normal(size=(n_samples, 2))
    return X, labels.astype(np.int64)[cluster], cluster.astype(np.int64)


# make_ranking's features: (cost, noise added to the latent relevance); None: pure noise
RANKING_FEATURES = ((1.0, 1.5), (1.0, None), (50.0, 0.7), (50.0, 0.7), (200.0, 0.3))
# the latent relevance's cut points for the grades 1, 2, 3, 4
RANKING_GRADES = (0.0, 0.8, 1.4, 2.0)


def make_ranking(n_queries: int, seed: int = 0, docs_per_query: tuple[int, int] = (8, 20)
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A synthetic learning-to-rank set where the costlier features rank better.

    Each query has ``docs_per_query[0]`` to ``docs_per_query[1] - 1`` documents (uniform);
    each document a latent relevance ``z ~ N(0, 1)``, graded 0..4 by the cut points 0,
    0.8, 1.4 and 2 (about 50 / 29 / 13 / 6 / 2 % of the documents). Its five features:
    ``z`` plus Gaussian noise of deviation 1.5 (cost 1), pure noise (cost 1), two copies
    of ``z`` with noise 0.7 (cost 50 each) and ``z`` with noise 0.3 (cost 200).

    Parameters
    ----------
    n_queries : int
    seed : int, default 0
    docs_per_query : (int, int), default (8, 20)

    Returns
    -------
    X : ndarray of float64, shape (n_documents, 5)
    y : ndarray of float64, shape (n_documents,)
        Relevance grades 0..4.
    group : ndarray of int64, shape (n_queries,)
        The documents of each query, in row order.
    feature_costs : ndarray of float64, shape (5,)
    """
    rng = np.random.default_rng(seed)
    group = rng.integers(*docs_per_query, size=n_queries)
    n = int(group.sum())
    latent = rng.normal(size=n)
    X = np.column_stack([rng.normal(size=n) if noise is None
                         else latent + rng.normal(scale=noise, size=n)
                         for _, noise in RANKING_FEATURES])
    y = np.digitize(latent, RANKING_GRADES).astype(np.float64)
    return X, y, group, np.array([cost for cost, _ in RANKING_FEATURES])
