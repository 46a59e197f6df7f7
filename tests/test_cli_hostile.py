"""The ``cbudget`` command on hostile input (issue 42, items 1 and 11): a pickle is never
unpickled without ``--trust-pickle``, whatever the file is named and whichever command
reads it; JSON nested far too deep and files larger than the limits are refused before
they are read, with exit status 2 and one line, never a traceback."""
import json
import pickle

import numpy as np
import pytest

import cbudget
from cbudget.__main__ import DEFAULT_MAX_MODEL_MB, MAX_JSON_OPTION_MB, main
from cbudget.interop.audit import foreign_model_kind, load_foreign_model

pd = pytest.importorskip("pandas")
joblib = pytest.importorskip("joblib")


class CreatesMarker:
    """Unpickling it creates the file ``path`` (what a hostile pickle could do)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def run(argv):
    """``main(argv)``'s exit status, also when argparse exits."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def error_line(capsys):
    """The single line a failed command wrote to stderr."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("cbudget: error: "), err
    return err


@pytest.fixture
def data(tmp_path):
    """data.csv (columns a, b, y) and a small cbudget model of it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": (X[:, 0] > 0).astype(int)})
    frame.to_csv(tmp_path / "data.csv", index=False)
    cbudget.train({"objective": "binary:logistic", "num_leaves": 3}, cbudget.Dataset(
        X, frame["y"].to_numpy(), feature_names=["a", "b"]), 2).save_model(
        tmp_path / "model.json")
    return tmp_path


def write_pickle(path, payload, how):
    """``payload`` pickled into ``path``: a plain pickle of protocol 0 or 5, or joblib
    zlib-compressed."""
    if how == "joblib-zlib":
        joblib.dump(payload, path, compress=("zlib", 3))
    else:
        with open(path, "wb") as f:
            pickle.dump(payload, f, protocol=int(how[-1]))


NAMES = ["evil_model.json", "evil_model.txt", "evil_model.pkl", "evil_model.joblib"]
FORMATS = ["protocol-0", "protocol-5", "joblib-zlib"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("how", FORMATS)
def test_report_never_unpickles_without_trust_pickle(data, capsys, name, how):
    """A pickle reached joblib.load (and ran) whatever its name; now it is recognised by
    its content and refused, naming the flag."""
    marker = data / "marker"
    write_pickle(data / name, CreatesMarker(marker), how)
    assert foreign_model_kind(data / name) == "pickle"
    capsys.readouterr()
    assert run(["report", str(data / name), str(data / "data.csv"),
                "--default-cost", "1"]) == 2
    assert not marker.exists()
    message = error_line(capsys)
    assert "is a pickle" in message and "--trust-pickle" in message


@pytest.mark.parametrize("command", ["predict", "train"])
def test_the_other_commands_never_unpickle(data, capsys, command):
    """predict and train --expensive-model read models through the same function."""
    marker = data / "marker"
    write_pickle(data / "evil.json", CreatesMarker(marker), "protocol-5")
    argv = (["predict", str(data / "evil.json"), str(data / "data.csv"),
             "-o", str(data / "out.csv")] if command == "predict" else
            ["train", str(data / "data.csv"), "--label", "y", "-o", str(data / "m.json"),
             "--param", "algorithm=adapt_gbrt", "--expensive-model", str(data / "evil.json")])
    capsys.readouterr()
    assert run(argv) == 2
    assert not marker.exists()
    assert "is a pickle" in error_line(capsys)


def test_trust_pickle_reads_a_pickled_estimator(data, capsys):
    tree = pytest.importorskip("sklearn.tree")
    frame = pd.read_csv(data / "data.csv")
    estimator = tree.DecisionTreeClassifier(max_depth=2, random_state=0).fit(
        frame[["a", "b"]], frame["y"])
    write_pickle(data / "tree.json", estimator, "joblib-zlib")
    argv = ["report", str(data / "tree.json"), str(data / "data.csv"), "--default-cost", "1"]
    assert run(argv) == 2
    assert run(argv + ["--trust-pickle", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["algorithm"] == "imported"


def test_the_python_api_unpickles_only_when_trusted(tmp_path):
    marker = tmp_path / "marker"
    write_pickle(tmp_path / "evil.json", CreatesMarker(marker), "protocol-5")
    with pytest.raises(ValueError, match="trust_pickle=True"):
        load_foreign_model(tmp_path / "evil.json")
    assert not marker.exists()


def test_report_help_names_the_risk_and_the_limits(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["report", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--trust-pickle" in text and "RUNS CODE FROM THE FILE" in text
    assert "--max-model-mb MB" in text and f"{MAX_JSON_OPTION_MB} MB" in text


def deep_json(levels):
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("option", ["--costs", "--params-json"])
@pytest.mark.parametrize("as_file", [True, False])
def test_deeply_nested_json_options_exit_2(data, capsys, option, as_file):
    """JSON nested 100,000 deep raised RecursionError (a traceback, exit status 1)."""
    text = deep_json(100_000) if as_file else deep_json(50)
    value = text
    if as_file:
        (data / "deep.json").write_text(text)
        value = str(data / "deep.json")
    capsys.readouterr()
    assert run(["train", str(data / "data.csv"), "--label", "y", "--rounds", "1",
                "-o", str(data / "m.json"), option, value]) == 2
    assert "nests more than" in error_line(capsys)


def test_deeply_nested_param_exits_2(data, capsys):
    capsys.readouterr()
    assert run(["train", str(data / "data.csv"), "--label", "y", "--rounds", "1",
                "-o", str(data / "m.json"), "--param", "x=" + deep_json(30_000)]) == 2
    assert "nests more than" in error_line(capsys)


def sparse_file(path, size, head):
    """A file of ``size`` bytes that starts with ``head`` (sparse: no disk used)."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


@pytest.mark.parametrize("command", ["report", "predict"])
def test_a_model_file_over_the_limit_is_refused_before_reading(data, capsys, command):
    """A 530 MB model took 3 GB and 31 s before report refused it."""
    big = data / "big.json"
    sparse_file(big, (DEFAULT_MAX_MODEL_MB + 1) << 20, b'{"learner": "')
    argv = [command, str(big), str(data / "data.csv")]
    argv += ["-o", str(data / "out.csv")] if command == "predict" else []
    capsys.readouterr()
    assert run(argv) == 2
    assert f"larger than the limit of {DEFAULT_MAX_MODEL_MB} MB" in error_line(capsys)
    # the limit is an option: a small model over a tiny limit, then under the default
    model = [command, str(data / "model.json"), *argv[2:]]
    assert run(model + ["--max-model-mb", "0.001"]) == 2
    assert "--max-model-mb raises the limit" in error_line(capsys)
    assert run(model) == 0


def test_a_json_option_file_over_the_limit_is_refused(data, capsys):
    sparse_file(data / "costs.json", (MAX_JSON_OPTION_MB + 1) << 20, b'{"a": 1')
    capsys.readouterr()
    assert run(["train", str(data / "data.csv"), "--label", "y", "-o", str(data / "m.json"),
                "--costs", str(data / "costs.json")]) == 2
    assert f"larger than the limit of {MAX_JSON_OPTION_MB} MB" in error_line(capsys)


@pytest.mark.parametrize("error", [MemoryError, RecursionError])
def test_memory_and_recursion_errors_are_one_line(data, capsys, monkeypatch, error):
    """A model under the limit can still exhaust a small machine's memory (a MemoryError
    traceback under a 4 GB limit): one line, exit status 2."""
    def fail(*args, **kwargs):
        raise error()

    monkeypatch.setattr(cbudget, "load_model", fail)
    capsys.readouterr()
    assert run(["report", str(data / "model.json"), str(data / "data.csv")]) == 2
    assert type(error()).__name__ in error_line(capsys)
