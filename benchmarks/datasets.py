"""Data loaders and generators shared by the cbudget benchmarks.

Real data is read from the shared data directory, ``<repo>/../shared/data`` (that is
``Path(__file__).resolve().parents[2] / "shared" / "data"``), or from the directory named
by the environment variable ``CBUDGET_DATA_DIR``. See the README.md there for the
provenance and checksums of every file.

Every loader returns a dict of numpy arrays:

* features are C-contiguous **float32** matrices (all three libraries benchmarked here
  accept float32 without a copy);
* labels are **int32** vectors (class indices ``0..K-1``, or 0/1 for binary problems);
* ``feature_costs`` is a float64 vector (one cost per feature);
* ``feature_names`` is a list of str, ``n_classes`` an int and ``name`` a short str.

Loaders are deterministic: the same ``seed`` gives the same split, bit for bit.
They also avoid large temporaries, so that a benchmark process's peak RSS after loading
is close to the size of the arrays it holds (``bench_engine.py`` measures memory as the
increase over that).
"""
import gzip
import hashlib
import os
from pathlib import Path

import numpy as np

__all__ = [
    "DATA_DIR_ENV",
    "data_dir",
    "load_letters",
    "load_mnist",
    "make_synthetic_binary",
    "LETTER_FEATURES",
]

DATA_DIR_ENV = "CBUDGET_DATA_DIR"

LETTER_FEATURES = ["x-box", "y-box", "width", "high", "onpix", "x-bar", "y-bar", "x2bar",
                   "y2bar", "xybar", "x2ybar", "xy2bar", "x-ege", "xegvy", "y-ege", "yegvx"]

# sha256 of the *uncompressed* files (from the data directory's README.md).
_SHA256 = {
    "letter-recognition.data.gz":
        "2b89f3602cf768d3c8355267d2f13f2417809e101fc2b5ceee10db19a60de6e2",
    "mnist-train-images-idx3-ubyte.gz":
        "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "mnist-train-labels-idx1-ubyte.gz":
        "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "mnist-t10k-images-idx3-ubyte.gz":
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "mnist-t10k-labels-idx1-ubyte.gz":
        "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}


def data_dir():
    """The shared data directory: ``$CBUDGET_DATA_DIR`` if set, else
    ``<repo root>/../shared/data``. Raises FileNotFoundError if it does not exist."""
    override = os.environ.get(DATA_DIR_ENV)
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "shared" / "data"
    if not path.is_dir():
        raise FileNotFoundError(
            f"benchmark data directory {path} not found; set {DATA_DIR_ENV} to the "
            "directory holding letter-recognition.data.gz and the MNIST IDX files")
    return path


def _read_gz(name, check_sha256):
    path = data_dir() / name
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if check_sha256 and name in _SHA256:
        digest = hashlib.sha256(raw).hexdigest()
        if digest != _SHA256[name]:
            raise ValueError(f"{path}: sha256 of the uncompressed content is {digest}, "
                             f"expected {_SHA256[name]}")
    return raw


def _split_indices(n_samples, sizes, seed):
    """Sorted index arrays of a random partition into parts of the given sizes."""
    if sum(sizes) > n_samples:
        raise ValueError(f"parts of sizes {sizes} do not fit in {n_samples} rows")
    order = np.random.default_rng(seed).permutation(n_samples)
    bounds = np.cumsum([0] + list(sizes))
    return [np.sort(order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def load_letters(seed=0, check_sha256=True):
    """UCI Letter Recognition, split 12,000 / 4,000 / 4,000 at random with ``seed``.

    The file has 20,000 rows: a capital letter ``A``..``Z`` then 16 integer features in
    0..15. The rows are permuted with ``numpy.random.default_rng(seed).permutation``;
    the first 12,000 permuted rows are the training set, the next 4,000 the validation
    set and the last 4,000 the test set (each part in the file's row order). The UCI
    suggestion (first 16,000 rows train, last 4,000 test) is a different split.

    Returns
    -------
    dict with
        ``X_train`` float32 (12000, 16), ``y_train`` int32 (12000,),
        ``X_valid`` float32 (4000, 16), ``y_valid`` int32 (4000,),
        ``X_test`` float32 (4000, 16), ``y_test`` int32 (4000,)
            labels 0..25 for A..Z;
        ``feature_costs`` float64 (16,), all 1.0 (every feature costs 1, as in the
            cost-sensitive papers);
        ``feature_names`` list of the 16 UCI attribute names;
        ``n_classes`` 26; ``name`` ``"letters"``.
    """
    raw = _read_gz("letter-recognition.data.gz", check_sha256).decode("ascii")
    lines = [line for line in raw.split("\n") if line.strip()]
    if len(lines) != 20000:
        raise ValueError(f"letter-recognition.data: expected 20000 rows, got {len(lines)}")
    y = np.fromiter((ord(line[0]) - ord("A") for line in lines), dtype=np.int32,
                    count=len(lines))
    X = np.array([line[2:].split(",") for line in lines], dtype=np.float32)
    if X.shape != (20000, 16) or y.min() < 0 or y.max() > 25:
        raise ValueError("letter-recognition.data: unexpected content")
    train, valid, test = _split_indices(X.shape[0], (12000, 4000, 4000), seed)
    return {
        "name": "letters",
        "X_train": np.ascontiguousarray(X[train]), "y_train": y[train],
        "X_valid": np.ascontiguousarray(X[valid]), "y_valid": y[valid],
        "X_test": np.ascontiguousarray(X[test]), "y_test": y[test],
        "feature_costs": np.ones(16, dtype=np.float64),
        "feature_names": list(LETTER_FEATURES),
        "n_classes": 26,
    }


def _idx(raw, magic, name):
    """Parse an IDX file: big-endian uint32 magic and dimensions, then uint8 data."""
    n_dims = magic & 0xFF
    header = np.frombuffer(raw, dtype=">u4", count=1 + n_dims)
    if int(header[0]) != magic:
        raise ValueError(f"{name}: IDX magic {int(header[0])}, expected {magic}")
    shape = tuple(int(d) for d in header[1:])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 * (1 + n_dims))
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{name}: {data.size} data bytes for header shape {shape}")
    return data.reshape(shape[0], -1) if n_dims > 1 else data


def load_mnist(seed=0, n_valid=10000, check_sha256=True):
    """MNIST digits: the standard 60,000 / 10,000 train/test split, with ``n_valid``
    validation images carved from the training set at random with ``seed``.

    The IDX files are parsed with ``numpy.frombuffer`` (big-endian uint32 header: magic
    2051 and (n, 28, 28) for images, magic 2049 and (n,) for labels). The 60,000
    training rows are permuted with ``numpy.random.default_rng(seed).permutation``; the
    first ``n_valid`` permuted rows are the validation set and the remaining
    ``60000 - n_valid`` the training set (each in file order). The test set is the
    official 10,000-image t10k set, in file order.

    Returns
    -------
    dict with
        ``X_train`` float32 (60000 - n_valid, 784), ``y_train`` int32,
        ``X_valid`` float32 (n_valid, 784), ``y_valid`` int32,
        ``X_test`` float32 (10000, 784), ``y_test`` int32
            pixels are the raw intensities 0..255 (not rescaled; row-major 28 x 28),
            labels the digits 0..9;
        ``feature_costs`` float64 (784,), all 1.0;
        ``feature_names`` ``["px_<row>_<col>", ...]``;
        ``n_classes`` 10; ``name`` ``"mnist"``.
    """
    if not 0 <= n_valid < 60000:
        raise ValueError(f"n_valid must be in [0, 60000), got {n_valid}")
    parts = {}
    for split, n in (("train", 60000), ("t10k", 10000)):
        images = _idx(_read_gz(f"mnist-{split}-images-idx3-ubyte.gz", check_sha256), 2051,
                      f"{split} images")
        labels = _idx(_read_gz(f"mnist-{split}-labels-idx1-ubyte.gz", check_sha256), 2049,
                      f"{split} labels")
        if images.shape != (n, 784) or labels.shape != (n,):
            raise ValueError(f"MNIST {split}: shapes {images.shape}, {labels.shape}")
        parts[split] = (images, labels)
    images, labels = parts["train"]
    valid, train = _split_indices(60000, (n_valid, 60000 - n_valid), seed)
    # Index the uint8 images first and convert each part: no float copy of all 60k.
    test_images, test_labels = parts["t10k"]
    return {
        "name": "mnist",
        "X_train": images[train].astype(np.float32), "y_train": labels[train].astype(np.int32),
        "X_valid": images[valid].astype(np.float32), "y_valid": labels[valid].astype(np.int32),
        "X_test": test_images.astype(np.float32), "y_test": test_labels.astype(np.int32),
        "feature_costs": np.ones(784, dtype=np.float64),
        "feature_names": [f"px_{r}_{c}" for r in range(28) for c in range(28)],
        "n_classes": 10,
    }


def make_synthetic_binary(n_samples=1_000_000, n_features=50, seed=0, test_fraction=0.2):
    """A synthetic binary classification problem (stand-in for the large data sets of
    the papers, e.g. HEPMASS / MiniBooNE scale, which are not available offline).

    Generator (``rng = numpy.random.default_rng(seed)``; needs ``n_features >= 15``):

    1. ``X = rng.standard_normal((n_samples, n_features), dtype=float32)``.
    2. Redundant features: for ``j`` in 0..4, ``X[:, 10 + j] = X[:, j] + 0.5 * X[:, 10 + j]``
       (noisy copies of the first five informative features).
    3. The true log-odds use the ten informative features ``x0..x9``::

           logit = 1.2*x0 - 1.0*x1 + 0.8*x2                      (linear)
                 + 0.9*x3*x4 - 0.7*x5*x6                         (interactions)
                 + 1.0*sin(2*x7)                                 (smooth non-linear)
                 + 1.5*[x8 > 0.5] - 1.0*[x9 < -0.3]              (steps)
                 + 0.5*[x0 > 0]*x8                               (three-way-ish)
                 - 0.25

       Features 15..n_features-1 are pure noise.
    4. ``y = (rng.random(n_samples) < sigmoid(logit))``: labels are drawn from the true
       probabilities, so no model can beat the Bayes accuracy/AUC (reported in
       ``bayes_auc_test`` / ``bayes_accuracy_test``); the positive rate is about 47%.
    5. Split: the first ``n_samples - round(test_fraction * n_samples)`` rows are the
       training set and the rest the test set. The rows are i.i.d., so this contiguous
       split is a random split; the parts are views of one array (no copy).

    Returns
    -------
    dict with
        ``X_train`` float32 (n_train, n_features), ``y_train`` int32 (0/1),
        ``X_test`` float32 (n_test, n_features), ``y_test`` int32 (0/1),
        ``p_test`` float64 (n_test,): the true P(y = 1 | x) of the test rows,
        ``bayes_auc_test``, ``bayes_accuracy_test``: floats, the test AUC and accuracy
            of the true probabilities (upper references for any model),
        ``feature_costs`` float64 (n_features,) all 1.0,
        ``feature_names`` ``["f0", ...]``, ``n_classes`` 2, ``name`` ``"synthetic"``,
        ``informative`` ``list(range(10))``, ``redundant`` ``list(range(10, 15))``.
        There is no validation set (``X_valid``/``y_valid`` are None).
    """
    if n_features < 15:
        raise ValueError("make_synthetic_binary needs n_features >= 15")
    if n_samples < 10:
        raise ValueError("make_synthetic_binary needs n_samples >= 10")
    rng = np.random.default_rng(seed)
    X = np.empty((n_samples, n_features), dtype=np.float32)
    rng.standard_normal(out=X, dtype=np.float32)
    for j in range(5):
        col = X[:, 10 + j]
        col *= 0.5
        col += X[:, j]

    def c(j):
        return X[:, j].astype(np.float64)

    logit = 1.2 * c(0) - 1.0 * c(1) + 0.8 * c(2)
    logit += 0.9 * c(3) * c(4) - 0.7 * c(5) * c(6)
    logit += np.sin(2.0 * c(7))
    logit += 1.5 * (X[:, 8] > 0.5) - 1.0 * (X[:, 9] < -0.3)
    logit += 0.5 * (X[:, 0] > 0) * c(8)
    logit -= 0.25
    p = 1.0 / (1.0 + np.exp(-logit))
    del logit
    y = (rng.random(n_samples) < p).astype(np.int32)

    n_test = int(round(test_fraction * n_samples))
    n_train = n_samples - n_test
    p_test = p[n_train:].copy()
    del p
    y_test = y[n_train:]
    bayes_auc = _auc(y_test, p_test)
    bayes_acc = float(np.mean((p_test > 0.5) == (y_test == 1)))
    return {
        "name": "synthetic",
        "X_train": X[:n_train], "y_train": y[:n_train],
        "X_valid": None, "y_valid": None,
        "X_test": X[n_train:], "y_test": y_test,
        "p_test": p_test,
        "bayes_auc_test": bayes_auc,
        "bayes_accuracy_test": bayes_acc,
        "feature_costs": np.ones(n_features, dtype=np.float64),
        "feature_names": [f"f{j}" for j in range(n_features)],
        "n_classes": 2,
        "informative": list(range(10)),
        "redundant": list(range(10, 15)),
    }


def _auc(y, score):
    """ROC AUC by the rank-sum formula (ties get average ranks); no scikit-learn."""
    y = np.asarray(y)
    n_pos = int(np.count_nonzero(y == 1))
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(score, kind="mergesort")
    s = np.asarray(score)[order]
    ranks = np.empty(y.shape[0], dtype=np.float64)
    # average ranks over runs of equal scores
    boundaries = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate(([0], boundaries))
    stops = np.concatenate((boundaries, [s.shape[0]]))
    avg = (starts + stops + 1) / 2.0  # 1-based average rank of each run
    ranks[order] = np.repeat(avg, stops - starts)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
