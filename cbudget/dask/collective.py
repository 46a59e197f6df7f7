"""Sums among the workers of a Dask training: every worker ends with the same sum of all
the workers' arrays, without the driver (docs/architecture.md, "Dask").

The workers of one training form a :class:`PeerGroup`: ranks 0..W-1 (the workers sorted
by address), connected by TCP sockets they open on their own hosts (the ports chosen by
the system, the addresses passed through Dask, a random token checking each connection),
as lightgbm.dask's workers connect to each other. :meth:`PeerGroup.allreduce` sums by
recursive doubling: with P the largest power of two <= W, ranks P..W-1 first fold their
array into rank ``r - P``; then, for each bit of the rank, a worker swaps its partial sum
with the worker whose rank differs in that bit and adds the two, lower rank's first;
ranks P..W-1 then receive the result. That is log2(P) swaps of the whole array per sum,
each worker sending and receiving about one array per swap (the driver-centred design
had the driver receive W arrays per sum). Every worker computes each partial sum with
the same operands in the same order, so all end bit for bit equal, and the sums do not
depend on timing; with W = 1 nothing is sent.

A lost or failed peer is a :class:`PeerError` naming it, never a hang: a closed
connection is seen at once, a silent peer after ``timeout`` seconds.
"""
from __future__ import annotations

import secrets
import select
import socket
import struct
import time
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["PeerError", "PeerGroup", "peer_token", "partners"]

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]

_HELLO = struct.Struct("<16sq")          # the token, the connecting rank
_HEADER = struct.Struct("<qq")           # message number, bytes that follow
_CHUNK = 1 << 20
GREETING_SECONDS = 10.0


class PeerError(RuntimeError):
    """A peer of a Dask training is lost, silent past the timeout, or out of step."""


def peer_token() -> bytes:
    """A fresh random token for one training's connections."""
    return secrets.token_bytes(16)


def _largest_power_of_two(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def partners(rank: int, size: int) -> list[int]:
    """The ranks ``rank`` exchanges with in :meth:`PeerGroup.allreduce` (fold partner
    first, then the partner of each bit of the rank)."""
    power = _largest_power_of_two(size)
    if rank >= power:
        return [rank - power]
    fold = [rank + power] if rank + power < size else []
    return fold + [rank ^ (1 << bit) for bit in range(power.bit_length() - 1)]


class PeerGroup:
    """One worker's connections to the other workers of a training (module docstring).

    Parameters
    ----------
    rank, size : int
        This worker's rank and the number of workers.
    token : bytes
        The training's :func:`peer_token`: a connection that does not present it is
        closed.
    host : str
        The address this worker listens on (its host's, as Dask knows it).
    timeout : float
        Seconds to wait for a peer's message (or connection) before a PeerError.
    """

    def __init__(self, rank: int, size: int, token: bytes, host: str = "127.0.0.1",
                 timeout: float = 600.0) -> None:
        if not 0 <= rank < size:
            raise ValueError(f"rank {rank} is not in 0..{size - 1}")
        self.rank, self.size, self.token, self.timeout = rank, size, token, float(timeout)
        self.names: list[str] = [f"rank {r}" for r in range(size)]
        self.sockets: dict[int, socket.socket] = {}
        self.messages = 0             # sums done: numbers each message, checked on receipt
        self.bytes_sent = self.bytes_received = 0
        self.seconds = 0.0            # spent in allreduce: sending, receiving, waiting
        self.listener: socket.socket | None = None
        if size > 1 and any(p > rank for p in partners(rank, size)):
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            self.listener = socket.socket(family, socket.SOCK_STREAM)
            self.listener.bind((host, 0))
            self.listener.listen(size)

    @property
    def address(self) -> tuple[str, int] | None:
        """(host, port) this worker accepts its peers on (None: it connects to all)."""
        if self.listener is None:
            return None
        host, port = self.listener.getsockname()[:2]
        return host, port

    def connect(self, addresses: Sequence[tuple[str, int] | None],
                names: Sequence[str]) -> None:
        """Open the connections to the partners: to each lower-ranked one at its
        ``addresses[r]``, from each higher-ranked one on this worker's listener.
        ``names`` (the workers' addresses) name peers in errors."""
        self.names = list(names)
        mine = partners(self.rank, self.size)
        for r in (p for p in mine if p < self.rank):
            address = addresses[r]
            assert address is not None          # a rank with higher partners listens
            try:
                conn = socket.create_connection(address, timeout=self.timeout)
            except OSError as error:
                raise PeerError(f"cannot connect to worker {self.names[r]} at "
                                f"{address[0]}:{address[1]}: {error}") from error
            conn.sendall(_HELLO.pack(self.token, self.rank))
            self._keep(r, conn)
        expected = {p for p in mine if p > self.rank}
        while expected:
            assert self.listener is not None
            self.listener.settimeout(self.timeout)
            try:
                conn, _ = self.listener.accept()
            except OSError as error:
                raise PeerError(f"workers {[self.names[r] for r in sorted(expected)]} did "
                                f"not connect within {self.timeout:g} s") from error
            try:   # a greeting is 24 bytes sent at once: a stranger may not stall us
                conn.settimeout(min(self.timeout, GREETING_SECONDS))
                token, rank = _HELLO.unpack(_receive_exactly(conn, _HELLO.size))
            except (OSError, ValueError):
                conn.close()
                continue
            if token != self.token or rank not in expected:
                conn.close()                    # not one of this training's workers
                continue
            expected.discard(rank)
            self._keep(rank, conn)
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    def _keep(self, rank: int, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setblocking(False)
        self.sockets[rank] = conn

    def allreduce(self, array: np.ndarray, combine: Combine) -> np.ndarray:
        """The sum of every worker's ``array`` (same dtype and size on all), where
        ``combine(a, b)`` returns a new array holding ``a + b`` (``a`` the lower rank's
        partial sum): the same result, bit for bit, on every worker."""
        array = np.ascontiguousarray(array)
        if self.size == 1:
            return array
        start = time.perf_counter()
        try:
            return self._allreduce(array, combine)
        finally:
            self.seconds += time.perf_counter() - start

    def _allreduce(self, array: np.ndarray, combine: Combine) -> np.ndarray:
        self.messages += 1
        power = _largest_power_of_two(self.size)
        rank = self.rank
        if rank >= power:
            self._swap(rank - power, array, receive=False)
            return self._swap(rank - power, array, send=False)
        if rank + power < self.size:
            array = combine(array, self._swap(rank + power, array, send=False))
        for bit in range(power.bit_length() - 1):
            partner = rank ^ (1 << bit)
            theirs = self._swap(partner, array)
            array = combine(array, theirs) if rank < partner else combine(theirs, array)
        if rank + power < self.size:
            self._swap(rank + power, array, receive=False)
        return array

    def _swap(self, rank: int, array: np.ndarray, *, send: bool = True,
              receive: bool = True) -> np.ndarray:
        """Send ``array`` to peer ``rank`` and/or receive its array of the same size and
        dtype, both at once (neither side waits for the other to finish sending)."""
        conn = self.sockets[rank]
        out = [memoryview(_HEADER.pack(self.messages, array.nbytes)),
               array.data.cast("B")] if send else []
        header = bytearray(_HEADER.size)
        theirs = np.empty_like(array)
        into = [memoryview(header), theirs.data.cast("B")] if receive else []

        def check_header() -> None:
            number, nbytes = _HEADER.unpack(header)
            if number != self.messages or nbytes != array.nbytes:
                raise PeerError(f"worker {self.names[rank]} is out of step: its message "
                                f"{number} of {nbytes} bytes where message "
                                f"{self.messages} of {array.nbytes} bytes was due")

        try:
            self._transfer(conn, rank, out, into, check_header)
        except OSError as error:
            raise PeerError(f"worker {self.names[rank]} closed the connection (lost, or "
                            f"failed): {type(error).__name__}: {error}") from error
        if send:
            self.bytes_sent += _HEADER.size + array.nbytes
        if receive:
            self.bytes_received += _HEADER.size + array.nbytes
        return theirs

    def _transfer(self, conn: socket.socket, rank: int, out: list[memoryview],
                  into: list[memoryview], check_header: Callable[[], None]) -> None:
        """Send the views ``out`` and fill the views ``into`` (a header, then the
        array; ``check_header`` called once the header is in) on one connection, as the
        socket allows each: a poll loop, because two peers sending each other a large
        array at once must not both block on a full send buffer."""
        out = [view for view in out if len(view)]
        into = list(into)
        poller = select.poll()
        poller.register(conn, 0)
        while out or into:
            poller.modify(conn, (select.POLLOUT if out else 0) | (select.POLLIN if into else 0))
            ready = poller.poll(self.timeout * 1000.0)
            if not ready:
                raise PeerError(f"worker {self.names[rank]} did not answer for "
                                f"{self.timeout:g} s")
            flags = ready[0][1]
            if into and flags & (select.POLLIN | select.POLLHUP | select.POLLERR):
                got = conn.recv_into(into[0][:_CHUNK])
                if got == 0:
                    raise PeerError(f"worker {self.names[rank]} closed the connection "
                                    "(lost, or failed)")
                into[0] = into[0][got:]
                if not len(into[0]):
                    into.pop(0)
                    if len(into) == 1:
                        check_header()
                        if not len(into[0]):        # an empty array follows
                            into.pop(0)
            elif flags & (select.POLLHUP | select.POLLERR):
                raise PeerError(f"worker {self.names[rank]} closed the connection "
                                "(lost, or failed)")
            if out and flags & select.POLLOUT:
                sent = conn.send(out[0][:_CHUNK])
                out[0] = out[0][sent:]
                if not len(out[0]):
                    out.pop(0)

    def close(self) -> None:
        """Close every connection: the peers' next exchange with this worker fails at
        once (PeerError), not after the timeout."""
        for conn in self.sockets.values():
            conn.close()
        self.sockets = {}
        if self.listener is not None:
            self.listener.close()
            self.listener = None


def _receive_exactly(conn: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ValueError("the connection closed before its greeting")
        data += chunk
    return bytes(data)
