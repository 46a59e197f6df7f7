"""The ``cbudget`` command (also ``python -m cbudget``).

``cbudget train DATA --label COL -o MODEL.json`` trains a model on a CSV or Parquet file,
``cbudget predict MODEL.json DATA -o OUT.csv`` writes its predictions (and per-input
costs), ``cbudget report MODEL DATA`` summarises what its predictions on a file cost (a
cbudget model, or a LightGBM, XGBoost or scikit-learn model file with ``--costs``),
``cbudget demo`` trains every algorithm on the shipped Letters data, and
``cbudget --version`` prints the version. Bad input ends with exit status 2 and a one-line
``cbudget: error: ...`` message.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, NamedTuple, TypedDict

import numpy as np

import cbudget
from cbudget._files import check_replaceable
from cbudget._json_checks import NestingError, parse_json
from cbudget.categories import Categories
from cbudget.costs import stage_line
from cbudget.dataset import query_boundaries
from cbudget.datasets import load_letters, train_valid_test_split
from cbudget.interop.audit import (
    foreign_model_kind,
    from_any,
    on_demand_savings,
    read_foreign_model,
)

# file name endings read (and written) as Parquet; everything else is CSV
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")

# Size limits, checked with os.stat before a file is read: parsing a JSON model takes
# several times its size in memory (a 530 MB file took 3 GB and half a minute before it
# was refused). --max-model-mb raises the model limit; JSON option files (--costs,
# --params-json: a cost per feature) stay far below theirs.
DEFAULT_MAX_MODEL_MB = 256
MAX_JSON_OPTION_MB = 64
MB = 1 << 20


class CommandError(Exception):
    """A problem with the command's input: reported as one line, exit status 2."""


# --------------------------------------------------------------------------------------
# data files
# --------------------------------------------------------------------------------------
def _import_pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise CommandError("reading and writing data files needs pandas: "
                           "pip install pandas") from None
    return pandas


def is_parquet(path: str) -> bool:
    """Whether ``path`` names a Parquet file (by its ending)."""
    return path.lower().endswith(PARQUET_SUFFIXES)


def read_table(path: str, text_columns: Sequence[str] = ()) -> Any:
    """The pandas DataFrame of a CSV or Parquet file (by its ending), column names as
    str, the CSV's ``text_columns`` read as text (:func:`text_columns`); CommandError for
    a missing, unreadable or empty file."""
    pandas = _import_pandas()
    if not os.path.isfile(path):
        raise CommandError(f"{path}: no such file")
    try:
        if is_parquet(path):
            frame = pandas.read_parquet(path)
        else:
            # the floats written, exactly: pandas < 2 parses to within an ulp by default;
            # pandas 3 parses exactly and deprecates the option
            exact = ({} if int(pandas.__version__.split(".")[0]) >= 3
                     else {"float_precision": "round_trip"})
            # low_memory=False: each column's type is inferred from all its rows, not per
            # chunk of rows (a column of levels whose first rows look like numbers would
            # mix numbers and strings)
            frame = pandas.read_csv(path, dtype={name: str for name in text_columns},
                                    low_memory=False, **exact)
    except ImportError:
        # pandas found neither Parquet engine
        raise CommandError(f"{path}: reading Parquet files needs pyarrow: "
                           "pip install pyarrow") from None
    except (ValueError, OSError, pandas.errors.ParserError) as exc:
        # EmptyDataError is a ValueError; pyarrow's errors are ValueErrors or OSErrors
        raise CommandError(f"{path}: cannot read it as "
                           f"{'Parquet' if is_parquet(path) else 'CSV'}: {exc}") from None
    frame.columns = [str(c) for c in frame.columns]
    if len(frame) == 0:
        raise CommandError(f"{path}: no rows")
    return frame


def write_table(columns: dict[str, np.ndarray], path: str) -> None:
    """Write ``{column name: values}`` to ``path``, Parquet or CSV by its ending."""
    pandas = _import_pandas()
    frame = pandas.DataFrame(columns)
    if is_parquet(path):
        try:
            frame.to_parquet(path, index=False)
        except ImportError:
            raise CommandError(f"{path}: writing Parquet files needs pyarrow: "
                               "pip install pyarrow") from None
    else:
        # pandas writes floats with repr precision: read back, they are the same numbers
        frame.to_csv(path, index=False)


def feature_frame(frame: Any, feature_names: list[str], path: str) -> Any:
    """The columns ``feature_names`` of ``frame``, in that order (a DataFrame: the
    Dataset or the model maps the levels of the categorical ones, and names a column of
    strings that is not categorical in its error); CommandError listing the missing
    ones."""
    missing = [name for name in feature_names if name not in frame.columns]
    if missing:
        raise CommandError(f"{path} lacks {len(missing)} feature column(s) of the model: "
                           f"{', '.join(missing)}")
    return frame[feature_names]


def text_columns(categories: Categories, feature_names: Sequence[str]) -> list[str]:
    """The names of the categorical features whose levels are strings: a CSV's cells
    of those columns are read as text, since pandas would read a file whose levels all
    look like numbers ("10", "007") as a column of numbers (7 for "007"), which are not
    the levels."""
    return [feature_names[m] for m, levels in categories.by_feature().items()
            if levels is not None and all(isinstance(level, str) for level in levels)]


def categorical_columns(text: str, feature_names: list[str]) -> Any:
    """``--categorical``: "auto" (string columns), "none", or comma-separated column
    names (a numeric one holds integer codes), as Dataset's ``categorical_feature``."""
    if text == "auto":
        return "auto"
    if text == "none":
        return []
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in feature_names]
    if unknown:
        raise CommandError(f"--categorical names {', '.join(unknown)}, which "
                           f"{'is' if len(unknown) == 1 else 'are'} not a feature column")
    return names


def label_column(frame: Any, label: str, path: str,
                 classes: list[str] | None = None) -> tuple[np.ndarray, list[str] | None]:
    """The label column of ``frame`` as float64, and the class labels when it holds text
    (or booleans): those of ``classes`` (the training file's), else its own, sorted; a
    label's value is its class's index. CommandError when the column is missing, has
    missing values, or holds a class ``classes`` lacks."""
    if label not in frame.columns:
        raise CommandError(f"{path} has no label column {label!r}; its columns: "
                           f"{', '.join(frame.columns)}")
    column = frame[label]
    if column.isna().any():
        raise CommandError(f"{path}: label column {label!r} has missing values")
    if column.dtype.kind in "biuf" and classes is None:
        values = column.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise CommandError(f"{path}: label column {label!r} has infinite values")
        return values, None
    text = column.astype(str).to_numpy()
    if classes is None:
        classes = sorted(set(text.tolist()))
    index = {c: k for k, c in enumerate(classes)}
    unknown = sorted(set(text.tolist()) - set(index))
    if unknown:
        raise CommandError(f"{path}: label column {label!r} holds classes the training "
                           f"file lacks: {', '.join(map(repr, unknown[:5]))}")
    return np.array([index[t] for t in text], dtype=np.float64), classes


def classification_params(params: dict[str, Any], classes: list[str]) -> dict[str, Any]:
    """``params`` for a label of the classes ``classes``: binary:logistic for two,
    multi:softprob (num_class) for more, unless an objective is given; CommandError for
    a regression or ranking objective."""
    if len(classes) < 2:
        raise CommandError(f"the label holds one class ({classes[0]!r}): a classifier "
                           "needs two or more")
    params = dict(params)
    objective = params.get("objective")
    if objective is None:
        params["objective"] = "binary:logistic" if len(classes) == 2 else "multi:softprob"
        if len(classes) > 2:
            params.setdefault("num_class", len(classes))
    elif objective not in ("binary:logistic", "multi:softprob"):
        raise CommandError(f"the label holds classes ({', '.join(classes[:5])}), not "
                           f"numbers: objective {objective!r} needs numeric labels (use "
                           "binary:logistic or multi:softprob, the default)")
    return params


def query_column(frame: Any, query: str | None, path: str) -> np.ndarray | None:
    """Learning to rank: the query id column ``query`` of ``frame`` (None without one);
    CommandError when it is missing or has missing values."""
    if query is None:
        return None
    if query not in frame.columns:
        raise CommandError(f"{path} has no query column {query!r}")
    ids = frame[query].to_numpy()
    if frame[query].isna().any():
        raise CommandError(f"{path}: query column {query!r} has missing values")
    return ids


# --------------------------------------------------------------------------------------
# train
# --------------------------------------------------------------------------------------
def check_file_size(path: str, limit_mb: float, what: str, option: str | None) -> None:
    """CommandError when the file ``path`` is larger than ``limit_mb`` MB (1 MB = 2**20
    bytes), from its size on disk before anything reads it; ``option`` raises the limit."""
    size = os.stat(path).st_size
    if size > limit_mb * MB:
        how = f" (--{option} raises the limit)" if option else ""
        raise CommandError(f"{path}: {what} of {size / MB:.1f} MB is larger than the limit "
                           f"of {limit_mb:g} MB{how}")


def json_argument(text: str, option: str) -> Any:
    """The JSON of an option given as JSON text or as the path of a JSON file (at most
    ``MAX_JSON_OPTION_MB``), nested at most ``cbudget._json_checks.MAX_NESTING`` levels."""
    if os.path.isfile(text):
        check_file_size(text, MAX_JSON_OPTION_MB, f"the {option} file", None)
        with open(text, "rb") as f:
            content = f.read()
        try:
            return parse_json(content, f"{option}: {text}")
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    try:
        return parse_json(text, f"{option}: {text[:40]!r}")
    except NestingError as exc:
        raise CommandError(str(exc)) from None
    except ValueError:
        raise CommandError(f"{option}: {text[:40]!r} is neither a file nor valid JSON") \
            from None


def parse_param(item: str) -> tuple[str, Any]:
    """``key=value`` of ``--param``: the value as JSON when it parses (numbers, true,
    null, lists), else as the string itself (``algorithm=cegb``)."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise CommandError(f"--param expects key=value, got {item!r}")
    try:
        return key.strip(), parse_json(value, f"--param {key.strip()}")
    except NestingError as exc:
        raise CommandError(str(exc)) from None
    except ValueError:
        return key.strip(), value


def training_params(args: argparse.Namespace) -> dict[str, Any]:
    """``--params-json`` updated by the ``--param`` items, in the order given."""
    params: dict[str, Any] = {}
    if args.params_json is not None:
        loaded = json_argument(args.params_json, "--params-json")
        if not isinstance(loaded, dict):
            raise CommandError("--params-json must hold a JSON object {name: value}, got "
                               f"{type(loaded).__name__}")
        params.update(loaded)
    for item in args.param:
        key, value = parse_param(item)
        params[key] = value
    return params


def feature_costs(args: argparse.Namespace, feature_names: list[str]) -> dict[str, Any]:
    """The cost keywords of the training Dataset: the ``--costs`` dict (the features it
    does not name cost ``--default-cost``; without it they are an error), or without
    ``--costs`` every feature at ``--default-cost`` (1 by default: a prediction's cost is then the
    number of features it reads)."""
    if args.costs is None:
        default = 1.0 if args.default_cost is None else args.default_cost
        return {"feature_costs": np.full(len(feature_names), default)}
    costs = json_argument(args.costs, "--costs")
    if not isinstance(costs, dict):
        raise CommandError("--costs must hold a JSON object {feature name: cost}, got "
                           f"{type(costs).__name__}")
    unknown = [str(name) for name in costs if name not in feature_names]
    if unknown:
        raise CommandError(f"--costs names {', '.join(unknown)}, not among the feature "
                           f"columns of {args.data} (the label column is not a feature)")
    missing = [name for name in feature_names if name not in costs]
    if missing and args.default_cost is None:
        # the Dataset refuses it too; this message names the command's option
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        raise CommandError(f"--costs does not name {len(missing)} of the "
                           f"{len(feature_names)} features: {', '.join(missing[:20])}{more}; "
                           "give them costs, or --default-cost X for the rest")
    return {"feature_costs": costs, "default_cost": args.default_cost}


class _IterationCounter(cbudget.TrainingCallback):
    """Counts the iterations training ran (the models not built in stages keep no count)."""

    def __init__(self) -> None:
        self.count = 0

    def after_iteration(self, model: cbudget.Model, epoch: int,
                        evals_log: dict[str, dict[str, list[float]]]) -> bool:
        self.count += 1
        return False


def train_command(args: argparse.Namespace) -> None:
    """``cbudget train``: train on a file, save the model, print a summary."""
    if args.early_stopping is not None and args.valid is None:
        raise CommandError("--early-stopping needs a validation file (--valid)")
    check_replaceable(args.output)      # refuse a device, FIFO or link before training
    params = training_params(args)
    frame = read_table(args.data)
    label, classes = label_column(frame, args.label, args.data)
    if classes is not None:
        params = classification_params(params, classes)
    feature_names = [c for c in frame.columns if c not in (args.label, args.query)]
    if not feature_names:
        raise CommandError(f"{args.data} has no feature columns besides the label")
    X = feature_frame(frame, feature_names, args.data)
    dtrain = cbudget.Dataset(X, label, feature_names=feature_names,
                             qid=query_column(frame, args.query, args.data),
                             categorical_feature=categorical_columns(args.categorical,
                                                                     feature_names),
                             **feature_costs(args, feature_names))
    evals = []
    eval_data, eval_path = dtrain, args.data
    if args.valid is not None:
        valid_frame = read_table(args.valid, text_columns(dtrain.categories, feature_names))
        eval_data = cbudget.Dataset(feature_frame(valid_frame, feature_names, args.valid),
                                    label_column(valid_frame, args.label, args.valid,
                                                 classes)[0],
                                    qid=query_column(valid_frame, args.query, args.valid),
                                    reference=dtrain)
        evals, eval_path = [(eval_data, "valid")], args.valid
    expensive_model = None
    if args.expensive_model is not None:
        expensive_model = read_model_file(args.expensive_model, args).content

    counter = _IterationCounter()
    evals_result: dict[str, dict[str, list[float]]] = {}
    model = cbudget.train(params, dtrain, args.rounds, evals=evals,
                          early_stopping_rounds=args.early_stopping,
                          evals_result=evals_result,
                          verbose_eval=False if args.quiet else max(1, args.rounds // 10),
                          callbacks=[counter], expensive_model=expensive_model)
    if classes is not None:     # cbudget predict names the classes
        model.summary["class_labels"] = classes
    # boosters and forests keep the iterations after the best one, but predict (and
    # report costs) up to the best by default, as the other models are cut to it
    model.save_model(args.output)
    if classes is not None:
        print(f"classes {', '.join(classes)} (numbered 0..{len(classes) - 1} in that order)")

    best = model.best_iteration
    best_text = "" if best is None else f", the best on validation: {best + 1}"
    print(f"trained {model.algorithm} ({type(model).__name__}): {counter.count} "
          f"iteration(s){best_text}")
    for metric, values in evals_result.get("valid", {}).items():
        score = values[best] if best is not None else values[-1]
        print(f"validation {metric}: {score:.6g}")
    report = model.cost_report(eval_data)
    per_query = ("" if report.mean_cost_per_query is None else
                 f", per query {report.mean_cost_per_query:.6g}")
    print(f"mean cost per input on {eval_path}: {report.mean_cost:.6g}{per_query} "
          f"({len(report.features_used)} of {len(feature_names)} features used)")
    print(f"saved {args.output}")


# --------------------------------------------------------------------------------------
# predict
# --------------------------------------------------------------------------------------
class ModelFile(NamedTuple):
    """A model file as the command read it: its ``kind`` (``"cbudget"``, ``"lightgbm"``,
    ``"xgboost"``, ``"pickle"``) and ``content``: the cbudget model, or what
    :func:`cbudget.interop.audit.from_any` takes."""
    kind: str
    content: Any


def read_model_file(path: str, args: argparse.Namespace, *,
                    foreign: bool = False) -> ModelFile:
    """The one way the command reads a model file (``predict``, ``report``, ``train
    --expensive-model``): its size checked against ``--max-model-mb`` before it is read,
    its kind decided by content (never by its name), then read. Another library's model
    only with ``foreign``; a pickle only with ``--trust-pickle`` (unpickling runs code
    from the file). CommandError, with the file's name, for anything else."""
    if not os.path.isfile(path):
        raise CommandError(f"{path}: no such model file")
    check_file_size(path, args.max_model_mb, "the model file", "max-model-mb")
    try:
        kind = foreign_model_kind(path)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    trusted = getattr(args, "trust_pickle", False)
    if kind == "pickle" and not trusted:
        how = ("pass --trust-pickle only for a file you made or trust, or save the model "
               "in its library's own format (LightGBM text, XGBoost JSON / UBJSON)"
               if foreign else f"cbudget {args.command} reads cbudget models only")
        raise CommandError(f"{path} is a pickle (by its content, whatever its name), and "
                           f"unpickling runs code from the file: not read; {how}")
    if kind != "cbudget" and not foreign:
        raise CommandError(f"{path} is a {kind} model: cbudget {args.command} reads cbudget "
                           "models (cbudget report audits other libraries' models)")
    try:
        if kind == "cbudget":
            return ModelFile(kind, cbudget.load_model(path))
        return ModelFile(kind, read_foreign_model(path, trust_pickle=trusted))
    except ValueError as exc:
        hint = ""
        if "expensive_model" in str(exc):
            # only Python can hand load_model an estimator that is not a cbudget model
            hint = " (the cbudget command cannot: use the model from Python)"
        named = "" if os.fspath(path) in str(exc) else f"{path}: "
        raise CommandError(f"{named}{exc}{hint}") from None


def prediction_columns(model: cbudget.Model, X: Any) -> dict[str, np.ndarray]:
    """The model's ``predict`` output as named columns: ``prediction`` (regression value,
    probability of class 1, or a forest's class), or ``proba_0 .. proba_{K-1}`` (a
    multi-class model's probability per class); for a model trained on text labels
    (``summary["class_labels"]``), ``proba_<class>`` and the predicted class,
    ``label``."""
    predictions = np.asarray(model.predict(X))
    classes = (model.summary or {}).get("class_labels")
    names = classes if classes is not None else list(range(predictions.shape[-1]))
    columns = ({"prediction": predictions} if predictions.ndim == 1 else
               {f"proba_{names[k]}": predictions[:, k] for k in range(predictions.shape[1])})
    if classes is not None:
        if predictions.ndim == 2:
            chosen = np.argmax(predictions, axis=1)
        elif predictions.dtype.kind in "iu":        # a forest's classes
            chosen = predictions
        else:                                        # the probability of class 1
            chosen = (predictions > 0.5).astype(np.int64)
        columns["label"] = np.asarray(classes, dtype=object)[chosen]
    return columns


def predict_command(args: argparse.Namespace) -> None:
    """``cbudget predict``: write a model's predictions (and costs) on a file: a cbudget
    model's, or a LightGBM / XGBoost (or, with --trust-pickle, scikit-learn) model's as
    ``cbudget report`` reads them."""
    kind, model = read_model_file(args.model, args, foreign=True)
    if kind != "cbudget":
        if args.cost:
            raise CommandError(f"{args.model} is a {kind} model, which carries no feature "
                               "costs: --cost is for cbudget models (cbudget report prices "
                               "another library's model with --costs / --default-cost)")
        try:
            model = from_any(model)
        except (ValueError, TypeError) as exc:
            raise CommandError(f"{args.model}: {exc}") from None
    text = text_columns(model.categories, model.feature_names)
    X = feature_frame(read_table(args.data, text), model.feature_names, args.data)
    columns = prediction_columns(model, X)
    if args.cost:
        columns["cost"] = model.predict_cost(X)
    write_table(columns, args.output)
    print(f"wrote {X.shape[0]} predictions ({', '.join(columns)}) to {args.output}")


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------
# the per-input cost quantiles of the report, besides the mean and the max
COST_QUANTILES = {"p10": 10, "p25": 25, "median": 50, "p75": 75, "p90": 90, "p99": 99}


def cost_summary(model: cbudget.Model, X: Any) -> dict[str, Any]:
    """What predicting ``X`` costs: the per-input cost's mean, quantiles and max; per
    feature the model uses its cost, the share of inputs that acquire it and what it
    adds to the mean cost (sorted by that, largest first); cost groups likewise; the rest
    of the mean (split, tree and declared costs) as ``other_cost``; and what predicting
    on demand saves against computing every used feature (``on_demand``)."""
    report = model.cost_report(X)
    costs = model.cost_model
    cost = report.per_input_cost
    share = report.acquisition_rate
    acquired = model.acquisitions(X)
    # (name, cost, share of inputs that acquire it, what it adds to the mean cost)
    feature_rows = [(model.feature_names[m], float(costs.feature_costs[m]), float(share[m]),
                     float(costs.feature_costs[m] * share[m])) for m in model.used_features()]
    group_rows = []
    for g, name in enumerate(costs.group_names):
        touched = float(acquired[:, costs.feature_group == g].any(axis=1).mean())
        group_rows.append((name, float(costs.group_costs[g]), touched,
                           float(costs.group_costs[g] * touched)))
    # largest contribution first; sorting is stable: ties keep the model's order
    features, groups = ([{"name": name, "cost": cost, "acquired_share": acquired_share,
                          "mean_cost": mean_cost}
                         for name, cost, acquired_share, mean_cost
                         in sorted(rows, key=lambda row: -row[3])]
                        for rows in (feature_rows, group_rows))
    other = report.mean_cost - sum(row[3] for row in feature_rows + group_rows)
    return {
        "model_type": model.model_type, "algorithm": model.algorithm,
        "n_inputs": int(X.shape[0]),
        "cost_per_input": {"mean": report.mean_cost,
                           **{name: float(np.percentile(cost, q))
                              for name, q in COST_QUANTILES.items()},
                           "max": float(cost.max())},
        "coupled_cost": report.coupled_cost,
        "features_used": list(report.features_used),
        "n_features": model.num_features(),
        "features": features,
        "groups": groups,
        # rounding aside, 0 without split / tree / declared costs
        "other_cost": other if abs(other) > 1e-9 * max(1.0, report.mean_cost) else 0.0,
        "on_demand": on_demand_savings(model, cost, acquired),
        **({"cost_stages": report.cost_stages} if report.cost_stages else {}),
    }


def percent(share: float) -> str:
    """A share as a percentage with one decimal; a share that rounds to zero is "0.0%",
    whatever its sign."""
    return f"{round(100 * share, 1) + 0.0:.1f}%"     # + 0.0 turns -0.0 into 0.0


def print_cost_summary(summary: dict[str, Any], model_path: str, data_path: str) -> None:
    """The text form of :func:`cost_summary`."""
    per_input = summary["cost_per_input"]
    print(f"{model_path}: {summary['model_type']} ({summary['algorithm']}) on "
          f"{summary['n_inputs']} inputs of {data_path}")
    print("cost per input: " + "  ".join(f"{k} {v:.6g}" for k, v in per_input.items()))
    if "cost_per_query" in summary:
        print(f"mean cost per query: {summary['cost_per_query']['mean']:.6g} "
              f"({summary['n_queries']} queries)")
    if summary["coupled_cost"]:
        print(f"coupled (once per model) cost: {summary['coupled_cost']:.6g}")
    print(f"features used: {len(summary['features_used'])} of {summary['n_features']}")
    for title, rows in (("feature", summary["features"]), ("cost group", summary["groups"])):
        if not rows:
            continue
        width = max(len(title), *(len(r["name"]) for r in rows))
        print(f"  {title:<{width}} {'cost':>10} {'acquired by':>12} {'mean cost':>10}")
        for r in rows:
            print(f"  {r['name']:<{width}} {r['cost']:>10.6g} "
                  f"{100 * r['acquired_share']:>11.2f}% {r['mean_cost']:>10.6g}")
    if summary["other_cost"]:
        print(f"split, tree and declared costs: {summary['other_cost']:.6g} per input")
    if "cost_stages" in summary:
        print("cost stages:")
        for stage in summary["cost_stages"]:
            print(f"  {stage_line(stage)}")
    saving = summary["on_demand"]
    print(f"computing every used feature would cost {saving['eager_cost']:.6g} per input; "
          f"on demand {saving['on_demand_cost']:.6g} ({percent(saving['saved_share'])} "
          "saved)")


def report_model(args: argparse.Namespace, frame: Any) -> cbudget.Model:
    """The model ``cbudget report`` audits: a cbudget model file (which carries its
    costs), or another library's model file priced with ``--costs`` /
    ``--default-cost`` as ``cbudget train`` prices features. The other library's
    feature names are used when the data file has those columns; otherwise the data's
    columns (the query column aside), in order, stand for the model's features."""
    kind, source = read_model_file(args.model, args, foreign=True)
    if kind == "cbudget":
        if args.costs is not None or args.default_cost is not None:
            raise CommandError(f"{args.model} is a cbudget model, which carries its costs: "
                               "--costs and --default-cost are for LightGBM, XGBoost and "
                               "scikit-learn models")
        return source
    try:
        names = from_any(source).feature_names
        if not all(name in frame.columns for name in names):
            columns = [str(c) for c in frame.columns if c != args.query]
            if len(columns) != len(names):
                raise CommandError(
                    f"{args.data} has {len(columns)} feature columns, not the model's "
                    f"{len(names)} features ({', '.join(names[:5])}"
                    f"{', ...' if len(names) > 5 else ''})")
            names = columns
        return from_any(source, feature_names=names, **feature_costs(args, list(names)))
    except (ValueError, TypeError) as exc:
        raise CommandError(f"{args.model}: {exc}") from None


def report_command(args: argparse.Namespace) -> None:
    """``cbudget report``: the cost and acquisition summary of a model on a file."""
    frame = read_table(args.data)
    model = report_model(args, frame)
    text = text_columns(model.categories, model.feature_names)
    if any(frame[name].dtype.kind != "O" for name in text if name in frame.columns):
        frame = read_table(args.data, text)     # (the model named them: read them as text)
    X = feature_frame(frame, model.feature_names, args.data)
    summary = cost_summary(model, X)
    ids = query_column(frame, args.query, args.data)
    if ids is not None:
        boundaries = query_boundaries(None, ids, X.shape[0])     # ids given: not None
        n_queries = 0 if boundaries is None else boundaries.shape[0] - 1
        summary["n_queries"] = n_queries
        summary["cost_per_query"] = {"mean": summary["cost_per_input"]["mean"]
                                     * X.shape[0] / n_queries}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_cost_summary(summary, args.model, args.data)


# --------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------
# the demo's split of the 20,000 Letters rows and the boosted trees CSTC's nodes weigh;
# --quick: the same steps on less data and fewer basis trees (a smoke test of the CLI)
DEMO_ROUNDS = 200


class DemoSetup(TypedDict):
    split: tuple[int, int, int]
    basis_trees: int


FULL: DemoSetup = {"split": (12000, 4000, 4000), "basis_trees": 100}
QUICK: DemoSetup = {"split": (2000, 1000, 1000), "basis_trees": 10}


def demo(rounds: int, quick: bool = False) -> None:
    """Train plain boosting, CEGB, Greedy Miser and BudgetRF on the shipped UCI Letters
    data (12,000 / 4,000 / 4,000 split, every feature costs 1) and report accuracy and
    prediction cost per input (a forest's "rounds" are its trees); then CSTC trees
    (linear nodes, and nodes on 100 boosted trees), a CSCC cascade and ADAPT-GBRT (a gate
    and a cheap predictor in front of plain boosting) on the binary task A-M against
    N-Z. ``quick``: a 2,000 / 1,000 / 1,000 split and 10 boosted trees for CSTC's
    nodes."""
    setup = QUICK if quick else FULL
    X, y, names = load_letters()
    train_idx, valid_idx, test_idx = train_valid_test_split(len(y), setup["split"])
    costs = np.ones(X.shape[1])
    dtrain = cbudget.Dataset(X[train_idx], y[train_idx], feature_names=names,
                             feature_costs=costs)
    dvalid = cbudget.Dataset(X[valid_idx], y[valid_idx], reference=dtrain)
    print(f"UCI Letters: {len(train_idx)} train / {len(valid_idx)} valid / "
          f"{len(test_idx)} test, {X.shape[1]} features, 26 classes, each feature costs 1")
    rows = []
    # Greedy Miser's depth-4 trees need more rounds than best-first trees, and larger
    # steps: at learning rate 0.3 its 2x rounds reach a higher accuracy at the same cost
    # than 5x rounds at 0.1 (0.907 against 0.900 on the full split), in a third of the time.
    for algorithm, extra, n_rounds in [
            ("gbdt", {}, rounds),
            ("cegb", {"cost_tradeoff": 0.1}, rounds),
            ("greedy_miser", {"cost_tradeoff": 10.0, "learning_rate": 0.3}, 2 * rounds)]:
        params = {"learning_rate": 0.1, **extra, "algorithm": algorithm,
                  "objective": "multi:softprob", "num_class": 26, "eval_metric": "merror"}
        print(f"\n{algorithm} {params.get('cost_tradeoff', '')}".rstrip())
        start = time.perf_counter()
        booster = cbudget.train(params, dtrain, n_rounds, evals=[(dvalid, "valid")],
                                early_stopping_rounds=max(20, n_rounds // 10),
                                verbose_eval=n_rounds // 8 or 1)
        seconds = time.perf_counter() - start
        # boosting algorithms; early stopping on a finite metric sets best_iteration
        assert isinstance(booster, cbudget.Booster) and booster.best_iteration is not None
        best = booster[: booster.best_iteration + 1]
        accuracy = float(np.mean(best.predict(X[test_idx]).argmax(axis=1) == y[test_idx]))
        report = best.cost_report(X[test_idx])
        rows.append((algorithm, best.num_boosted_rounds(), accuracy, report.mean_cost,
                     len(report.features_used), seconds))
    # BudgetRF: trees are added until the mean validation cost would exceed the budget
    budget = 14.0
    print(f"\nbudget_rf (budget {budget:g} per input)")
    start = time.perf_counter()
    forest = cbudget.train({"algorithm": "budget_rf", "num_class": 26, "budget": budget},
                           dtrain, 40, evals=[(dvalid, "valid")], verbose_eval=5)
    seconds = time.perf_counter() - start
    assert isinstance(forest, cbudget.Forest)
    report = forest.cost_report(X[test_idx])
    rows.append(("budget_rf", forest.num_trees(),
                 float(np.mean(forest.predict(X[test_idx]) == y[test_idx])),
                 report.mean_cost, len(report.features_used), seconds))
    _print_table(rows, "rounds", X.shape[1])

    # trees / cascades of linear classifiers are binary: letters A-M against N-Z
    print("\nBinary task: letters A-M (0) against N-Z (1)")
    binary = (y >= 13).astype(np.float64)
    dtrain_b = cbudget.Dataset(X[train_idx], binary[train_idx], feature_names=names,
                               feature_costs=costs)
    dvalid_b = cbudget.Dataset(X[valid_idx], binary[valid_idx], reference=dtrain_b)
    rows = []
    # linear nodes, then the boosting trick (nodes weigh 100 boosted depth-3 trees; 10 quick)
    n_basis = setup["basis_trees"]
    for algorithm, basis_trees in (("cstc", 0), ("cstc", n_basis), ("cscc", n_basis)):
        name = f"{algorithm}{'+trees' if basis_trees else ''}"
        print(f"\n{name}")
        start = time.perf_counter()
        model = cbudget.train({"algorithm": algorithm, "objective": "binary:logistic",
                               "cost_tradeoff": 0.01, "eval_metric": "error",
                               "basis_trees": basis_trees, "basis_max_depth": 3},
                              dtrain_b, 20, evals=[(dvalid_b, "valid")],
                              early_stopping_rounds=3, verbose_eval=5)
        assert isinstance(model, cbudget.ClassifierTree)  # a Cascade for cscc
        rows.append(_binary_row(name, model, model.num_nodes(), X[test_idx],
                                binary[test_idx], time.perf_counter() - start))
    _print_table(rows, "nodes", X.shape[1])

    # ADAPT-GBRT: a gate and a cheap predictor in front of plain boosting (f0)
    rows = []
    print("\ngbdt (the expensive model f0)")
    start = time.perf_counter()
    f0 = cbudget.train({"objective": "binary:logistic", "eval_metric": "error"}, dtrain_b,
                       rounds, evals=[(dvalid_b, "valid")], early_stopping_rounds=20,
                       verbose_eval=rounds // 4 or 1)
    assert isinstance(f0, cbudget.Booster) and f0.best_iteration is not None
    f0 = f0[: f0.best_iteration + 1]
    rows.append(_binary_row("f0=gbdt", f0, f0.num_boosted_rounds(), X[test_idx],
                            binary[test_idx], time.perf_counter() - start))
    print("\nadapt_gbrt (p_full 0.3: at most 30% of the inputs go to f0)")
    start = time.perf_counter()
    gated = cbudget.train({"algorithm": "adapt_gbrt", "p_full": 0.3, "cost_tradeoff": 3.0,
                           "learning_rate": 0.5, "eval_metric": "error"}, dtrain_b,
                          rounds, evals=[(dvalid_b, "valid")], early_stopping_rounds=20,
                          verbose_eval=rounds // 4 or 1, expensive_model=f0)
    assert isinstance(gated.predictor, cbudget.Booster)  # adapt_gbrt's (adapt_lin's is linear)
    rows.append(_binary_row("adapt_gbrt", gated, gated.predictor.num_boosted_rounds(),
                            X[test_idx], binary[test_idx], time.perf_counter() - start))
    _print_table(rows, "rounds", X.shape[1])
    route = gated.route(X[test_idx])
    print(f"adapt_gbrt sends {100 * np.mean(route == 0):.1f}% of the test inputs to f0")


# a row of the demo's tables: algorithm, iterations or nodes, test accuracy, cost per input,
# features used, training seconds
DemoRow = tuple[str, int, float, float, int, float]


def _binary_row(name: str, model: cbudget.Model, count: int, X: np.ndarray, y: np.ndarray,
                seconds: float) -> DemoRow:
    accuracy = float(np.mean((model.predict(X) > 0.5) == y))
    report = model.cost_report(X)
    return name, count, accuracy, report.mean_cost, len(report.features_used), seconds


def _print_table(rows: list[DemoRow], count_name: str, n_features: int) -> None:
    print()
    print(f"{'algorithm':<13} {count_name:>6} {'test accuracy':>14} {'cost/input':>11} "
          f"{'features used':>14} {'train s':>8}")
    for algorithm, count, accuracy, cost, n_used, seconds in rows:
        print(f"{algorithm:<13} {count:>6} {accuracy:>14.4f} {cost:>11.3f} "
              f"{n_used:>11} / {n_features:<2} {seconds:>6.1f}")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not (np.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def add_cost_options(parser: argparse.ArgumentParser, scope: str = "") -> None:
    """``--costs`` and ``--default-cost`` (what :func:`feature_costs` reads); ``scope``
    starts their help (the models they apply to)."""
    parser.add_argument("--costs", metavar="FILE.json",
                        help=f"{scope}feature costs: a JSON file (at most "
                             f"{MAX_JSON_OPTION_MB} MB) or JSON text "
                             "{column: cost}; without it every feature costs --default-cost")
    parser.add_argument("--default-cost", type=non_negative_float, metavar="X",
                        help=f"{scope}the cost of the features --costs does not name "
                             "(without --costs: of every feature; default 1)")


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got 0")
    return value


def add_model_file_options(parser: argparse.ArgumentParser, foreign: bool = False) -> None:
    """``--max-model-mb`` (and, for another library's models, ``--trust-pickle``): what
    :func:`read_model_file` reads."""
    parser.add_argument("--max-model-mb", type=positive_float, default=DEFAULT_MAX_MODEL_MB,
                        metavar="MB",
                        help="refuse a model file larger than this, before reading it "
                             f"(default {DEFAULT_MAX_MODEL_MB}; reading a JSON model takes "
                             "several times its size in memory)")
    if foreign:
        parser.add_argument("--trust-pickle", action="store_true",
                            help="read a pickled / joblib-dumped estimator. UNPICKLING RUNS "
                                 "CODE FROM THE FILE, as you: only for a file you made or "
                                 "trust. Without it a pickle is refused, recognised by its "
                                 "content whatever its name")


def build_parser() -> argparse.ArgumentParser:
    """The ``cbudget`` argument parser and its subcommands."""
    parser = argparse.ArgumentParser(prog="cbudget",
                                     description=cbudget.__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"cbudget {cbudget.__version__}")
    sub = parser.add_subparsers(dest="command")
    data_help = "CSV file with a header row, or Parquet (.parquet, .pq; needs pyarrow)"

    train_parser = sub.add_parser(
        "train", help="train a model on a CSV / Parquet file and save it",
        description="Train a model on DATA (every column but the label is a feature, named "
                    "by the header) with cbudget.train and save it as JSON; print the "
                    "iterations, the validation metric and the mean cost per input.")
    train_parser.add_argument("data", metavar="DATA", help=data_help)
    train_parser.add_argument("--label", required=True, metavar="COL",
                              help="the label column: numbers (classes numbered 0..K-1), or "
                                   "text classes (binary:logistic or multi:softprob by "
                                   "default; cbudget predict names them)")
    train_parser.add_argument("--categorical", default="auto", metavar="COLS",
                              help="the categorical feature columns: 'auto' (default: the "
                                   "columns of strings; Parquet dictionary columns too), "
                                   "'none', or comma-separated names (a numeric one holds "
                                   "integer codes 0, 1, 2, ...). Their levels are saved in "
                                   "the model, which maps those of later files by name")
    train_parser.add_argument("-o", "--output", required=True, metavar="MODEL.json",
                              help="where to save the model")
    train_parser.add_argument("--query", metavar="COL",
                              help="learning to rank: the query id column (not a feature; "
                                   "each query's rows together), e.g. with --param "
                                   "objective=rank:ndcg")
    train_parser.add_argument("--valid", metavar="FILE",
                              help="validation file with the same columns (evaluation, "
                                   "early stopping, the cost in the summary)")
    train_parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                              help="a training parameter, repeatable; the value is read as "
                                   "JSON when it is JSON (num_leaves=15, cost_tradeoff=0.01,"
                                   " algorithm=cegb, objective=binary:logistic)")
    train_parser.add_argument("--params-json", metavar="JSON",
                              help="parameters as a JSON object, or the path of a JSON file "
                                   f"holding one (at most {MAX_JSON_OPTION_MB} MB; --param "
                                   "items override it)")
    add_cost_options(train_parser)
    train_parser.add_argument("--rounds", type=positive_int, default=100, metavar="N",
                              help="iterations: boosting rounds, forest trees, CSTC sweeps "
                                   "(default 100)")
    train_parser.add_argument("--early-stopping", type=positive_int, metavar="N",
                              help="stop when the validation metric has not improved for N "
                                   "iterations; the model predicts with those up to the "
                                   "best")
    train_parser.add_argument("--expensive-model", metavar="MODEL.json",
                              help="adapt_gbrt / adapt_lin: the saved expensive model the "
                                   "gate sends hard inputs to")
    add_model_file_options(train_parser)
    train_parser.add_argument("--quiet", action="store_true",
                              help="no per-iteration log (the summary is still printed)")

    predict_parser = sub.add_parser(
        "predict", help="write a saved model's predictions on a file",
        description="Predict DATA's rows with a saved model: a cbudget model file, or a "
                    "LightGBM text / XGBoost JSON or UBJSON model (as cbudget report reads "
                    "them). DATA's columns are matched to "
                    "the model's features by name (others, such as the label, are ignored). "
                    "Columns written: 'prediction' (regression value, probability of class "
                    "1, or a forest's class) or 'proba_0' .. 'proba_{K-1}' (multi-class "
                    "probabilities), and 'cost' with --cost.")
    predict_parser.add_argument("model", metavar="MODEL.json")
    predict_parser.add_argument("data", metavar="DATA", help=data_help)
    predict_parser.add_argument("-o", "--output", required=True, metavar="OUT.csv",
                                help="CSV, or Parquet by its ending (.parquet, .pq)")
    predict_parser.add_argument("--cost", action="store_true",
                                help="add each input's prediction cost (cbudget models)")
    add_model_file_options(predict_parser, foreign=True)

    report_parser = sub.add_parser(
        "report", help="what a saved model's predictions on a file cost",
        description="Per-input cost of predicting DATA with a saved model (mean, "
                    "quantiles, max), the features it uses and, per feature, its cost, the "
                    "share of inputs that acquire it and what it adds to the mean cost, "
                    "largest first; and what predicting on demand saves against computing "
                    "every feature the model uses. MODEL is a cbudget model, or a LightGBM "
                    "text model, an XGBoost JSON / UBJSON model or (with --trust-pickle "
                    "only: unpickling runs code from the file) a pickled / joblib-dumped "
                    "LightGBM, XGBoost or scikit-learn estimator, priced with --costs. "
                    f"Model files over {DEFAULT_MAX_MODEL_MB} MB (--max-model-mb) and JSON "
                    f"option files over {MAX_JSON_OPTION_MB} MB are refused.")
    report_parser.add_argument("model", metavar="MODEL")
    add_model_file_options(report_parser, foreign=True)
    add_cost_options(report_parser, "another library's model: ")
    report_parser.add_argument("data", metavar="DATA", help=data_help)
    report_parser.add_argument("--json", action="store_true", help="print it as JSON")
    report_parser.add_argument("--query", metavar="COL",
                               help="learning to rank: the query id column; the summary "
                                    "adds the mean cost per query")

    demo_parser = sub.add_parser("demo", help="train on the shipped Letters data and report "
                                              "accuracy and prediction cost")
    demo_parser.add_argument("--rounds", type=positive_int, default=DEMO_ROUNDS,
                             help=f"boosting rounds, >= 1 (Greedy Miser: 2x; default "
                                  f"{DEMO_ROUNDS})")
    demo_parser.add_argument("--quick", action="store_true",
                             help="the same steps on a 2,000 / 1,000 / 1,000 split with 10 "
                                  "boosted trees for CSTC's nodes (a quick check)")
    return parser


COMMANDS = {"train": train_command, "predict": predict_command, "report": report_command}


def main(argv: list[str] | None = None) -> int:
    """Run the ``cbudget`` command with ``argv`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, or 2 for bad input (after a one-line ``cbudget: error: ...``
        on stderr; also for running out of memory or recursion depth, never a
        traceback). Errors in the arguments themselves exit through argparse (status 2).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(args.rounds, quick=args.quick)
        return 0
    if args.command not in COMMANDS:
        parser.print_help()
        return 2
    try:
        COMMANDS[args.command](args)
    except (CommandError, ValueError, TypeError, OSError) as exc:
        # the library's own checks say what is wrong with the input; one line, no traceback
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"cbudget: error: {message}", file=sys.stderr)
        return 2
    except (MemoryError, RecursionError) as exc:
        # input too large or too deep for what the checks bound (a data file, a model
        # under --max-model-mb on a small machine): still one line
        what = ("out of memory" if isinstance(exc, MemoryError)
                else "input nested too deeply")
        print(f"cbudget: error: {what} ({type(exc).__name__}) in cbudget {args.command}",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
