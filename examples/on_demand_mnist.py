"""On-demand feature acquisition on MNIST: raw images in, features computed only when the
model asks for them.

The features are the 1,120 pixels of the cost-sensitive MNIST setting (Xu et al., JMLR
2014): each 28 x 28 image averaged over areas to 4 x 4, 8 x 8 and 16 x 16, and kept at
28 x 28, every pixel costing 1. A CEGB model learns to read few of them. Predicting the
test images two ways:

* eager: compute all 1,120 features of every image, then ``model.predict(X)``;
* on demand: ``model.predict(cbudget.FeatureSource(fetch, n))``, where ``fetch`` computes
  from the raw images only the features that the inputs' paths reach, when they reach
  them.

Both give the same predictions; the script prints the accuracy, the features computed
per image and the wall time of each way. Run from the repository root (the MNIST files
are read from ../shared/data, or from ``CBUDGET_DATA_DIR``)::

    python examples/on_demand_mnist.py                 # lambda 0.3, 20,000 training images
    python examples/on_demand_mnist.py --lambdas 0.1,1 --rounds 40

The design of on-demand prediction is in docs/architecture.md ("On-demand prediction").
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import cbudget

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import datasets  # noqa: E402  (benchmarks/datasets.py: the MNIST files, checked)

RESOLUTIONS = (4, 8, 16, 28)


class MultiResolutionPixels:
    """The multi-resolution pixels of raw 28 x 28 images, any of them on request.

    Pixel ``(y, x)`` at resolution ``s`` is the mean of the image over the square
    ``[y, y + 1) x [x, x + 1)`` of the ``s x s`` grid laid over it (pixels cut by the
    border counted with their covered fraction; benchmarks/datasets.area_resize_matrix).
    It is computed exactly, as an integer sum divided by 784 once: a feature has the
    same value whether computed alone, for a few images, or with all the others.

    Parameters
    ----------
    images : uint8 array of shape (n_images, 28, 28)
    """

    def __init__(self, images: np.ndarray) -> None:
        self.images = np.ascontiguousarray(images, dtype=np.uint8)
        self.feature_names: list[str] = []
        self.parts = []          # per feature: (resolution, y, x)
        # integer overlaps (in 1/s-pixel units of the 28-pixel side) of each coarse
        # cell with each pixel: the area weights times 28
        self.weights = {}
        for s in RESOLUTIONS:
            low = np.arange(s)[:, None] * 28
            pixel = np.arange(28)[None, :] * s
            self.weights[s] = np.clip(np.minimum(low + 28, pixel + s)
                                      - np.maximum(low, pixel), 0, None).astype(np.int64)
            for y in range(s):
                for x in range(s):
                    self.feature_names.append(f"r{s}_{y}_{x}")
                    self.parts.append((s, y, x))
        self.n_computed = 0

    @property
    def n_features(self) -> int:
        return len(self.parts)

    def _pixel(self, feature: int, rows: np.ndarray) -> np.ndarray:
        s, y, x = self.parts[feature]
        wy, wx = self.weights[s][y], self.weights[s][x]
        ys, xs = np.flatnonzero(wy), np.flatnonzero(wx)
        block = self.images[rows, ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1].astype(np.int64)
        total = np.einsum("nij,i,j->n", block, wy[ys], wx[xs])
        return total / 784.0

    def __call__(self, features: list[int], rows: np.ndarray) -> np.ndarray:
        """The fetch of a FeatureSource: ``features`` of the images ``rows``."""
        self.n_computed += len(features) * rows.size
        return np.column_stack([self._pixel(m, rows) for m in features])

    def all_features(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Every feature of the images ``rows`` (default: all), float64 (n, 1120)."""
        images = self.images if rows is None else self.images[rows]
        columns = []
        for s in RESOLUTIONS:
            w = self.weights[s]
            # (s, 28) x (n, 28, 28) x (28, s): exact integer sums, then one division
            totals = np.matmul(np.matmul(w, images.astype(np.int64)), w.T)
            columns.append(totals.reshape(images.shape[0], s * s) / 784.0)
        self.n_computed += images.shape[0] * self.n_features
        return np.hstack(columns)


def load_images(n_train: int, n_test: int, seed: int = 0):
    """Raw MNIST: ``n_train`` training images (of the 50,000 left after 10,000 for
    validation), ``n_test`` test images, uint8 (n, 28, 28), and their digits."""
    mnist = datasets.load_mnist(seed=seed)
    rng = np.random.default_rng(seed)
    train = np.sort(rng.permutation(mnist["X_train"].shape[0])[:n_train])
    as_images = lambda X: X.astype(np.uint8).reshape(-1, 28, 28)  # noqa: E731
    return (as_images(mnist["X_train"][train]), mnist["y_train"][train],
            as_images(mnist["X_test"][:n_test]), mnist["y_test"][:n_test])


def train_cegb(images: np.ndarray, y: np.ndarray, cost_tradeoff: float, rounds: int,
               n_jobs: int | None = None) -> cbudget.Booster:
    """A 10-class CEGB model on the multi-resolution pixels, every pixel costing 1."""
    pixels = MultiResolutionPixels(images)
    dtrain = cbudget.Dataset(pixels.all_features(), y, feature_names=pixels.feature_names,
                             feature_costs=np.ones(pixels.n_features))
    params = {"algorithm": "cegb", "objective": "multi:softprob", "num_class": 10,
              "cost_tradeoff": cost_tradeoff, "num_leaves": 31, "learning_rate": 0.2,
              "n_jobs": n_jobs, "verbosity": 0}
    return cbudget.train(params, dtrain, rounds, verbose_eval=False)


def predict_both_ways(model: cbudget.Booster, images: np.ndarray, y: np.ndarray) -> dict:
    """Eager and on-demand prediction of ``images``: wall times, accuracy, features
    computed per image; AssertionError if the two predictions differ."""
    eager_pixels = MultiResolutionPixels(images)
    start = time.perf_counter()
    X = eager_pixels.all_features()
    eager = model.predict(X)
    eager_s = time.perf_counter() - start

    pixels = MultiResolutionPixels(images)
    start = time.perf_counter()
    source = cbudget.FeatureSource(pixels, images.shape[0])
    on_demand = model.predict(source)
    on_demand_s = time.perf_counter() - start
    if not np.array_equal(on_demand, eager):
        raise AssertionError("on-demand predictions differ from eager ones")
    return {"accuracy": float(np.mean(np.argmax(eager, axis=1) == y)),
            "features_per_input_eager": eager_pixels.n_computed / images.shape[0],
            "features_per_input_on_demand": pixels.n_computed / images.shape[0],
            "mean_cost": float(source.cost().mean()), "eager_s": eager_s,
            "on_demand_s": on_demand_s, "rounds": source.n_rounds,
            "calls": len(source.calls), "features_used": int(model.used_features().size)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lambdas", default="0.3",
                        help="CEGB cost_tradeoff values, comma-separated (default 0.3)")
    parser.add_argument("--train", type=int, default=20_000, help="training images")
    parser.add_argument("--test", type=int, default=10_000, help="test images")
    parser.add_argument("--rounds", type=int, default=40, help="boosting rounds")
    args = parser.parse_args(argv)
    train_images, y_train, test_images, y_test = load_images(args.train, args.test)
    print(f"MNIST: {args.train:,} training / {args.test:,} test images; features: the "
          f"{len(MultiResolutionPixels(test_images[:1]).parts):,} multi-resolution pixels, "
          "cost 1 each")
    print(f"{'lambda':>7} {'accuracy':>9} {'features/image':>15} {'eager s':>8} "
          f"{'on-demand s':>12} {'rounds':>7} {'calls':>6}")
    for lam in (float(v) for v in args.lambdas.split(",")):
        model = train_cegb(train_images, y_train, lam, args.rounds)
        r = predict_both_ways(model, test_images, y_test)
        print(f"{lam:>7g} {r['accuracy']:>9.4f} {r['features_per_input_on_demand']:>7.1f} of "
              f"{r['features_per_input_eager']:,.0f} {r['eager_s']:>8.3f} "
              f"{r['on_demand_s']:>12.3f} {r['rounds']:>7} {r['calls']:>6}")
    print("identical predictions both ways; on demand, each image's features are computed "
          "only when its paths through the trees reach them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
