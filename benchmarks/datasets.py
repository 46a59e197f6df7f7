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
import csv
import gzip
import hashlib
import io
import os
from itertools import pairwise
from pathlib import Path

import numpy as np

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
    "ltr-lightgbm-rank.train.gz":
        "a0c7201c89120879c14a5059e091f441cbf2a29b8aaef363885ccb1a530448df",
    "ltr-lightgbm-rank.train.query.gz":
        "40cb5fef637229311cd30fab13cb7fb633b023e86a87ff04ec55db420143d6af",
    "ltr-lightgbm-rank.test.gz":
        "3b1219ce117a0a36d2f76c02de7e7831c1d79af0d40f5195c03178bbe26c824b",
    "ltr-lightgbm-rank.test.query.gz":
        "36dca82ba3bf99201bac3987b00a8fbf6fe5f563e9fa6d0da90e783710a32df4",
    "lending_club.csv.gz":
        "06ce4edfcf2a80d2daceab44b6100034e026df59e9ab2d61c7ab1514bb9a4d3f",
    "ames.csv.gz":
        "194277eff83bf330bc4f44f95f191e6331e6fd17428dc98516ca75c2a555cd14",
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
    return [np.sort(order[a:b]) for a, b in pairwise(bounds)]


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
    y = np.fromiter((ord(line[0]) - ord("A") for line in lines), dtype=np.int32, count=len(lines))
    X = np.array([line[2:].split(",") for line in lines], dtype=np.float32)
    if X.shape != (20000, 16) or y.min() < 0 or y.max() > 25:
        raise ValueError("letter-recognition.data: unexpected content")
    train, valid, test = _split_indices(X.shape[0], (12000, 4000, 4000), seed)
    return {"name": "letters",
            "X_train": np.ascontiguousarray(X[train]), "y_train": y[train],
            "X_valid": np.ascontiguousarray(X[valid]), "y_valid": y[valid],
            "X_test": np.ascontiguousarray(X[test]), "y_test": y[test],
            "feature_costs": np.ones(16, dtype=np.float64),
            "feature_names": list(LETTER_FEATURES), "n_classes": 26}


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
    parts = _mnist_uint8_parts(seed, n_valid, check_sha256)
    # The uint8 images of each part are converted separately: no float copy of all 60k.
    out = {"name": "mnist"}
    for part, (images, labels) in parts.items():
        out[f"X_{part}"] = images.astype(np.float32)
        out[f"y_{part}"] = labels.astype(np.int32)
    out.update(feature_costs=np.ones(784, dtype=np.float64), n_classes=10,
               feature_names=[f"px_{r}_{c}" for r in range(28) for c in range(28)])
    return out


def _mnist_uint8_parts(seed, n_valid, check_sha256):
    """The train / valid / test split of :func:`load_mnist` as uint8 arrays:
    ``{"train": (images (n, 784), labels (n,)), "valid": ..., "test": ...}``."""
    if not 0 <= n_valid < 60000:
        raise ValueError(f"n_valid must be in [0, 60000), got {n_valid}")
    files = {}
    for split, n in (("train", 60000), ("t10k", 10000)):
        images = _idx(_read_gz(f"mnist-{split}-images-idx3-ubyte.gz", check_sha256), 2051,
                      f"{split} images")
        labels = _idx(_read_gz(f"mnist-{split}-labels-idx1-ubyte.gz", check_sha256), 2049,
                      f"{split} labels")
        if images.shape != (n, 784) or labels.shape != (n,):
            raise ValueError(f"MNIST {split}: shapes {images.shape}, {labels.shape}")
        files[split] = (images, labels)
    images, labels = files["train"]
    valid, train = _split_indices(60000, (n_valid, 60000 - n_valid), seed)
    return {"train": (images[train], labels[train]), "valid": (images[valid], labels[valid]),
            "test": files["t10k"]}


MNIST_RESOLUTIONS = (4, 8, 16, 28)


def area_resize_matrix(n_out, n_in=28):
    """Exact area-averaging matrix ``A`` of shape (n_out, n_in), float64.

    Output cell ``i`` covers the input interval ``[i * n_in / n_out, (i + 1) * n_in /
    n_out)``; ``A[i, j]`` is the length of its overlap with input pixel ``[j, j + 1)``
    divided by the cell width ``n_in / n_out``, so every row sums to 1. A square image
    ``img`` (n_in, n_in) resized to (n_out, n_out) is ``A @ img @ A.T``: each output
    pixel is the mean of the input over its square, pixels cut by the cell border
    counted with their covered fraction. ``n_out == n_in`` gives the identity.
    """
    if not 1 <= n_out <= n_in:
        raise ValueError(f"area_resize_matrix needs 1 <= n_out <= n_in, got {n_out}, {n_in}")
    # Work in units of 1 / n_out input pixels: cell i is [i * n_in, (i + 1) * n_in) and
    # pixel j is [j * n_out, (j + 1) * n_out) -- integer bounds, exact overlaps.
    lo = np.arange(n_out)[:, None] * n_in
    px = np.arange(n_in)[None, :] * n_out
    overlap = np.clip(np.minimum(lo + n_in, px + n_out) - np.maximum(lo, px), 0, None)
    return overlap / float(n_in)


def load_mnist_multires(seed=0, n_valid=10000, check_sha256=True, chunk_rows=8192):
    """Multi-resolution MNIST: the cost-sensitive MNIST of the CSTC paper (Xu et al.,
    JMLR 2014, section 6.7) with all ten classes.

    Each 28 x 28 image (raw intensities 0..255) is resized by exact area averaging to
    4 x 4, 8 x 8 and 16 x 16 (``A @ img @ A.T`` with ``A = area_resize_matrix(s)``,
    computed in float32 for all images of a chunk at once with ``numpy.matmul``) and
    also kept at 28 x 28; the 16 + 64 + 256 + 784 = 1120 pixels, in this order (each
    resolution row-major), are the features, each costing 1. The CSTC paper keeps only
    the digits 3 and 8 (a binary task); here all ten digits are kept.

    The split is :func:`load_mnist`'s for the same ``seed`` and ``n_valid`` (60,000 -
    ``n_valid`` training rows, ``n_valid`` validation rows carved from the official
    training set, the official 10,000 test images), and the last 784 columns equal
    ``load_mnist``'s features exactly. Images are converted ``chunk_rows`` at a time
    straight into the output matrices, so the peak memory is the output plus the
    uint8 images plus one chunk.

    Returns
    -------
    dict with
        ``X_train`` float32 (60000 - n_valid, 1120), ``y_train`` int32,
        ``X_valid`` float32 (n_valid, 1120), ``y_valid`` int32,
        ``X_test`` float32 (10000, 1120), ``y_test`` int32 (digits 0..9);
        ``feature_costs`` float64 (1120,), all 1.0;
        ``feature_names`` ``["r4_<y>_<x>", ..., "r8_<y>_<x>", ..., "r16_<y>_<x>", ...,
            "r28_<y>_<x>", ...]``;
        ``resolution_slices`` dict {4: slice(0, 16), 8: slice(16, 80), 16: slice(80, 336),
            28: slice(336, 1120)}: the columns of each resolution;
        ``n_classes`` 10; ``name`` ``"mnist_multires"``.
    """
    parts = _mnist_uint8_parts(seed, n_valid, check_sha256)
    sizes = [s * s for s in MNIST_RESOLUTIONS]
    bounds = np.cumsum([0] + sizes)
    slices = {s: slice(int(a), int(b)) for s, a, b in zip(MNIST_RESOLUTIONS, bounds[:-1],
                                                          bounds[1:])}
    mats = {s: area_resize_matrix(s).astype(np.float32) for s in MNIST_RESOLUTIONS if s < 28}
    out = {"name": "mnist_multires"}
    for part, (images, labels) in parts.items():
        n = images.shape[0]
        X = np.empty((n, int(bounds[-1])), dtype=np.float32)
        for start in range(0, n, chunk_rows):
            stop = min(n, start + chunk_rows)
            img = images[start:stop].astype(np.float32).reshape(-1, 28, 28)
            for s, A in mats.items():
                # (s, 28) @ (k, 28, 28) -> (k, s, 28); @ (28, s) -> (k, s, s)
                X[start:stop, slices[s]] = np.matmul(np.matmul(A, img), A.T).reshape(-1, s * s)
            X[start:stop, slices[28]] = img.reshape(-1, 784)
        out[f"X_{part}"] = X
        out[f"y_{part}"] = labels.astype(np.int32)
    out.update(feature_costs=np.ones(int(bounds[-1]), dtype=np.float64),
               feature_names=[f"r{s}_{y}_{x}" for s in MNIST_RESOLUTIONS for y in range(s)
                              for x in range(s)],
               resolution_slices=slices, n_classes=10)
    return out


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

    n_test = int(round(test_fraction * n_samples))  # noqa: RUF046 - numpy 1.x scalars
    n_train = n_samples - n_test
    p_test = p[n_train:].copy()
    del p
    y_test = y[n_train:]
    bayes_auc = auc(y_test, p_test)
    bayes_acc = float(np.mean((p_test > 0.5) == (y_test == 1)))
    return {"name": "synthetic", "X_train": X[:n_train], "y_train": y[:n_train],
            "X_valid": None, "y_valid": None, "X_test": X[n_train:], "y_test": y_test,
            "p_test": p_test, "bayes_auc_test": bayes_auc, "bayes_accuracy_test": bayes_acc,
            "feature_costs": np.ones(n_features, dtype=np.float64),
            "feature_names": [f"f{j}" for j in range(n_features)], "n_classes": 2,
            "informative": list(range(10)), "redundant": list(range(10, 15))}


COSTLY_COST_LEVELS = (1.0, 5.0, 10.0, 20.0, 50.0, 100.0, 150.0, 200.0)
# role of the first column of each cost level (the other three are noise)
_COSTLY_ROLES = ("gate", "easy_c", "easy_d", "proxy_h2", "proxy_h1", "hard_h3", "hard_h2",
                 "hard_h1")


def make_synthetic_costly(n_samples=500_000, seed=0, valid_fraction=0.2, test_fraction=0.2,
                          hard_width=0.2):
    """A synthetic binary problem with Yahoo! LTR-like feature costs, built so that
    costly features pay off for a minority of "hard" inputs only (a cost-aware learner
    has something to win; CEGB paper section 5 for the cost values).

    32 features, four per cost level ``{1, 5, 10, 20, 50, 100, 150, 200}``: column
    ``j`` costs ``COSTLY_COST_LEVELS[j // 4]``. Generator (``rng =
    numpy.random.default_rng(seed)``):

    1. ``X = rng.standard_normal((n_samples, 32), dtype=float32)``.
    2. Named columns (all others are pure noise)::

           cost   1: g = X[:, 0] (gate), a = X[:, 1], b = X[:, 2]
           cost   5: c = X[:, 4]
           cost  10: d = X[:, 8]
           cost  20: X[:, 12] = h2 + 1.0 * X[:, 12]   (noisy proxy of h2)
           cost  50: X[:, 16] = h1 + 0.5 * X[:, 16]   (less noisy proxy of h1)
           cost 100: h3 = X[:, 20]
           cost 150: h2 = X[:, 24]
           cost 200: h1 = X[:, 28]

       (the proxies are formed in float32, in place, after step 1).
    3. An input is *hard* if ``|g| < hard_width`` (15.9% of the inputs for 0.2): the
       cheapest feature tells which inputs need the expensive ones. True log-odds
       (float64)::

           easy inputs: logit = 3.6*a - 3.0*b + 1.2*c + 0.9*d + 0.6*h1
           hard inputs: logit = 3.0*h1 - 2.5*h2 + 1.5*h3

       On easy inputs the two cost-1 features a, b carry most of the signal (the cost-5
       and cost-10 features c, d, and h1 at cost 200, add a little); on hard inputs the
       label depends only on the costliest features h1, h2, h3 (450 together), which
       the proxies at costs 50 and 20 stand in for partly.
    4. ``y = (rng.random(n_samples) < sigmoid(logit))``: labels drawn from the true
       probabilities (about 50% positive), so no model beats the Bayes accuracy.
    5. Split: with ``n_valid = round(valid_fraction * n_samples)`` and ``n_test =
       round(test_fraction * n_samples)``, the first ``n_samples - n_valid - n_test``
       rows are the training set, the next ``n_valid`` the validation set and the last
       ``n_test`` the test set (i.i.d. rows: a random split; views of one array).

    References on the test set: the Bayes accuracy (predict ``sigmoid(logit) > 0.5``;
    0.890 for seed 0 and 500,000 rows: 0.893 on easy and 0.875 on hard inputs) and the
    accuracy of the best rule that sees the cost-1 features only (predict ``3.6*a -
    3.0*b > 0``: on hard inputs no cost-1 feature says anything, so any such rule is at
    chance there; 0.794, for a cost of 3 per input). A model that pays the three cost-1 features for
    everyone and h1, h2, h3 for the hard inputs only, costs about 3 + 0.159 * 450 = 75
    per input; all 32 features cost 2,144.

    Returns
    -------
    dict with
        ``X_train`` float32 (n_train, 32), ``y_train`` int32 (0/1), and the same for
        ``_valid`` and ``_test``;
        ``p_test`` float64 (n_test,): the true P(y = 1 | x) of the test rows;
        ``hard_test`` bool (n_test,): the test rows that are hard;
        ``bayes_accuracy_test``, ``bayes_auc_test``: accuracy and AUC of the true
            probabilities on the test set; ``cheap_rule_accuracy_test``: accuracy of
            the cost-1 rule above; ``hard_fraction_test``: fraction of hard test rows;
        ``feature_costs`` float64 (32,), ``feature_names`` ``"<role>_c<cost>"`` (roles
            ``gate, easy_a, easy_b, easy_c, easy_d, proxy_h2, proxy_h1, hard_h3, hard_h2,
            hard_h1``, else ``noise<j>``), ``n_classes`` 2, ``name``
            ``"synthetic_costly"``.
    """
    n_valid = int(round(valid_fraction * n_samples))  # noqa: RUF046 - numpy 1.x scalars
    n_test = int(round(test_fraction * n_samples))  # noqa: RUF046
    n_train = n_samples - n_valid - n_test
    if min(n_valid, n_test, n_train) < 1:
        raise ValueError(f"make_synthetic_costly: {n_samples} rows do not give three "
                         "non-empty parts")
    n_features = 4 * len(COSTLY_COST_LEVELS)
    rng = np.random.default_rng(seed)
    X = np.empty((n_samples, n_features), dtype=np.float32)
    rng.standard_normal(out=X, dtype=np.float32)
    X[:, 12] += X[:, 24]                     # proxy of h2, noise sd 1
    X[:, 16] *= 0.5
    X[:, 16] += X[:, 28]                     # proxy of h1, noise sd 0.5

    def c(j):
        return X[:, j].astype(np.float64)

    hard = np.abs(X[:, 0]) < hard_width
    logit = 3.6 * c(1) - 3.0 * c(2) + 1.2 * c(4) + 0.9 * c(8) + 0.6 * c(28)
    logit_hard = 3.0 * c(28) - 2.5 * c(24) + 1.5 * c(20)
    np.copyto(logit, logit_hard, where=hard)
    del logit_hard
    p = 1.0 / (1.0 + np.exp(-logit))
    del logit
    y = (rng.random(n_samples) < p).astype(np.int32)

    test = slice(n_samples - n_test, n_samples)
    y_test, p_test, hard_test = y[test], p[test].copy(), hard[test].copy()
    del p
    cheap_rule = (3.6 * c(1)[test] - 3.0 * c(2)[test]) > 0
    names = []
    for j in range(n_features):
        level, k = divmod(j, 4)
        role = ("gate", "easy_a", "easy_b")[k] if level == 0 and k < 3 else (
            _COSTLY_ROLES[level] if k == 0 else f"noise{j}")
        names.append(f"{role}_c{int(COSTLY_COST_LEVELS[level])}")
    return {"name": "synthetic_costly", "X_train": X[:n_train], "y_train": y[:n_train],
            "X_valid": X[n_train:n_train + n_valid], "y_valid": y[n_train:n_train + n_valid],
            "X_test": X[test], "y_test": y_test, "p_test": p_test, "hard_test": hard_test,
            "bayes_accuracy_test": float(np.mean((p_test > 0.5) == (y_test == 1))),
            "bayes_auc_test": auc(y_test, p_test),
            "cheap_rule_accuracy_test": float(np.mean(cheap_rule == (y_test == 1))),
            "hard_fraction_test": float(hard_test.mean()),
            "feature_costs": np.repeat(np.asarray(COSTLY_COST_LEVELS, dtype=np.float64), 4),
            "feature_names": names, "n_classes": 2}


def auc(y, score):
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


# --------------------------------------------------------------------- ranking data
LTR_FILES = ("ltr-lightgbm-rank.train.gz", "ltr-lightgbm-rank.train.query.gz",
             "ltr-lightgbm-rank.test.gz", "ltr-lightgbm-rank.test.query.gz")
LTR_N_FEATURES = 300


def _libsvm_dense(raw, n_features, name):
    """Labels (int32) and a dense float32 matrix of a LibSVM text without ``qid:``;
    1-based feature indices up to ``n_features``, absent entries 0."""
    lines = [line for line in raw.decode("ascii").split("\n") if line.strip()]
    X = np.zeros((len(lines), n_features), dtype=np.float32)
    y = np.empty(len(lines), dtype=np.int32)
    for i, line in enumerate(lines):
        label, *pairs = line.split()
        y[i] = int(float(label))
        if pairs:
            idx, val = zip(*(p.split(":") for p in pairs))
            cols = np.asarray(idx, dtype=np.int64) - 1
            if cols.min() < 0 or cols.max() >= n_features:
                raise ValueError(f"{name} line {i + 1}: feature index outside 1..{n_features}")
            X[i, cols] = np.asarray(val, dtype=np.float32)
    return X, y


def _group_sizes(raw, n_rows, name):
    sizes = np.array([int(v) for v in raw.decode("ascii").split()], dtype=np.int64)
    if sizes.min() < 1 or sizes.sum() != n_rows:
        raise ValueError(f"{name}: group sizes sum to {sizes.sum()}, the data has {n_rows} rows")
    return sizes


def _take_queries(X, y, sizes, queries):
    """Rows and group sizes of the (sorted) query indices ``queries``."""
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rows = np.concatenate([np.arange(starts[q], starts[q] + sizes[q]) for q in queries])
    return np.ascontiguousarray(X[rows]), y[rows], sizes[queries].copy()


def _cost_levels(n_features, seed):
    """Costs of ``COSTLY_COST_LEVELS`` spread evenly over the features in a random order:
    feature ``perm[j]`` costs level ``j * 8 // n_features``."""
    perm = np.random.default_rng(seed).permutation(n_features)
    costs = np.empty(n_features, dtype=np.float64)
    levels = np.asarray(COSTLY_COST_LEVELS, dtype=np.float64)
    costs[perm] = levels[np.arange(n_features) * levels.size // n_features]
    return costs


def load_ltr_sample(seed=0, valid_fraction=0.2, costs="levels", cost_seed=0,
                    check_sha256=True):
    """LightGBM's learning-to-rank example (``examples/lambdarank/rank.*``): 3,005 training
    documents in 201 queries, 768 test documents in 50 queries, 300 features, graded
    relevance 0..4 (shared data README, section 3).

    The LibSVM files are read into dense float32 matrices (absent entries are 0, as
    LightGBM reads them); the ``.query`` files give the consecutive group sizes.
    Validation set: ``round(valid_fraction * 201)`` whole training queries (40 for 0.2),
    the first of ``numpy.random.default_rng(seed).permutation(201)``; the other training
    queries are the training set (both in file order). ``valid_fraction=0`` keeps all
    201 queries for training (``X_valid`` is then None). The test set is the file's.

    Feature costs: the sample has none. ``costs="levels"`` (default) gives every feature
    a synthetic cost from the Yahoo! LTR levels ``{1, 5, 10, 20, 50, 100, 150, 200}``,
    37 or 38 features per level, assigned at random with ``cost_seed`` (feature
    ``perm[j]`` of ``default_rng(cost_seed).permutation(300)`` gets level ``j * 8 //
    300``), so cost says nothing about how informative a feature is (all 300 cost
    20,043 together for ``cost_seed=0``); ``costs="unit"``: every feature costs 1.

    Returns
    -------
    dict with
        ``X_train`` float32 (n, 300), ``y_train`` int32 (0..4), ``group_train`` int64
        (query sizes, summing to n), and the same for ``_valid`` and ``_test``;
        ``feature_costs`` float64 (300,), ``feature_names`` ``["f1", ..., "f300"]`` (the
        file's 1-based indices), ``n_grades`` 5, ``name`` ``"ltr_sample"``.
    """
    if not 0.0 <= valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
    raw = {name: _read_gz(name, check_sha256) for name in LTR_FILES}
    out = {"name": "ltr_sample", "n_grades": 5,
           "feature_names": [f"f{j + 1}" for j in range(LTR_N_FEATURES)]}
    parts = {}
    for part in ("train", "test"):
        data, query = (f"ltr-lightgbm-rank.{part}.gz", f"ltr-lightgbm-rank.{part}.query.gz")
        X, y = _libsvm_dense(raw[data], LTR_N_FEATURES, data)
        parts[part] = (X, y, _group_sizes(raw[query], X.shape[0], query))
    X, y, sizes = parts["train"]
    n_valid = int(round(valid_fraction * sizes.size))  # noqa: RUF046 - numpy 1.x scalars
    valid, train = _split_indices(sizes.size, (n_valid, sizes.size - n_valid), seed)
    out["X_train"], out["y_train"], out["group_train"] = _take_queries(X, y, sizes, train)
    out["X_valid"] = out["y_valid"] = out["group_valid"] = None
    if n_valid:
        out["X_valid"], out["y_valid"], out["group_valid"] = _take_queries(X, y, sizes, valid)
    out["X_test"], out["y_test"], out["group_test"] = parts["test"]
    if costs == "levels":
        out["feature_costs"] = _cost_levels(LTR_N_FEATURES, cost_seed)
    elif costs == "unit":
        out["feature_costs"] = np.ones(LTR_N_FEATURES, dtype=np.float64)
    else:
        raise ValueError(f"costs must be 'levels' or 'unit', got {costs!r}")
    return out


def load_ltr_sample_fold(fold, n_folds=5, seed=0, check_sha256=True):
    """Fold ``fold`` of a ``n_folds``-fold cross-validation over the queries of the whole
    LTR sample: the 201 training and 50 test queries pooled (251 queries, 3,773
    documents), split into ``n_folds`` near-equal sets of whole queries by
    ``numpy.random.default_rng(seed).permutation(251)``; the fold's queries are the test
    set, the others the training set (both in file order). Unit feature costs.

    Returns
    -------
    dict as :func:`load_ltr_sample` (``X_valid`` None), with ``fold`` and ``n_folds``.
    """
    if not 0 <= fold < n_folds:
        raise ValueError(f"fold must be in [0, {n_folds}), got {fold}")
    whole = load_ltr_sample(valid_fraction=0.0, costs="unit", check_sha256=check_sha256)
    X = np.vstack([whole["X_train"], whole["X_test"]])
    y = np.concatenate([whole["y_train"], whole["y_test"]])
    sizes = np.concatenate([whole["group_train"], whole["group_test"]])
    folds = np.array_split(np.random.default_rng(seed).permutation(sizes.size), n_folds)
    test = np.sort(folds[fold])
    train = np.setdiff1d(np.arange(sizes.size), test)
    out = dict(whole, fold=fold, n_folds=n_folds)
    out["X_train"], out["y_train"], out["group_train"] = _take_queries(X, y, sizes, train)
    out["X_test"], out["y_test"], out["group_test"] = _take_queries(X, y, sizes, test)
    return out


RANKING_NOISE = (6.0, 4.0, 3.0, 2.2, 1.6, 1.1, 0.7, 0.4)  # per cost level, cheapest first
RANKING_GRADE_QUANTILES = (0.30, 0.62, 0.85, 0.95)


def make_synthetic_ranking(n_queries=10_000, seed=0, valid_fraction=0.2, test_fraction=0.2,
                           min_docs=20, max_docs=30):
    """A synthetic learning-to-rank set with Yahoo! LTR-like feature costs: the costlier a
    feature, the more it says about relevance (the cost levels of
    :func:`make_synthetic_costly`, the CEGB paper's section 5).

    32 features, four per cost level ``{1, 5, 10, 20, 50, 100, 150, 200}`` (column ``j``
    costs ``COSTLY_COST_LEVELS[j // 4]``). Generator (``rng =
    numpy.random.default_rng(seed)``):

    1. Query ``q`` has ``n_q ~ Uniform{min_docs..max_docs}`` documents (25 on average)
       and a query-level relevance ``m_q ~ N(0, 0.5^2)`` (queries differ in how many
       relevant documents they have).
    2. Document latent relevance: ``z1, z2 ~ N(0, 1)``, ``s = m_q + z1 + 0.6*z2 +
       0.4*z1*z2`` (variance about 1.77; the interaction gives the trees some work).
    3. Graded label: ``t = s + 0.3*eta`` (eta ~ N(0, 1)), grade = number of thresholds
       below ``t``, the thresholds being the empirical quantiles
       ``RANKING_GRADE_QUANTILES`` (0.30, 0.62, 0.85, 0.95) of ``t`` over all documents:
       about 30 / 32 / 23 / 10 / 5% of grades 0 / 1 / 2 / 3 / 4.
    4. Features of cost level ``l`` (``sigma_l = RANKING_NOISE[l]`` = 6, 4, 3, 2.2, 1.6,
       1.1, 0.7, 0.4 from cost 1 to 200), each with its own N(0, 1) noise ``e``::

           column 4l + 0, 4l + 1: s + sigma_l * e    (two noisy views of the relevance)
           column 4l + 2:         z1 + sigma_l * e   (a view of one component)
           column 4l + 3:         e                  (pure noise)

       so a view's correlation with ``s`` is about 0.22 / 0.32 / 0.41 / 0.52 / 0.64 /
       0.77 / 0.89 / 0.96 from cost 1 to 200: cheap features are weakly informative,
       and all eight views of cost <= 20 together (cost 72) say about as much as the two
       of cost 50 (cost 100), less than one of cost 200.
    5. Split by whole queries, in generation order (i.i.d. queries: a random split):
       the first ``n_queries - n_valid - n_test`` queries train, then ``n_valid =
       round(valid_fraction * n_queries)`` validation and ``n_test`` test queries.

    The default 10,000 queries have 250,000 documents or so (6,000 / 2,000 / 2,000
    queries; 150,016 / 49,837 / 50,136 documents for seed 0). References on the test
    set: ``oracle_ndcg5_test`` (documents ranked by the latent ``s``: what the label
    noise leaves; 0.9805 for seed 0) and ``cheap_ndcg5_test`` (ranked by the sum of the
    two cost-1 views, cost 2; 0.4475); NDCG@5 of a random order is about 0.29.

    Returns
    -------
    dict with
        ``X_train`` float32 (n, 32), ``y_train`` int32 (0..4), ``group_train`` int64
        (query sizes), and the same for ``_valid`` and ``_test``; ``s_test`` float64
        (the latent relevance of the test documents); the two references;
        ``feature_costs`` float64 (32,), ``feature_names`` ``"<role>_c<cost>"`` (roles
        ``viewA``, ``viewB``, ``z1``, ``noise``), ``n_grades`` 5, ``name``
        ``"synthetic_rank"``.
    """
    n_valid = int(round(valid_fraction * n_queries))  # noqa: RUF046 - numpy 1.x scalars
    n_test = int(round(test_fraction * n_queries))  # noqa: RUF046
    n_train = n_queries - n_valid - n_test
    if min(n_valid, n_test, n_train) < 1 or not 1 <= min_docs <= max_docs:
        raise ValueError(f"make_synthetic_ranking: {n_queries} queries do not give three "
                         "non-empty parts (or min_docs > max_docs)")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_docs, max_docs + 1, size=n_queries).astype(np.int64)
    m = rng.normal(0.0, 0.5, size=n_queries)
    n = int(sizes.sum())
    z1, z2 = rng.standard_normal(n), rng.standard_normal(n)
    s = np.repeat(m, sizes) + z1 + 0.6 * z2 + 0.4 * z1 * z2
    t = s + 0.3 * rng.standard_normal(n)
    y = np.searchsorted(np.quantile(t, RANKING_GRADE_QUANTILES), t).astype(np.int32)
    n_levels = len(COSTLY_COST_LEVELS)
    X = np.empty((n, 4 * n_levels), dtype=np.float32)
    rng.standard_normal(out=X, dtype=np.float32)
    for level, sigma in enumerate(RANKING_NOISE):
        for j, base in ((4 * level, s), (4 * level + 1, s), (4 * level + 2, z1)):
            X[:, j] = base + sigma * X[:, j]
    names = [f"{role}_c{int(c)}" for c in COSTLY_COST_LEVELS
             for role in ("viewA", "viewB", "z1", "noise")]
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    q_parts = {"train": (0, n_train), "valid": (n_train, n_train + n_valid),
               "test": (n_train + n_valid, n_queries)}
    out = {"name": "synthetic_rank", "n_grades": 5, "feature_names": names,
           "feature_costs": np.repeat(np.asarray(COSTLY_COST_LEVELS, dtype=np.float64), 4)}
    for part, (q0, q1) in q_parts.items():
        rows = slice(int(bounds[q0]), int(bounds[q1]))
        out[f"X_{part}"], out[f"y_{part}"] = X[rows], y[rows]
        out[f"group_{part}"] = sizes[q0:q1].copy()
    test = slice(int(bounds[n_train + n_valid]), n)
    out["s_test"] = s[test].copy()
    out["oracle_ndcg5_test"] = ndcg_at_k(out["y_test"], out["s_test"], out["group_test"], 5)
    out["cheap_ndcg5_test"] = ndcg_at_k(out["y_test"], X[test, 0] + X[test, 1].astype(np.float64),
                                        out["group_test"], 5)
    return out


def _query_order(score, start, size):
    """Row indices of one query by decreasing score, ties in row order (LightGBM's
    ``std::stable_sort``)."""
    return start + np.argsort(-np.asarray(score[start:start + size], dtype=np.float64),
                              kind="stable")


def ndcg_at_k(y, score, group, k, per_query=False):
    """Mean NDCG@k over queries as LightGBM computes it (``rank_metric.hpp``): gain
    ``2^label - 1``, discount ``1 / log2(2 + position)``, documents ordered by decreasing
    score with ties in row order, the ideal DCG from the sorted labels; a query whose
    ideal DCG is 0 (all labels 0) scores 1. ``per_query``: the array of query scores."""
    y, score = np.asarray(y), np.asarray(score)
    group = np.asarray(group, dtype=np.int64)
    out = np.empty(group.size)
    start = 0
    for q, size in enumerate(group):
        kk = min(int(k), int(size))
        disc = 1.0 / np.log2(np.arange(kk) + 2.0)
        gains = np.exp2(y[start:start + size].astype(np.float64)) - 1.0
        ideal = float(np.sort(gains)[::-1][:kk] @ disc)
        order = _query_order(score, start, size)[:kk]
        out[q] = 1.0 if ideal <= 0 else float((np.exp2(y[order].astype(np.float64)) - 1.0)
                                               @ disc) / ideal
        start += size
    return out if per_query else float(out.mean())


def precision_at_k(y, score, group, k, threshold=1, per_query=False):
    """Mean precision@k over queries: the share of documents with ``label >= threshold``
    among the first ``min(k, query size)`` by decreasing score (ties in row order)."""
    y, score = np.asarray(y), np.asarray(score)
    out = np.empty(len(group))
    start = 0
    for q, size in enumerate(np.asarray(group, dtype=np.int64)):
        order = _query_order(score, start, size)[:min(int(k), int(size))]
        out[q] = float(np.mean(y[order] >= threshold))
        start += size
    return out if per_query else float(out.mean())


# Lending Club (modeldata): the columns by price tier (load_lending_club).
LENDING_APPLICATION = ("funded_amnt", "term", "int_rate", "sub_grade", "addr_state",
                       "verification_status", "annual_inc", "emp_length")
LENDING_CREDIT_REPORT = ("delinq_2yrs", "inq_last_6mths", "revol_util", "acc_now_delinq",
                         "delinq_amnt")
LENDING_BUREAU = ("open_il_6m", "open_il_12m", "open_il_24m", "total_bal_il", "all_util",
                  "inq_fi", "inq_last_12m", "num_il_tl", "total_il_high_credit_limit")
# the categorical columns' levels in code order: ordered where the levels are (term,
# grade, years employed; unknown employment after 10+ years), else alphabetical
LENDING_LEVELS = {
    "term": ("term_36", "term_60"),
    "sub_grade": tuple(f"{g}{k}" for g in "ABCDEFG" for k in range(1, 6)),
    "verification_status": ("Not_Verified", "Source_Verified", "Verified"),
    "emp_length": ("emp_lt_1",) + tuple(f"emp_{k}" for k in range(1, 10))
                  + ("emp_ge_10", "emp_unk"),
}
LENDING_BUREAU_PRICE = 20.0


def load_lending_club(seed=0, check_sha256=True):
    """Lending Club loans (R package ``modeldata``; shared data README, section 4): 9,857
    loans, 22 features, label 1 = ``Class`` "bad" (517 loans, 5.2 %), 0 = "good".

    Split, stratified by the label with ``seed``: within each class the rows are
    permuted with ``numpy.random.default_rng(seed).permutation`` and cut 60 / 20 / 20 %,
    giving 5,915 train (311 bad) / 1,971 valid (103 bad) / 1,971 test (103 bad) rows,
    each in file order. Stratified because with 5 % positives a plain random split would
    move the validation and test AUC by the luck of the draw.

    Categorical columns as **ordinal codes** (:func:`load_lending_club_frame` keeps the
    levels, as pandas ``category`` columns)
    0, 1, ...: ``term`` (36, 60 months), ``sub_grade`` (A1 < A2 < ... < G5, the lender's
    risk grade), ``verification_status`` and ``emp_length`` (< 1 year, 1, ..., 9, 10+,
    unknown last) in the orders of ``LENDING_LEVELS``; ``addr_state`` (the 50 codes the file
    has: 49 states and DC; no IA) in alphabetical order, a code without meaning that
    trees can only cut into blocks of states.

    Prices (assumed; the data has none), in three tiers:

    * the application and the loan listing (``LENDING_APPLICATION``: amount, term, rate,
      grade, state, income verification, income, years employed): 1 each, what the
      applicant states or the lender sets;
    * the standard credit report (``LENDING_CREDIT_REPORT``: delinquencies, inquiries in
      6 months, revolving utilisation, ...): 1 each, since the grade and the rate are
      set from it, every applicant's report has been bought before the loan is listed;
    * the extended bureau attributes (``LENDING_BUREAU``: instalment accounts opened in
      6/12/24 months, their balances and limits, total utilisation, finance inquiries,
      inquiries in 12 months): one extra bureau product, a cost group of price
      ``LENDING_BUREAU_PRICE`` = 20 paid once per loan when its first bureau attribute
      is read, plus 1 per attribute. 20 is an illustrative ratio (one report worth
      twenty fields of the application), not a quoted price.

    Reading every feature costs 13 + 20 + 9 = 42; the cheap tiers alone 13.

    Returns
    -------
    dict with
        ``X_train`` float32 (5915, 22), ``y_train`` int32, and the same for ``_valid``
        (1971) and ``_test`` (1971); ``feature_costs`` float64 (22,);
        ``cost_groups`` ``{"bureau": [bureau feature indices]}`` and ``group_costs``
        ``{"bureau": 20.0}`` (for ``cbudget.Dataset``); ``feature_names`` the CSV's
        column names; ``n_classes`` 2; ``name`` ``"lending_club"``.
    """
    names, columns, levels, y = _lending_club_columns(check_sha256)
    X = np.empty((y.shape[0], len(names)), dtype=np.float32)
    for j, name in enumerate(names):
        if name in levels:
            code = {v: k for k, v in enumerate(levels[name])}
            X[:, j] = [code[v] for v in columns[name]]
        else:
            X[:, j] = np.asarray(columns[name], dtype=np.float64)
    train, valid, test = _stratified_split(y, seed)
    return {"name": "lending_club",
            "X_train": np.ascontiguousarray(X[train]), "y_train": y[train],
            "X_valid": np.ascontiguousarray(X[valid]), "y_valid": y[valid],
            "X_test": np.ascontiguousarray(X[test]), "y_test": y[test],
            **_lending_club_costs(names), "feature_names": names, "n_classes": 2}


def _lending_club_columns(check_sha256):
    """The parsed CSV: (feature names, {name: the column's text values}, {categorical
    column: its levels in code order}, label int32 (1 = bad))."""
    text = _read_gz("lending_club.csv.gz", check_sha256).decode("ascii")
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    rows = list(reader)
    names = [c for c in header if c != "Class"]
    expected = set(LENDING_APPLICATION + LENDING_CREDIT_REPORT + LENDING_BUREAU)
    if len(rows) != 9857 or set(names) != expected or header[-1] != "Class":
        raise ValueError(f"lending_club.csv: expected 9857 rows of {sorted(expected)} and "
                         f"Class, got {len(rows)} rows of {header}")
    columns = dict(zip(header, zip(*rows, strict=True), strict=True))
    levels = dict(LENDING_LEVELS, addr_state=tuple(sorted(set(columns["addr_state"]))))
    for name, known in levels.items():
        unknown = set(columns[name]) - set(known)
        if unknown:
            raise ValueError(f"lending_club.csv: {name} has unknown levels {unknown}")
    label = columns.pop("Class")
    if set(label) != {"good", "bad"}:
        raise ValueError(f"lending_club.csv: Class has levels {set(label)}")
    return names, columns, levels, (np.asarray(label) == "bad").astype(np.int32)


def _stratified_split(y, seed, fractions=(0.2, 0.2)):
    """Sorted (train, valid, test) row indices: within each class the rows permuted with
    ``seed`` and cut into ``1 - sum(fractions)`` / ``fractions`` (rounded per class)."""
    parts = [[], [], []]
    for cls in np.unique(y):
        rows_c = np.flatnonzero(y == cls)
        n = rows_c.size
        n_valid, n_test = (int(round(f * n)) for f in fractions)  # noqa: RUF046
        for part, idx in zip(parts, _split_indices(n, (n - n_valid - n_test, n_valid,
                                                       n_test), seed), strict=True):
            part.append(rows_c[idx])
    return [np.sort(np.concatenate(p)) for p in parts]


def _lending_club_costs(names):
    """The prices of :func:`load_lending_club`: every feature 1, the bureau group 20."""
    return {"feature_costs": np.ones(len(names), dtype=np.float64),
            "cost_groups": {"bureau": [names.index(c) for c in LENDING_BUREAU]},
            "group_costs": {"bureau": LENDING_BUREAU_PRICE}}


def _frame_parts(frame, parts):
    """``{"X_<part>": the rows of frame (index reset)}`` of ``parts`` {part: row indices}."""
    return {f"X_{part}": frame.iloc[rows].reset_index(drop=True) for part, rows in parts.items()}


def load_lending_club_frame(seed=0, check_sha256=True):
    """:func:`load_lending_club` (the same rows, split, prices and column order) with the
    features as **pandas DataFrames** whose five categorical columns are pandas
    ``category`` columns of the text levels (``term_36``, ``C4``, ``CT``, ...), not codes.

    The categories of each column are the levels of ``LENDING_LEVELS`` (states
    alphabetical) in that order, the same for every part, so a column's category codes
    equal :func:`load_lending_club`'s ordinal codes. Numeric columns are float32.

    Returns
    -------
    dict as :func:`load_lending_club` with ``X_train``, ``X_valid``, ``X_test``
    DataFrames, ``categorical`` the categorical column names (in column order) and
    ``task`` ``"binary"``.
    """
    import pandas as pd
    names, columns, levels, y = _lending_club_columns(check_sha256)
    frame = pd.DataFrame({
        name: (pd.Categorical(columns[name], categories=list(levels[name])) if name in levels
               else np.asarray(columns[name], dtype=np.float64).astype(np.float32))
        for name in names})
    train, valid, test = _stratified_split(y, seed)
    return {"name": "lending_club", **_frame_parts(frame, {"train": train, "valid": valid,
                                                           "test": test}),
            "y_train": y[train], "y_valid": y[valid], "y_test": y[test],
            **_lending_club_costs(names), "feature_names": names,
            "categorical": [n for n in names if n in levels], "n_classes": 2,
            "task": "binary"}


AMES_TARGET = "Sale_Price"


def load_ames(seed=0, check_sha256=True):
    """Ames housing (R package ``modeldata``; shared data README, section 4): 2,930 houses,
    73 features, regression on the **natural log of Sale_Price**.

    The CSV's 40 text columns (``Neighborhood`` 28 levels, ``MS_SubClass`` 16, ...; 279
    levels in all) are pandas ``category`` columns with their levels sorted
    alphabetically; the 33 numeric columns are float32. Only ``NA`` is read as missing
    (there is none: ``None`` is a level of ``Mas_Vnr_Type`` and ``Misc_Feature``).

    Split (no stratification: a regression): the rows are permuted with
    ``numpy.random.default_rng(seed).permutation`` and cut 60 / 20 / 20 %, giving 1,758
    train / 586 valid / 586 test rows, each in file order.

    Returns
    -------
    dict with ``X_train`` / ``X_valid`` / ``X_test`` DataFrames, ``y_*`` float64 (log
    price), ``categorical`` the 40 categorical column names (in column order),
    ``feature_names``, ``feature_costs`` (all 1.0), ``n_classes`` 0, ``task``
    ``"regression"``, ``name`` ``"ames"``.
    """
    import pandas as pd
    raw = _read_gz("ames.csv.gz", check_sha256)
    df = pd.read_csv(io.BytesIO(raw), keep_default_na=False, na_values=["NA"])
    if df.shape != (2930, 74) or AMES_TARGET not in df.columns:
        raise ValueError(f"ames.csv: expected 2930 rows x 74 columns with {AMES_TARGET}, "
                         f"got {df.shape}")
    y = np.log(df.pop(AMES_TARGET).to_numpy(dtype=np.float64))
    categorical = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
    frame = pd.DataFrame({c: (pd.Categorical(df[c]) if c in categorical
                              else df[c].to_numpy(dtype=np.float32)) for c in df.columns})
    n = y.shape[0]
    n_valid = n_test = int(round(0.2 * n))  # noqa: RUF046 - numpy 1.x scalars
    train, valid, test = _split_indices(n, (n - n_valid - n_test, n_valid, n_test), seed)
    return {"name": "ames", **_frame_parts(frame, {"train": train, "valid": valid,
                                                   "test": test}),
            "y_train": y[train], "y_valid": y[valid], "y_test": y[test],
            "feature_names": list(frame.columns), "categorical": categorical,
            "feature_costs": np.ones(frame.shape[1], dtype=np.float64), "n_classes": 0,
            "task": "regression"}


# (name, levels, frequencies "uniform" or "zipf", sd of the per-level effect)
CATEGORICAL_COLUMNS = (("cat_1k", 1000, "uniform", 0.8), ("cat_2k_zipf", 2000, "zipf", 0.8),
                       ("cat_5k", 5000, "uniform", 0.5), ("cat_20", 20, "uniform", 0.5))
CATEGORICAL_MISSING = 0.01  # share of missing values of cat_2k_zipf


def make_synthetic_categorical(n_samples=1_000_000, seed=0, test_fraction=0.2):
    """A synthetic binary problem with high-cardinality categorical columns (issue 44's
    "1,000+ levels, 1M rows"; no such public data set is available offline).

    Generator (``rng = numpy.random.default_rng(seed)``):

    1. Numeric ``x0..x7 ~ N(0, 1)`` (float32); ``x4..x7`` are noise.
    2. Categorical columns (``CATEGORICAL_COLUMNS``), each level with its own random
       effect drawn once, ``a[level] ~ N(0, sd^2)``:

       ============  ======  ===========================================  ====
       column        levels  frequencies                                  sd
       ============  ======  ===========================================  ====
       cat_1k         1,000  uniform                                      0.8
       cat_2k_zipf    2,000  Zipf-like, P(rank r) ~ 1 / (r + 10) (a       0.8
                             random level order); 1 % missing (effect 0)
       cat_5k         5,000  uniform (about 160 training rows a level)    0.5
       cat_20            20  uniform; its effect multiplies x0            0.5
       ============  ======  ===========================================  ====

    3. ``logit = 0.8*x0 - 0.6*x1 + 0.5*x2*x3 + a_1k[c] + a_2k[c] + a_5k[c] +
       a_20[c]*x0``; ``y ~ Bernoulli(sigmoid(logit))`` (about half positive).
    4. The first ``n_samples - n_test`` rows train, the last ``n_test =
       round(test_fraction * n_samples)`` test (i.i.d. rows: a random split).

    The levels are strings ``"<column>_<k>"`` as pandas ``category`` columns whose
    categories are all the column's levels in ``k`` order (the same for both parts: a
    category code is ``k``; missing is NaN). A code as a number means nothing: only a
    categorical split (or one-hot indicators) can group levels of similar effect.

    Returns
    -------
    dict with ``X_train`` / ``X_test`` DataFrames (8 numeric then 4 categorical
    columns), ``y_*`` int32, ``p_test`` the true probabilities of the test rows,
    ``bayes_auc_test`` (their AUC), ``categorical``, ``feature_names``, ``feature_costs``
    (all 1.0), ``n_classes`` 2, ``task`` ``"binary"``, ``name``
    ``"synthetic_categorical"``; no validation part (``X_valid`` None).
    """
    import pandas as pd
    n_test = int(round(test_fraction * n_samples))  # noqa: RUF046 - numpy 1.x scalars
    if n_samples < 10 or not 0 < n_test < n_samples:
        raise ValueError("make_synthetic_categorical needs n_samples >= 10 and a test "
                         f"fraction in (0, 1), got {n_samples}, {test_fraction}")
    rng = np.random.default_rng(seed)
    X = np.empty((n_samples, 8), dtype=np.float32)
    rng.standard_normal(out=X, dtype=np.float32)
    x = X.astype(np.float64)
    logit = 0.8 * x[:, 0] - 0.6 * x[:, 1] + 0.5 * x[:, 2] * x[:, 3]
    frame = {f"x{j}": X[:, j] for j in range(8)}
    for name, k, freq, sd in CATEGORICAL_COLUMNS:
        effect = rng.normal(0.0, sd, size=k)
        if freq == "zipf":
            p = 1.0 / (np.arange(k) + 10.0)
            p = p[rng.permutation(k)]
            codes = rng.choice(k, size=n_samples, p=p / p.sum())
        else:
            codes = rng.integers(0, k, size=n_samples)
        term = effect[codes] * (x[:, 0] if name == "cat_20" else 1.0)
        if name == "cat_2k_zipf":
            missing = rng.random(n_samples) < CATEGORICAL_MISSING
            codes[missing], term[missing] = -1, 0.0
        logit += term
        frame[name] = pd.Categorical.from_codes(codes, categories=[f"{name}_{c}"
                                                                   for c in range(k)])
    p = 1.0 / (1.0 + np.exp(-logit))
    y = (rng.random(n_samples) < p).astype(np.int32)
    frame = pd.DataFrame(frame)
    n_train = n_samples - n_test
    out = {"name": "synthetic_categorical",
           **_frame_parts(frame, {"train": np.arange(n_train),
                                  "test": np.arange(n_train, n_samples)}),
           "X_valid": None, "y_valid": None, "y_train": y[:n_train], "y_test": y[n_train:],
           "p_test": p[n_train:], "feature_names": list(frame.columns),
           "categorical": [c[0] for c in CATEGORICAL_COLUMNS],
           "feature_costs": np.ones(frame.shape[1], dtype=np.float64), "n_classes": 2,
           "task": "binary"}
    out["bayes_auc_test"] = auc(out["y_test"], out["p_test"])
    return out
