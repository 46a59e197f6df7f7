"""cbudget.dask.collective: the sums among the workers of a Dask training, run here by
threads of one process (each a PeerGroup over real sockets), against numpy's sums."""
import socket
import threading

import numpy as np
import pytest

pytest.importorskip("distributed")

import cbudget  # noqa: E402
from cbudget.dask.collective import PeerError, PeerGroup, partners, peer_token  # noqa: E402
from cbudget.dask.training import PeerExchange, sum_message  # noqa: E402


def run_group(size, work, timeout=10.0):
    """Each rank's ``work(group)`` in its own thread, the groups connected; returns
    (results by rank, errors by rank)."""
    token = peer_token()
    groups = [PeerGroup(rank, size, token, timeout=timeout) for rank in range(size)]
    addresses = [group.address for group in groups]
    results, errors = [None] * size, [None] * size

    def run(rank):
        try:
            groups[rank].connect(addresses, [f"w{r}" for r in range(size)])
            results[rank] = work(groups[rank])
        except Exception as error:   # noqa: BLE001 - reported to the test
            errors[rank] = error
            groups[rank].close()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for group in groups:
        group.close()
    return results, errors


def add(a, b):
    return a + b


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 6, 8])
def test_every_rank_gets_the_same_sum_bit_for_bit(size):
    arrays = [np.random.default_rng(r).normal(size=50_000) * 10.0 ** r for r in range(size)]
    results, errors = run_group(size, lambda g: [g.allreduce(arrays[g.rank] * k, add)
                                                 for k in (1, 3)])
    assert errors == [None] * size
    for k, scale in enumerate((1, 3)):
        first = results[0][k]
        np.testing.assert_allclose(first, sum(a * scale for a in arrays), rtol=1e-12, atol=1e-6)
        for rank in range(1, size):
            assert first.tobytes() == results[rank][k].tobytes()
    # the order is fixed by the ranks: a second run sums alike
    again, _ = run_group(size, lambda g: [g.allreduce(arrays[g.rank] * k, add)
                                          for k in (1, 3)])
    assert again[0][1].tobytes() == results[0][1].tobytes()


def test_two_ranks_sum_lower_rank_first_as_the_driver_did():
    a, b = np.array([0.1, 1e16, -3.0]), np.array([0.2, 1.0, 3.0])
    results, _ = run_group(2, lambda g: g.allreduce((a, b)[g.rank], add))
    assert results[0].tobytes() == (a + b).tobytes() == results[1].tobytes()


def test_large_arrays_both_ways_at_once_do_not_deadlock():
    """Both ranks send 24 MB at once: more than any socket buffer holds."""
    arrays = [np.full(3_000_000, float(r + 1)) for r in range(2)]
    results, errors = run_group(2, lambda g: g.allreduce(arrays[g.rank], add))
    assert errors == [None, None]
    assert np.all(results[0] == 3.0) and np.all(results[1] == 3.0)


def test_partners_pair_every_rank_symmetrically():
    for size in range(1, 20):
        for rank in range(size):
            for other in partners(rank, size):
                assert rank in partners(other, size)


def test_a_lost_peer_is_an_error_naming_it_at_once():
    def work(group):
        if group.rank == 1:
            group.close()              # as a dying worker's sockets close
            return None
        return group.allreduce(np.zeros(10), add)

    _, errors = run_group(2, work, timeout=30.0)
    assert isinstance(errors[0], PeerError)
    assert "w1" in str(errors[0]) and "closed" in str(errors[0])


def test_a_silent_peer_is_an_error_after_the_timeout():
    release = threading.Event()

    def work(group):
        if group.rank == 1:
            release.wait(5)
            return None
        try:
            return group.allreduce(np.zeros(10), add)
        finally:
            release.set()

    _, errors = run_group(2, work, timeout=0.3)
    assert isinstance(errors[0], PeerError) and "did not answer" in str(errors[0])


def test_a_peer_out_of_step_is_an_error_not_a_wrong_sum():
    _, errors = run_group(2, lambda g: g.allreduce(np.zeros(10 + g.rank), add))
    assert any(isinstance(e, PeerError) and "out of step" in str(e) for e in errors)


def test_a_stranger_without_the_token_is_turned_away(monkeypatch):
    """One stranger greets with a wrong token, one says nothing: both are closed (the
    silent one after GREETING_SECONDS, not the training's timeout)."""
    from cbudget.dask import collective
    monkeypatch.setattr(collective, "GREETING_SECONDS", 0.3)
    token = peer_token()
    groups = [PeerGroup(rank, 2, token, timeout=30) for rank in range(2)]
    addresses = [group.address for group in groups]
    silent = socket.create_connection(addresses[0])
    stranger = socket.create_connection(addresses[0])
    stranger.sendall(b"x" * 24)                 # a greeting with the wrong token
    results = [None, None]

    def run(rank):
        groups[rank].connect(addresses, ["w0", "w1"])
        results[rank] = groups[rank].allreduce(np.ones(4) * (rank + 1), add)

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert stranger.recv(1) == b"" and silent.recv(1) == b""     # closed by rank 0
    assert np.all(results[0] == 3.0) and np.all(results[1] == 3.0)
    for group in groups:
        group.close()
    stranger.close()
    silent.close()


def test_histogram_blocks_travel_without_the_unused_bins():
    """Features of 2, 5 and 200 values: a block packs to their bins and missing bins,
    the packed sum unpacks to the whole blocks' sum."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, 500), rng.integers(0, 5, 500),
                         rng.normal(size=500)]).astype(float)
    X[::7, 1] = np.nan
    reference = cbudget.Dataset(X, rng.normal(size=500)).without_rows()
    exchange = PeerExchange(None, None, reference)
    n_bins = reference.missing_bin + 1
    assert exchange.sent_entries is not None
    assert exchange.sent_entries.size == int(reference.n_value_bins.sum()) + 3
    from cbudget._core._types import HISTOGRAM_DTYPE
    size = 3 * n_bins * HISTOGRAM_DTYPE.itemsize + 2 * 3 * 4

    def block(seed):
        out = np.zeros(size, dtype=np.uint8)
        hist = out[:3 * n_bins * HISTOGRAM_DTYPE.itemsize].view(HISTOGRAM_DTYPE)
        values = np.random.default_rng(seed).normal(size=exchange.sent_entries.size)
        hist["sum_gradients"][exchange.sent_entries] = values
        hist["count"][exchange.sent_entries] = np.arange(values.size)
        out[-24:].view(np.uint32)[:] = seed + np.arange(6)
        return out

    a, b = block(1), block(2)
    packed_a, packed_b = exchange.pack(a), exchange.pack(b)
    assert packed_a.nbytes < a.nbytes / 2
    np.testing.assert_array_equal(exchange.unpack(packed_a), a)
    entries = exchange.sent_entries.size
    total = exchange.unpack(sum_message(packed_a, packed_b, 0, 0, entries))
    whole = sum_message(a, b, 0, 0, 3 * n_bins)
    np.testing.assert_array_equal(total, whole)


def test_a_shard_bins_its_partitions_block_by_block_as_a_dataset_does(monkeypatch):
    """Partitions of 50 and 31 rows binned 7 rows at a time: the bins of a Dataset of
    all the rows, and no float copy kept."""
    from cbudget.algorithms.boosting import initial_base_score
    from cbudget.dask import training
    from cbudget.training import set_up_training

    monkeypatch.setattr(training, "BINNING_BLOCK", 7)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(81, 4))
    X[::5, 2] = np.nan
    y = X[:, 0] + rng.normal(size=81)
    dtrain = cbudget.Dataset(X, y)
    params = {"objective": "reg:squarederror", "verbosity": 0}
    _, p, _, setup = set_up_training(params, dtrain, 1, None, False, None, None)
    shard = training.WorkerShard(
        p, dtrain.without_rows(), initial_base_score(p, setup.objective, y, None), 81,
        [(0, 50), (50, 81)], 0, 1, peer_token(), 10.0, (X[:50], y[:50], None),
        (X[50:], y[50:], None))
    np.testing.assert_array_equal(shard.data.binned, dtrain.binned)
    assert shard.data.binned.flags.f_contiguous and shard.data.data.shape[0] == 0
    np.testing.assert_array_equal(shard.data.label, y)
    shard.close()                  # as the driver asks when training ends
    assert not hasattr(shard, "data") and not hasattr(shard, "grad")
    assert shard.peers.sockets == {}
