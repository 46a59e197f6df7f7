"""Saving model files (issue 42, item 2): a save replaces a regular file (or creates one)
whole or not at all, refuses anything else at the path (device, FIFO, folder, symbolic
link), never follows a link at a temporary name, keeps the old file's permissions, leaves
no temporary file behind on failure, and concurrent saves to one path all succeed.
Both writers are checked: cbudget's JSON and the XGBoost export."""
import json
import multiprocessing
import os
import signal
import stat
import threading

import numpy as np
import pytest

import cbudget
from cbudget.__main__ import main
from cbudget.model_io import model_from_dict

FORMATS = ["cbudget", "xgboost", "lightgbm", "onnx"]


@pytest.fixture(scope="module")
def booster():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(float)
    return cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 3},
                         cbudget.Dataset(X, y), 4)


def listing(folder):
    return sorted(os.listdir(folder))


def make_device(path):
    """A character device like /dev/null (1, 3) at ``path`` (needs root), else skip."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError):
        pytest.skip("cannot create a device node here (not root)")


def refused(booster, path, fmt, kind):
    """Saving to ``path`` raises FileExistsError naming ``kind``."""
    with pytest.raises(FileExistsError, match=kind):
        booster.save_model(path, format=fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_device_is_refused(booster, tmp_path, fmt):
    path = tmp_path / "null"
    make_device(path)
    refused(booster, path, fmt, "character device")
    assert stat.S_ISCHR(os.lstat(path).st_mode)
    assert listing(tmp_path) == ["null"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fifo_is_refused(booster, tmp_path, fmt):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    refused(booster, path, fmt, "FIFO")
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert listing(tmp_path) == ["pipe.json"]


def test_folder_is_refused(booster, tmp_path):
    (tmp_path / "m.json").mkdir()
    refused(booster, tmp_path / "m.json", "cbudget", "folder")
    assert listing(tmp_path) == ["m.json"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target_exists", [True, False])
def test_symlink_at_path_is_refused(booster, tmp_path, fmt, target_exists):
    target = tmp_path / "elsewhere.txt"
    if target_exists:
        target.write_text("precious\n")
    link = tmp_path / "m.json"
    os.symlink(target, link)
    refused(booster, link, fmt, "symbolic link")
    assert os.path.islink(link) and os.readlink(link) == str(target)
    if target_exists:
        assert target.read_text() == "precious\n"
    else:
        assert not target.exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_symlink_at_old_temporary_name_is_not_followed(booster, tmp_path, fmt):
    target = tmp_path / "victim.txt"
    target.write_text("precious\n")
    path = tmp_path / "m.json"
    os.symlink(target, f"{path}.tmp")
    booster.save_model(path, format=fmt)
    assert target.read_text() == "precious\n"
    assert os.path.islink(f"{path}.tmp")
    assert stat.S_ISREG(os.lstat(path).st_mode)
    if fmt == "cbudget":
        assert cbudget.load_model(path).to_dict() == booster.to_dict()


def test_symlink_at_any_temporary_name_is_not_followed(booster, tmp_path, monkeypatch):
    # the first temporary name drawn is taken by a planted link: another one is drawn
    names = iter(["planted", "free"])
    monkeypatch.setattr("secrets.token_hex", lambda n: next(names))
    target = tmp_path / "victim.txt"
    target.write_text("precious\n")
    path = tmp_path / "m.json"
    os.symlink(target, tmp_path / ".m.json.planted.tmp")
    booster.save_model(path)
    assert target.read_text() == "precious\n"
    assert listing(tmp_path) == [".m.json.planted.tmp", "m.json", "victim.txt"]
    assert cbudget.load_model(path).to_dict() == booster.to_dict()


def test_existing_permissions_kept_new_file_as_open_makes_it(booster, tmp_path):
    path = tmp_path / "m.json"
    path.write_text("old")
    os.chmod(path, 0o640)
    booster.save_model(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    # a new file: the mode open() gives (0o666 less the umask), not a private 0o600
    reference = tmp_path / "reference"
    reference.write_text("")
    booster.save_model(tmp_path / "new.json")
    assert os.stat(tmp_path / "new.json").st_mode == os.stat(reference).st_mode


def save_under_size_limit(booster, path, fmt):
    """In a child process (the limit is per process): save under a 100-byte file-size
    limit, which makes the write itself fail part-way, as a full disk would; the error's
    name, or None."""
    resource = pytest.importorskip("resource")
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    try:
        booster.save_model(path, format=fmt)
    except OSError as exc:
        return type(exc).__name__
    return None


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ")
                    or "fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs RLIMIT_FSIZE and fork")
@pytest.mark.parametrize("fmt", FORMATS)
def test_failed_write_leaves_old_file_and_no_temporary(booster, tmp_path, fmt):
    pytest.importorskip("resource")
    path = tmp_path / "m.json"
    path.write_text("old model")
    with multiprocessing.get_context("fork").Pool(1) as pool:
        error = pool.apply(save_under_size_limit, (booster, str(path), fmt))
    assert error is not None
    assert path.read_text() == "old model"
    assert listing(tmp_path) == ["m.json"]


def test_missing_folder_names_the_path(booster, tmp_path):
    path = tmp_path / "no" / "m.json"
    with pytest.raises(FileNotFoundError, match="cannot save .*m.json"):
        booster.save_model(path)
    assert listing(tmp_path) == []


def save_to(args):
    """A worker's save (for the processes test): the error's name, or None."""
    model_text, path = args
    try:
        model_from_dict(json.loads(model_text)).save_model(path)
    except Exception as exc:   # reported to the test, which expects none
        return type(exc).__name__
    return None


def test_concurrent_saves_in_threads(booster, tmp_path):
    path = tmp_path / "m.json"
    errors = []

    def save():
        try:
            booster.save_model(path)
        except Exception as exc:   # reported to the test, which expects none
            errors.append(exc)

    threads = [threading.Thread(target=save) for _ in range(160)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert listing(tmp_path) == ["m.json"]
    assert cbudget.load_model(path).to_dict() == booster.to_dict()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs fork")
def test_concurrent_saves_in_processes(booster, tmp_path):
    path = str(tmp_path / "m.json")
    text = json.dumps(booster.to_dict())
    with multiprocessing.get_context("fork").Pool(4) as pool:
        errors = pool.map(save_to, [(text, path)] * 160, chunksize=1)
    assert errors == [None] * 160
    assert listing(tmp_path) == ["m.json"]
    assert cbudget.load_model(path).to_dict() == booster.to_dict()


def test_cli_train_refuses_with_one_line(tmp_path, capsys, monkeypatch):
    # refused before any training: the path is checked first
    monkeypatch.setattr(cbudget, "train", lambda *a, **k: pytest.fail("trained anyway"))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    rows = ["a,b,label"] + [f"{a},{b},{int(a > 0)}" for a, b in X]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    pytest.importorskip("pandas")
    out = tmp_path / "model.json"
    os.mkfifo(out)
    status = main(["train", str(tmp_path / "train.csv"), "--label", "label", "--rounds", "2",
                   "--param", "objective=binary:logistic", "--param", "n_jobs=1",
                   "--quiet", "-o", str(out)])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert err.startswith("cbudget: error: ") and "FIFO" in err
    assert stat.S_ISFIFO(os.lstat(out).st_mode)
