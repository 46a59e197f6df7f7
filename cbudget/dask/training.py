"""Data-parallel training of gbdt, cegb and greedy_miser on a Dask cluster, in the style
of ``xgboost.dask.train`` (docs/architecture.md, "Dask").

Each worker keeps its partitions' binned rows, labels, scores, gradients and CEGB
acquisition bitsets in its memory for the whole run (a :class:`WorkerShard`, held as a
Dask actor). The workers grow every tree together, each with the grower of
single-machine training (``TreeGrower.grow_remote``): per split, each worker builds the
histograms (with CEGB's counts of inputs lacking each feature) of its rows, the workers
sum them among themselves (:mod:`cbudget.dask.collective`: every worker gets the same
sum, in a fixed order), and each picks the same split with the same code and splits
its own rows. The driver asks once per round and receives the round's trees (the same
from every worker, checked); it never sees a histogram.
"""
from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
from distributed import Client

from .._core._acquisition import AcquisitionState
from .._core._grower import bin_words
from .._core._openmp_helpers import resolve_n_threads
from .._core._predict import predict_binned_add
from .._core._types import HISTOGRAM_DTYPE
from .._model import Model
from ..algorithms import REGISTRY
from ..algorithms.boosting import (
    BoostingTrainer,
    RoundSampler,
    add_checked_round,
    binned_like,
    initial_base_score,
    mean_training_cost,
    penalty_costs,
    stage_tradeoffs,
    tree_grower,
)
from ..booster import Booster
from ..callback import CallbackContainer, TrainingCallback
from ..categories import (
    CategoricalSpec,
    Categories,
    fit_categories,
    parse_categorical_feature,
)
from ..costs import CostGroups, CostModel, FeatureCosts, GroupCosts
from ..dataset import Dataset, binned_dtype, binning_rows, read_matrix
from ..engine import Trainer, TrainingSetup, run_training
from ..objectives import get_objective
from ..training import Evals, set_up_training, training_callbacks
from .collective import PeerError, PeerGroup, peer_token
from .scoring import check_client

__all__ = ["DaskDataset", "train"]

# rows binned at a time on a worker: the bins' scratch stays small (1.8 MB at 28 features)
BINNING_BLOCK = 1 << 16


def distributed_algorithms() -> list[str]:
    """The registered algorithms trained data-parallel here: those of the boosting
    trainer (:class:`cbudget.algorithms.boosting.BoostingTrainer`), whose rounds this
    module's trainer replicates on the workers (gbdt, cegb, greedy_miser)."""
    return [name for name, algorithm in REGISTRY.items()
            if algorithm.trainer is BoostingTrainer]


def _is_dask_collection(value: object) -> bool:
    try:
        from dask.base import is_dask_collection
    except ImportError:    # pragma: no cover - cbudget.dask needs dask to import
        return False
    return is_dask_collection(value)


def _row_blocks(collection: Any, what: str) -> list:
    """The row partitions of a Dask array (2-D: one block of columns) or DataFrame /
    Series, as delayed objects in row order."""
    if not _is_dask_collection(collection):
        raise TypeError(f"{what} must be a Dask array or DataFrame, got "
                        f"{type(collection).__name__}")
    if hasattr(collection, "chunks"):          # a Dask array
        if collection.ndim == 2:
            collection = collection.rechunk({1: -1})
            return list(collection.to_delayed()[:, 0])
        if collection.ndim == 1:
            return list(collection.to_delayed())
        raise ValueError(f"{what} must be 1-D or 2-D, got {collection.ndim} dimensions")
    return list(collection.to_delayed())


def _is_categorical_dtype(dtype: object) -> bool:
    return getattr(dtype, "name", None) == "category"


def _check_numeric(values: Any, name: str) -> None:
    """TypeError for a Dask label or weight column that is not numeric (strings,
    categories: as cbudget.Dataset refuses them), from its metadata, before anything is
    computed."""
    dtype = getattr(values, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "f") not in "biuf":
        raise TypeError(f"{name} has dtype {dtype}: {name}s are numbers (classes numbered "
                        f"0..K-1): encode a {name} of strings or categories first, e.g. "
                        "with pandas.factorize")


def _column_dtypes(data: Any) -> list:
    """The dtype of each column of a Dask DataFrame or 2-D array (from its metadata:
    nothing is computed)."""
    if hasattr(data, "columns"):
        return list(data.dtypes)
    if getattr(data, "ndim", 0) != 2:
        raise ValueError(f"data must be 2-D, got {getattr(data, 'ndim', '?')} dimensions")
    return [data.dtype] * int(data.shape[1])


def merge_levels(found: list[list], name: str, categorical_dtype: bool) -> list:
    """A column's levels from those of its partitions, as a Dataset of all the rows
    fits them: a ``category`` column's categories in order of first appearance (the
    partitions' union, as Dask concatenates them; equal categories stay as they are),
    another column's distinct values sorted; checked alike (one kind of level, at most
    ``MAX_LEVELS``)."""
    import pandas as pd
    merged = list(dict.fromkeys(level for levels in found for level in levels))
    column = (pd.Series(pd.Categorical(merged, categories=merged)) if categorical_dtype
              else pd.Series(merged, dtype=object))
    levels = fit_categories(pd.DataFrame({name: column}), [name], [0]).levels[0]
    assert levels is not None      # a column of levels has levels
    return levels


def fit_dask_categories(client: Client, data: Any, partitions: list, names: list[str],
                        spec: CategoricalSpec) -> Categories:
    """The categorical features ``spec`` names in the Dask collection ``data`` and
    their levels over all its rows, as :class:`cbudget.Dataset` fits them on the whole
    data: each partition's levels found on its worker (``partitions``: the futures of
    ``data``'s row partitions; :func:`cbudget.categories.fit_categories`, "auto" taking
    a partition's category and string columns), the driver merging them
    (:func:`merge_levels`). A collection of numbers (integer codes) is not read."""
    if isinstance(spec, Categories):
        return spec
    dtypes = _column_dtypes(data)
    # columns that may hold levels (category, string, object: kind "O")
    with_levels = [m for m, dtype in enumerate(dtypes)
                   if getattr(dtype, "kind", "O") not in "biuf"]
    auto = spec is None or isinstance(spec, str) and spec == "auto"
    chosen = [] if auto else parse_categorical_feature(spec, names, []).tolist()
    if not (with_levels if auto else set(with_levels) & set(chosen)):
        return Categories(chosen)      # integer codes only, or nothing categorical
    parts = client.gather(client.map(fit_categories, partitions, names=names,
                                     spec="auto" if auto else chosen, pure=False))
    if auto:      # the columns any partition takes (an object column holding strings)
        chosen = sorted({m for part in parts for m in part.features.tolist()})
    levels: list[list | None] = []
    for m in chosen:
        found = [part.levels_of(m) for part in parts if m in part.features]
        found = [lv for lv in found if lv is not None]
        levels.append(merge_levels(found, names[m], _is_categorical_dtype(dtypes[m]))
                      if found else None)
    return Categories(chosen, levels)


def _partition(X: Any, label: Any, weight: Any, categories: Categories,
               feature_names: Sequence[str] | None) -> tuple:
    """One partition's float matrix (categorical columns as the codes of
    ``categories``' levels), labels and weights, checked to have the same rows,
    without its rows of weight 0 (no training rows, as in :func:`cbudget.train`)."""
    X, _ = read_matrix(X, "data", categories, check=True, feature_names=feature_names)
    y = np.asarray(label, dtype=np.float64).reshape(-1)
    w = None if weight is None else np.asarray(weight, dtype=np.float64).reshape(-1)
    if y.shape[0] != X.shape[0] or (w is not None and w.shape[0] != X.shape[0]):
        raise ValueError(f"a partition has {X.shape[0]} rows of data but "
                         f"{y.shape[0]} labels" + ("" if w is None else
                                                   f" and {w.shape[0]} weights")
                         + ": data, label and weight must be partitioned alike")
    if w is not None and np.any(w == 0):
        kept = w != 0          # negative weights stay, for the Dataset check to refuse
        X, y, w = X[kept], y[kept], w[kept]
    return X, y, w


def _labels(part: tuple) -> tuple:
    return part[1], part[2]


def _rows_of(part: tuple, rows: np.ndarray) -> np.ndarray:
    return part[0][rows]


class DaskDataset:
    """Training data on a Dask cluster for :func:`train`, as ``xgboost.dask.DaskDMatrix``.

    Parameters
    ----------
    client : distributed.Client
    data : dask.array.Array (n_samples, n_features) or dask.dataframe.DataFrame
        Partitioned along rows (a Dask array's column blocks are joined).
    label : dask.array.Array or dask.dataframe.Series
        Partitioned like ``data``.
    weight : like ``label``, optional
    feature_names, feature_costs, cost_groups, group_costs, coupled_costs, split_cost
        As for :class:`cbudget.Dataset`.
    tree_cost, default_cost, max_bin, categorical_feature
        As for :class:`cbudget.Dataset`: "auto" takes a DataFrame's ``category`` and
        string columns; names or indices take those columns (a Dask array of integer
        codes, or a DataFrame's numeric columns of codes).

    Notes
    -----
    The partitions are computed and kept on the workers (``client.compute``); they stay
    where Dask put them, and training keeps each worker's rows there. The levels of
    the categorical columns are those of all the rows (each partition's found on its
    worker, merged by the driver as a Dataset of the whole data orders them), and every
    partition is coded with them. The bin edges, and the categorical features' bins
    (their most frequent codes), are found on the driver from the same rows a
    :class:`cbudget.Dataset` of the whole data would use (all of them up to 200,000
    rows, else the same random sample), gathered once: the bins, and so the trees,
    equal single-machine training's. The driver also gathers the labels and weights
    once (16 bytes per row), for the initial score.

    Attributes
    ----------
    reference : cbudget.Dataset
        The bin edges, feature names, costs and categories (levels and bins), without
        rows: build validation data with ``cbudget.Dataset(X, y,
        reference=dtrain.reference)``.
    partition_rows : list of int
    """

    def __init__(self, client: Client, data: Any, label: Any, *, weight: Any = None,
                 feature_names: Sequence[str] | None = None,
                 feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                 coupled_costs: FeatureCosts | None = None,
                 split_cost: float = 0.0, tree_cost: float = 0.0,
                 default_cost: float | None = None, max_bin: int = 255,
                 categorical_feature: CategoricalSpec = "auto") -> None:
        check_client(client)
        self.client = client
        blocks = _row_blocks(data, "data")
        label_blocks = _row_blocks(label, "label")
        weight_blocks = (None if weight is None else _row_blocks(weight, "weight"))
        _check_numeric(label, "label")
        _check_numeric(weight, "weight")
        if len(label_blocks) != len(blocks) or (weight_blocks is not None
                                                and len(weight_blocks) != len(blocks)):
            raise ValueError(f"data has {len(blocks)} partitions, label "
                             f"{len(label_blocks)}" + ("" if weight_blocks is None else
                                                       f", weight {len(weight_blocks)}")
                             + ": they must be partitioned alike")
        if feature_names is None and hasattr(data, "columns"):
            feature_names = [str(c) for c in data.columns]
        names = ([str(n) for n in feature_names] if feature_names is not None else
                 [f"f{m}" for m in range(len(_column_dtypes(data)))])
        raw = client.compute(blocks)    # read once: for the levels, then to be coded
        categories = fit_dask_categories(client, data, raw, names, categorical_feature)
        self.parts = client.map(_partition, raw, client.compute(label_blocks),
                                [None] * len(blocks) if weight_blocks is None
                                else client.compute(weight_blocks),
                                categories=categories, feature_names=feature_names,
                                pure=False)
        del raw      # each raw partition is freed once coded
        labels = client.gather(client.map(_labels, self.parts))
        self.partition_rows = [int(y.shape[0]) for y, _ in labels]
        self.label = np.concatenate([y for y, _ in labels])
        self.weight = (None if weight is None
                       else np.concatenate([w for _, w in labels]))
        n_samples = self.label.shape[0]
        if n_samples == 0:
            raise ValueError("the training data has no rows" if weight is None else
                             "the training data has no rows of positive weight (all "
                             "weights zero, or no rows)")
        sample = self._gather_rows(binning_rows(n_samples, self.weight))
        template = Dataset(sample, feature_names=feature_names,
                           feature_costs=feature_costs, cost_groups=cost_groups,
                           group_costs=group_costs, coupled_costs=coupled_costs,
                           split_cost=split_cost, tree_cost=tree_cost,
                           default_cost=default_cost, max_bin=max_bin,
                           categorical_feature=categories)
        self.reference = template.without_rows()
        # cbudget.Dataset's checks of the labels and weights (finite, weights >= 0 ...)
        Dataset(np.zeros((n_samples, 1)), self.label, weight=self.weight)

    def _gather_rows(self, rows: np.ndarray | None) -> np.ndarray:
        """The rows with these global indices (None: all), gathered to the driver."""
        offsets = np.concatenate(([0], np.cumsum(self.partition_rows)))
        picks = []
        for i, part in enumerate(self.parts):
            local = (np.arange(self.partition_rows[i]) if rows is None else
                     rows[(rows >= offsets[i]) & (rows < offsets[i + 1])] - offsets[i])
            picks.append(self.client.submit(_rows_of, part, local, pure=False))
        return np.concatenate(self.client.gather(picks))

    def num_data(self) -> int:
        return int(self.label.shape[0])

    def num_feature(self) -> int:
        return self.reference.num_feature()

    @property
    def feature_names(self) -> list[str]:
        return self.reference.feature_names

    @property
    def cost_model(self) -> CostModel:
        return self.reference.cost_model

    def placement(self) -> dict[str, list[int]]:
        """Which partitions each worker holds (by worker address, sorted; partitions
        in row order): training keeps them there."""
        holders = self.client.who_has(self.parts)
        by_worker: dict[str, list[int]] = {}
        for i, part in enumerate(self.parts):
            where = sorted(holders.get(part.key, ()))
            if not where:
                raise RuntimeError(f"partition {i} of the training data is on no worker "
                                   "(lost with its worker?)")
            by_worker.setdefault(where[0], []).append(i)
        return dict(sorted(by_worker.items()))

    def __repr__(self) -> str:
        return (f"<cbudget.dask.DaskDataset: {self.num_data()} rows x {self.num_feature()} "
                f"features in {len(self.parts)} partitions>")


def sum_message(a: np.ndarray, b: np.ndarray, n_ints: int, n_floats: int,
                histogram_entries: int) -> np.ndarray:
    """``a + b`` for two workers' answers packed by :meth:`PeerExchange.pack` (int64s,
    then float64s, then a histogram block of ``histogram_entries`` histograms and its
    acquisition counts, or none), summed field by field."""
    total = a.copy()
    ints, floats = 8 * n_ints, 8 * (n_ints + n_floats)
    total[:ints].view(np.int64)[:] += b[:ints].view(np.int64)
    total[ints:floats].view(np.float64)[:] += b[ints:floats].view(np.float64)
    if histogram_entries:
        size = floats + histogram_entries * HISTOGRAM_DTYPE.itemsize
        hist = total[floats:size].view(HISTOGRAM_DTYPE)
        other = b[floats:size].view(HISTOGRAM_DTYPE)
        for field in HISTOGRAM_DTYPE.names or ():   # names: None only for a plain dtype
            hist[field] += other[field]
        total[size:].view(np.uint32)[:] += b[size:].view(np.uint32)
    return total


class PeerExchange:
    """The exchange of a worker's tree grower (``TreeGrower.grow_remote``): this
    worker's rows answer through its row grower (:class:`WorkerShard`), and every
    answer is summed over the workers (:meth:`PeerGroup.allreduce`, one sum per split),
    so that every worker grows the same tree, as the driver of a single machine's rows
    would. A histogram block travels without the bins no feature has (the grower's
    block gives every feature as many bins as the widest), and is whole again after
    the sum."""

    def __init__(self, shard: WorkerShard, peers: PeerGroup, reference: Dataset):
        self.shard, self.peers = shard, peers
        self.output = 0
        n_bins = reference.missing_bin + 1
        n_features = reference.num_feature()
        self.histogram_entries = n_features * n_bins
        # each feature's value bins and its missing bin: the entries that can be non-zero
        sent = np.concatenate([np.append(np.arange(count), reference.missing_bin) + m * n_bins
                               for m, count in enumerate(reference.n_value_bins.tolist())])
        # None: every bin used, blocks sent as they are
        self.sent_entries = None if sent.size == self.histogram_entries else sent

    def pack(self, block: np.ndarray) -> np.ndarray:
        """A histogram block without its bins no feature has."""
        if self.sent_entries is None:
            return block
        size = self.histogram_entries * HISTOGRAM_DTYPE.itemsize
        sent = block[:size].view(HISTOGRAM_DTYPE)[self.sent_entries]
        return np.concatenate((sent.view(np.uint8), block[size:]))

    def unpack(self, packed: np.ndarray) -> np.ndarray:
        """The whole histogram block of a :meth:`pack` ed one (zeros elsewhere)."""
        if self.sent_entries is None:
            return packed
        size = self.histogram_entries * HISTOGRAM_DTYPE.itemsize
        sent = self.sent_entries.size * HISTOGRAM_DTYPE.itemsize
        block = np.zeros(size + packed.shape[0] - sent, dtype=np.uint8)
        block[:size].view(HISTOGRAM_DTYPE)[self.sent_entries] = packed[:sent].view(
            HISTOGRAM_DTYPE)
        block[size:] = packed[sent:]
        return block

    def summed(self, ints: Sequence[int] | np.ndarray, floats: Sequence[float] = (),
               block: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray,
                                                          np.ndarray | None]:
        """The sums over the workers of this worker's ``ints``, ``floats`` and
        histogram ``block``, in one message."""
        parts = [np.asarray(ints, dtype=np.int64).view(np.uint8),
                 np.asarray(floats, dtype=np.float64).view(np.uint8)]
        if block is not None:
            parts.append(self.pack(block))
        n_ints, n_floats = len(ints), len(floats)
        entries = (0 if block is None else self.histogram_entries
                   if self.sent_entries is None else self.sent_entries.size)
        total = self.peers.allreduce(
            np.concatenate(parts),
            lambda a, b: sum_message(a, b, n_ints, n_floats, entries))
        head = 8 * (n_ints + n_floats)
        return (total[:8 * n_ints].view(np.int64), total[8 * n_ints:head].view(np.float64),
                None if block is None else self.unpack(total[head:]))

    def begin_tree(self, feature_mask: np.ndarray, count_mask: np.ndarray | None) -> tuple:
        n_rows, sum_g, sum_h = self.shard.begin_tree(self.output, feature_mask, count_mask)
        ints, floats, _ = self.summed([n_rows], [sum_g, sum_h])
        return int(ints[0]), float(floats[0]), float(floats[1])

    def histograms(self, node: int) -> np.ndarray | None:
        return self.summed([], [], self.shard.grower.build_node(node))[2]

    def split(self, node: int, feature: int, bin_threshold: int, default_left: bool,
              left_id: int, build_id: int, acquire: bool,
              cat_bins: np.ndarray | None) -> tuple:
        n_left, newly, newly_touched = self.shard.grower.split_node(
            node, feature, bin_threshold, default_left, left_id, acquire, cat_bins)
        block = self.shard.grower.build_node(build_id) if build_id >= 0 else None
        ints, _, total = self.summed([n_left, newly, newly_touched], [], block)
        return int(ints[0]), int(ints[1]), int(ints[2]), total


class WorkerShard:
    """A worker's rows of a Dask training, kept in its memory for the whole run (a Dask
    actor): binned rows (their float values stay in Dask's partitions only), labels,
    scores, gradients, the acquisition bitsets; and the growth of each tree, every
    worker growing the same tree from the histograms summed among the workers
    (:class:`PeerExchange`), so that the driver is asked once per round."""

    def __init__(self, p: dict, reference: Dataset, base_score: np.ndarray,
                 n_total: int, row_ranges: list[tuple[int, int]], rank: int, n_workers: int,
                 token: bytes, timeout: float, *parts: tuple) -> None:
        y = np.concatenate([part[1] for part in parts])
        w = None if parts[0][2] is None else np.concatenate([part[2] for part in parts])
        binned = np.empty((y.shape[0], reference.num_feature()),
                          dtype=binned_dtype(reference.missing_bin), order="F")
        start = 0
        for part in parts:      # binned where they are, a block of rows at a time: no
            for block in range(0, part[0].shape[0], BINNING_BLOCK):     # float copy
                rows = part[0][block:block + BINNING_BLOCK]
                binned[start:start + rows.shape[0]] = reference.bin_data(rows)
                start += rows.shape[0]
        self.data = reference.with_binned_rows(binned, y, w)
        self.objective = get_objective(p["objective"], p["num_class"], p)
        self.objective.check_label(y)
        n_outputs = self.objective.n_outputs
        self.n_threads = min(resolve_n_threads(p["n_jobs"]), _worker_threads())
        self.row_ranges = row_ranges     # (start, stop) in the whole data, per partition
        n = y.shape[0]
        self.raw = np.asfortranarray(np.tile(base_score, (n, 1)))
        self.grad = np.empty((n, n_outputs), order="F")
        self.hess = np.empty((n, n_outputs), order="F")
        if p["algorithm"] == "greedy_miser":    # first order: the hessian is the weight
            unit = np.ones(n) if w is None else w
            self.grow_hess = np.asfortranarray(np.repeat(unit[:, None], n_outputs, axis=1))
        else:
            self.grow_hess = self.hess
        self.sampler = RoundSampler(p, n_total, reference.n_value_bins, n_outputs)
        costs = reference.cost_model
        self.state = AcquisitionState(n, costs.feature_group, costs.n_groups)
        self.grower = tree_grower(self.data, p, self.n_threads, n_tree_rows=n_total)
        # the tree's growth, as a driver would grow it, on the sums of all the workers
        self.peers = PeerGroup(rank, n_workers, token, _worker_host(), timeout)
        self.exchange = PeerExchange(self, self.peers, reference)
        self.tree_grower = tree_grower(reference, p, self.n_threads,
                                       exchange=self.exchange, n_tree_rows=n_total)
        self.cost_state = AcquisitionState(0, costs.feature_group, costs.n_groups)
        self.algorithm, self.costs = p["algorithm"], costs
        self.cost_tradeoff: float | None = None
        self.penalised = "cost_tradeoff" in p
        if self.penalised:       # the cost-aware learners (cegb, greedy_miser)
            self.set_cost_tradeoff(p["cost_tradeoff"])
        self.in_bag = self.out_of_bag = self.rows = np.zeros(0, dtype=np.int32)

    def listen_address(self) -> tuple[str, int] | None:
        return self.peers.address

    def connect(self, addresses: list, workers: list[str]) -> None:
        """Connect to the other workers (``addresses`` by rank; ``workers``: their Dask
        addresses, naming them in errors)."""
        try:
            self.peers.connect(addresses, workers)
        except BaseException:
            self.peers.close()
            raise

    def set_cost_tradeoff(self, tradeoff: float) -> None:
        """Penalise the next splits with ``tradeoff`` (a cost stage starts): the row
        grower's penalty follows this worker's rows' acquisitions, the tree grower's
        the whole model's acquisition counts."""
        penalty = penalty_costs(self.algorithm, self.costs)
        self.grower.set_cost_penalty(self.state, tradeoff, *penalty)
        self.tree_grower.set_cost_penalty(self.cost_state, tradeoff, *penalty)
        self.cost_tradeoff = tradeoff

    def train_round(self, iteration: int, cost_tradeoff: float | None) -> tuple:
        """Grow the round's trees with the other workers (each call of every worker at
        once) and add them to this worker's scores. Returns the trees, the split
        visits of every worker's out-of-bag rows, the model's acquisition counts per
        feature and per group (over all rows), and this worker's traffic (sums,
        bytes sent, bytes received, seconds in the sums) so far; the trees pickled
        (rank 0 only) and the SHA-256 of that pickle (every rank). On an error this
        worker's connections close, so that the others fail at once rather than
        wait."""
        try:
            if cost_tradeoff is not None and cost_tradeoff != self.cost_tradeoff:
                self.set_cost_tradeoff(cost_tradeoff)
            feature_masks = self.start_round(iteration)
            trees, visits = [], 0
            for k, feature_mask in enumerate(feature_masks):
                self.exchange.output = k
                tree = self.tree_grower.grow_remote(feature_mask)
                new_acquisitions, tree_visits, acquired, touched = self.finish_tree(
                    tree, k, not self.penalised)
                n_nodes, n_features = tree.shape[0], acquired.shape[0]
                ints, _, _ = self.exchange.summed(np.concatenate(
                    ([tree_visits], new_acquisitions, acquired, touched)).astype(np.int64))
                visits += int(ints[0])
                tree["new_acquisitions"] += ints[1:1 + n_nodes]
                self.cost_state.set_counts(ints[1 + n_nodes:1 + n_nodes + n_features],
                                           ints[1 + n_nodes + n_features:])
                trees.append(tree)
            state = self.cost_state
            # pickled here: GrownTree's pickling keeps its categorical bin bitsets, which
            # Dask's own serialisation of an ndarray subclass drops. Rank 0 sends the
            # trees, every worker their digest (the driver checks that all grew the same)
            pickled = pickle.dumps(trees, protocol=5)
            return (pickled if self.peers.rank == 0 else None,
                    hashlib.sha256(pickled).digest(), visits, state.acquired_counts.copy(),
                    state.touched_counts.copy(),
                    (self.peers.messages, self.peers.bytes_sent, self.peers.bytes_received,
                     self.peers.seconds))
        except BaseException:
            self.peers.close()
            raise

    def start_round(self, iteration: int) -> list[np.ndarray]:
        """The round's gradients and its in-bag rows (the rows of this worker that the
        whole data's sample for the round holds); returns the round's feature masks."""
        self.objective.gradients(self.raw, self.data.required_label(), self.data.weight,
                                 self.grad, self.hess, self.n_threads, None)
        in_bag_mask, feature_masks = self.sampler.sample(iteration)
        if in_bag_mask is None:         # every row (int32 from the start: rows are many)
            self.in_bag = np.arange(self.raw.shape[0], dtype=np.int32)
            self.out_of_bag = np.zeros(0, dtype=np.int32)
        else:
            local = np.concatenate([in_bag_mask[a:b] for a, b in self.row_ranges])
            self.in_bag = np.flatnonzero(local).astype(np.int32)
            self.out_of_bag = np.flatnonzero(~local).astype(np.int32)
        return feature_masks

    def begin_tree(self, k: int, feature_mask: np.ndarray,
                   count_mask: np.ndarray | None) -> tuple:
        self.rows = self.in_bag.copy()     # the grower reorders its rows
        return self.grower.begin_tree(self.grad[:, k], self.grow_hess[:, k], self.rows,
                                      feature_mask, count_mask)

    def finish_tree(self, tree: np.ndarray, k: int, from_partition: bool) -> tuple:
        """Add the finished tree to the scores of this worker's rows and record their
        acquisitions, as single-machine training does (the in-bag rows from the
        partition unless the grower acquired while growing, the others by routing).
        Returns this worker's new acquisitions per node, the split nodes its out-of-bag
        rows visit, and its acquisition counts per feature and per group."""
        if self.out_of_bag.shape[0] == 0:
            self.grower.add_tree_values(tree, self.raw, k)
        else:
            predict_binned_add(self.data.binned, tree, self.data.missing_bin, self.raw, k,
                               self.n_threads,
                               cat_bin_words=bin_words(tree))
        local = tree.copy()
        local["new_acquisitions"] = 0
        if from_partition and self.rows.shape[0]:
            local["n_samples"] = self.grower.tree_node_sizes()
            self.state.acquire_partition(local, self.rows)
        visits = 0
        if self.out_of_bag.shape[0]:
            visits = self.state.acquire_along_paths(self.data.binned, local,
                                                    self.data.missing_bin, self.out_of_bag,
                                                    bin_words(local))
        return (local["new_acquisitions"].copy(), visits, self.state.acquired_counts.copy(),
                self.state.touched_counts.copy())

    def close(self) -> None:
        """Close the connections and free the rows' arrays now (the actor itself goes
        when Dask releases it, which may be after the next training has started)."""
        self.peers.close()
        del self.data, self.raw, self.grad, self.hess, self.grow_hess, self.state
        del self.grower, self.tree_grower, self.in_bag, self.out_of_bag, self.rows

    def memory_bytes(self) -> int:
        """The bytes of the arrays this shard keeps (binned rows, scores, gradients,
        acquisition bitsets)."""
        arrays = (self.data.binned, self.data.required_label(), self.raw, self.grad,
                  self.hess, self.state.acquired_bits, self.state.groups_touched_bits)
        extra = 0 if self.grow_hess is self.hess else self.grow_hess.nbytes
        return int(sum(a.nbytes for a in arrays) + extra)


def _worker_threads() -> int:
    """The threads the Dask worker running this gives its tasks (all cores outside one)."""
    try:
        from distributed import get_worker
        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):
        return resolve_n_threads(None)


def _worker_host() -> str:
    """The host of the Dask worker running this, where its peers reach it (outside a
    worker: this machine's loopback)."""
    try:
        from distributed import get_worker
        from distributed.comm import get_address_host
        return get_address_host(get_worker().address)
    except (ImportError, ValueError, AttributeError):
        return "127.0.0.1"


class DaskBoostingTrainer(Trainer):
    """Boosting rounds whose trees the workers grow together (module docstring), driven
    by the one training loop (``engine.run_training``) like every trainer: the driver
    asks every worker for a round and gets the same trees from each."""

    model: Booster

    def __init__(self, p: dict, dtrain: DaskDataset, num_boost_round: int,
                 setup: TrainingSetup, traffic: dict | None, timeout: float) -> None:
        super().__init__(p, dtrain.reference, num_boost_round, setup)
        client, reference, objective = dtrain.client, dtrain.reference, setup.objective
        n_samples = dtrain.num_data()
        objective.check_label(dtrain.label)
        base_score = initial_base_score(p, objective, dtrain.label, dtrain.weight)
        self.model = Booster(objective=objective.name, num_class=objective.num_class,
                             base_score=base_score, feature_names=reference.feature_names,
                             cost_model=reference.cost_model, params=p)
        self.model.categories = reference.categories
        offsets = np.concatenate(([0], np.cumsum(dtrain.partition_rows)))
        placement = dtrain.placement()
        self.workers = list(placement)
        self.round_trips = 0
        token = peer_token()
        futures = []
        for rank, (worker, indices) in enumerate(placement.items()):
            row_ranges = [(int(offsets[i]), int(offsets[i + 1])) for i in indices]
            futures.append(client.submit(
                WorkerShard, p, reference, base_score, n_samples, row_ranges, rank,
                len(placement), token, timeout, *[dtrain.parts[i] for i in indices],
                actor=True, workers=[worker], allow_other_workers=False, pure=False))
        self.shard_futures = futures    # the actors live while these are held
        self.shards: list[Any] = [future.result() for future in futures]  # actor proxies
        self.ask_all("connect", self.ask_all("listen_address"), self.workers)
        self.traffic = traffic
        self.peer_totals: list | None = None     # each worker's traffic so far
        self.n_samples = n_samples
        costs = reference.cost_model
        self.cost_state = AcquisitionState(0, costs.feature_group, costs.n_groups)
        # cost stages: the workers' growers change trade-off with the round
        self.stage_starts = (stage_tradeoffs(p, 0, num_boost_round)
                             if "cost_tradeoff" in p else {})
        self.cost_tradeoff = p.get("cost_tradeoff")
        self.split_visits = 0
        self.train_cost_curve: list[float] = []
        self.eval_state = [(name, data, binned_like(data, reference),
                            np.tile(base_score, (data.num_data(), 1)))
                           for data, name in setup.evals]

    def ask_all(self, method: str, *args: Any) -> list:
        """Call ``method`` on every worker's shard (all at once) and wait for every
        answer. A failure raises an error naming the worker where it began (a worker
        that only lost its peer names the peer)."""
        self.round_trips += 1
        futures = [getattr(shard, method)(*args) for shard in self.shards]
        answers, failures = [], []
        for worker, future in zip(self.workers, futures):
            try:
                answers.append(future.result())
            except Exception as error:
                failures.append((worker, error))
        if failures:     # a worker's own failure, rather than its peers' loss of it
            worker, cause = next(((w, e) for w, e in failures
                                  if not isinstance(e, PeerError)), failures[0])
            raise RuntimeError(f"cbudget.dask: worker {worker} failed in {method}: "
                               f"{type(cause).__name__}: {cause}") from cause
        return answers

    def iterate(self, iteration: int) -> bool:
        reference = self.dtrain
        trips_before = self.round_trips
        if iteration in self.stage_starts and iteration > 0:
            self.cost_tradeoff = self.stage_starts[iteration]
        answers = self.ask_all("train_round", iteration, self.cost_tradeoff)
        pickled, digest, visits, acquired, touched, _ = answers[0]
        for worker, answer in zip(self.workers[1:], answers[1:]):
            if answer[1] != digest:
                raise RuntimeError(f"cbudget.dask: worker {worker} grew other trees than "
                                   f"worker {self.workers[0]} in round {iteration}")
        trees = pickle.loads(pickled)
        self.cost_state.set_counts(acquired, touched)
        self.split_visits += visits
        for k, tree in enumerate(trees):
            self.split_visits += int(tree["n_samples"][tree["left"] != -1].sum())
            for _, _, binned, raw in self.eval_state:
                predict_binned_add(binned, tree, reference.missing_bin, raw, k,
                                   self.setup.n_threads,
                                   cat_bin_words=bin_words(tree))
        add_checked_round(self.model, trees, self.p, self.cost_tradeoff,
                          reference.categorical_bin_codes)
        state = self.cost_state
        self.train_cost_curve.append(mean_training_cost(
            reference.cost_model, state.acquired_counts, state.touched_counts,
            self.split_visits, self.n_samples, len(self.model.trees)))
        if self.traffic is not None:
            self._count_traffic(self.traffic, answers, trips_before)
        return False

    def _count_traffic(self, traffic: dict, answers: list, trips_before: int) -> None:
        """Per round: the driver's round trips, the sums among the workers, the most
        bytes one worker sent to the others and the most seconds one spent in the sums
        (waiting for the others included), and the bytes of the trees the driver
        received."""
        totals = [answer[5] for answer in answers]
        previous = self.peer_totals or [(0, 0, 0, 0.0)] * len(totals)
        self.peer_totals = totals
        traffic.setdefault("round_trips", []).append(self.round_trips - trips_before)
        traffic.setdefault("peer_sums", []).append(totals[0][0] - previous[0][0])
        traffic.setdefault("peer_bytes_sent", []).append(
            max(now[1] - before[1] for now, before in zip(totals, previous)))
        traffic.setdefault("peer_seconds", []).append(
            max(now[3] - before[3] for now, before in zip(totals, previous)))
        traffic.setdefault("driver_bytes", []).append(
            sum(len(answer[0] or b"") + len(answer[1]) for answer in answers))

    def eval_predictions(self) -> list:
        transform = self.setup.objective.transform
        return [(name, data, transform(raw)) for name, data, _, raw in self.eval_state]

    def finish(self, n_keep: int | None) -> Booster:
        return self.model if n_keep is None else self.model[:n_keep]  # type: ignore[return-value]

    def record_training(self, model: Model) -> None:
        assert isinstance(model, Booster)      # finish returns this trainer's Booster
        model.finalize(None, self.named_evals, np.asarray(self.train_cost_curve))
        if self.traffic is not None:
            self.traffic["worker_memory_bytes"] = dict(zip(
                self.workers, self.ask_all("memory_bytes")))

    def close(self) -> None:
        # each worker frees its shard's arrays before this returns (a training right
        # after this one must not find them still held), then releasing the futures
        # ends the actors; a lost worker has nothing left to free
        futures = []
        for shard in self.shards:
            try:
                futures.append(shard.close())
            except Exception:  # noqa: BLE001 - the training's own error is the one to raise
                pass
        for future in futures:
            try:
                future.result()
            except Exception:  # noqa: BLE001 - as above
                pass
        self.shards = []
        self.shard_futures = []


def train(client: Client, params: dict[str, Any], dtrain: DaskDataset,
          num_boost_round: int = 10, *, evals: Evals = None,
          early_stopping_rounds: int | None = None, evals_result: dict | None = None,
          verbose_eval: bool | int = False, callbacks: list[TrainingCallback] | None = None,
          traffic: dict | None = None, timeout: float = 600.0) -> Booster:
    """Train gbdt, cegb or greedy_miser on the workers that hold ``dtrain``'s partitions
    (``xgboost.dask.train`` style); returns the :class:`cbudget.Booster`, as
    :func:`cbudget.train` does.

    The trees are those of single-machine training (``cbudget.train`` on the same rows
    in partition order): with one partition, bit for bit; with several, up to the order
    of floating-point sums (a split whose gain ties another's within rounding may go the
    other way). Rows sampled by ``subsample`` are the same rows.

    Parameters
    ----------
    client : distributed.Client
    params : dict
        As for :func:`cbudget.train`; ``algorithm`` one of gbdt, cegb, greedy_miser;
        objectives for regression, binary and multiclass classification (ranking needs
        each query's rows together: not here). ``n_jobs``: threads per worker (default:
        the worker's).
    dtrain : DaskDataset
    num_boost_round, early_stopping_rounds, evals_result, verbose_eval, callbacks
        As for :func:`cbudget.train`.
    evals : list of (cbudget.Dataset, name), optional
        Validation data on the driver, built with ``reference=dtrain.reference``.
    traffic : dict, optional
        Filled with what crossed the network, per round: the driver's round trips to
        the workers (``"round_trips"``), the sums among the workers
        (``"peer_sums"``: one per split), the most bytes one worker sent to the others
        (``"peer_bytes_sent"``) and the most seconds one spent in the sums, waiting for
        the others included (``"peer_seconds"``), and the bytes of the trees the driver
        received (``"driver_bytes"``); after training, the bytes each worker's shard keeps
        (``"worker_memory_bytes"``).
    timeout : float, default 600
        Seconds a worker waits for another's message before training fails (a lost
        worker's closed connection fails it at once).

    Raises
    ------
    ValueError
        For another algorithm or a ranking objective, or data the local training
        rejects.
    RuntimeError
        When a worker is lost or fails (the message names it); training stops.
    """
    check_client(client)
    if not isinstance(dtrain, DaskDataset):
        raise TypeError(f"dtrain must be a cbudget.dask.DaskDataset, got "
                        f"{type(dtrain).__name__}")
    if dtrain.client is not client:
        raise ValueError("dtrain was made with another client")
    algorithm_name = (params or {}).get("algorithm", "gbdt")
    if algorithm_name not in distributed_algorithms():
        raise ValueError(f"cbudget.dask.train trains {distributed_algorithms()}; "
                         f"{algorithm_name!r} is not data-parallel here: train it with "
                         "cbudget.train on one machine (its models still score on the "
                         "cluster with cbudget.dask.predict)")
    # the local checks, on a stand-in with the training labels (no rows gathered)
    stand_in = dtrain.reference.without_rows()
    stand_in.label = np.zeros(0)
    _, p, _, setup = set_up_training(params, stand_in, num_boost_round, evals, verbose_eval,
                                     None, None)
    if setup.objective.needs_groups:
        raise ValueError(f"objective {setup.objective.name} ranks the documents of each "
                         "query: cbudget.dask.train does not keep queries together")
    if setup.objective.leaf_quantile is not None:
        raise ValueError(f"objective {setup.objective.name} re-fits each leaf to a quantile "
                         "of its rows' residuals, which cbudget.dask.train does not compute "
                         "across workers: train it with cbudget.train, or use "
                         "reg:pseudohubererror (a smooth stand-in for absolute error)")
    monitors = training_callbacks(callbacks, verbose_eval, early_stopping_rounds,
                                  num_boost_round)
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    trainer = DaskBoostingTrainer(p, dtrain, int(num_boost_round), setup, traffic,
                                  float(timeout))
    model = run_training(trainer, CallbackContainer(monitors + trainer.callbacks()),
                         evals_result)
    assert isinstance(model, Booster)
    return model
