"""Random sources for the noise samplers.

Every random decision in :mod:`dpsql.privacy.samplers` and :mod:`dpsql.privacy.bernoulli` is made
from exact uniform integers, drawn through the two methods of :class:`RandomSource`. Both
concrete sources derive them from a stream of random *bytes* in :class:`_ByteSource`, so the
bit-twiddling and the rejection sampling are the same code whether the bytes come from the OS
CSPRNG or from a seeded PRNG: a statistical test run on the seeded source tests the code that
production runs.

* :class:`SecureRandom` (the default, :func:`default_random`): bytes from ``os.urandom``.
* :class:`SeededRandom`: a seeded numpy PCG64. Deterministic and NOT cryptographically
  secure; for tests only. Obtain it through :func:`dpsql.testing.seeded_random`.

This module imports nothing of dpsql, and numpy only for the vectorised draws: a query whose
noise is drawn one sample at a time (:func:`dpsql.privacy.guided.scalar_draws`) needs no numpy.
"""

from __future__ import annotations

import os
import struct
import weakref
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = ["RandomSource", "SecureRandom", "SeededRandom", "default_random"]

# uniform_below accepts bounds below 2^62, so a rejection round on 63-bit words keeps a draw
# with probability > 1/2 and every sum/compare of two operands stays inside int64.
_MAX_BOUND = 1 << 62


@runtime_checkable
class RandomSource(Protocol):
    """The randomness the samplers consume: exact uniform integers, vectorised."""

    def bits63(self, n: int) -> np.ndarray:
        """Return ``n`` independent int64 values, each uniform in [0, 2^63)."""
        ...

    def uniform_below(self, bounds: np.ndarray) -> np.ndarray:
        """Return one int64 uniform in [0, b) per element b of ``bounds`` (1 <= b < 2^62)."""
        ...


class _ByteSource:
    """Builds exact uniform integers from a byte stream; subclasses supply :meth:`_bytes`."""

    _POOL = 4096  # at most this many bytes fetched at once for the scalar draws
    _FIRST = 256  # a new or dropped pool starts this small and doubles: one query's few draws
    #               should not pay for 4 KiB of os.urandom
    _pool = b""  # class defaults; each instance's first refill shadows them
    _pos = 0

    def _bytes(self, n: int) -> bytes:
        raise NotImplementedError

    def _drop_pool(self) -> None:
        self._pool = b""
        self._pos = 0

    def _refill(self, need: int) -> bytes:
        """A fresh pool of at least ``need`` bytes (the old one's rest is dropped, never reused)."""
        size = max(need, min(self._POOL, 2 * len(self._pool) or self._FIRST))
        self._pool, self._pos = self._bytes(size), 0
        return self._pool

    def words64(self, n: int) -> list[int]:
        """``n`` Python ints uniform in [0, 2^64): the float-guided samplers' small batches,
        from the pool (every byte used once)."""
        need = 8 * n
        pos, pool = self._pos, self._pool
        if pos + need > len(pool):
            pool, pos = self._refill(need), 0
        self._pos = pos + need
        return list(struct.unpack_from(f"<{n}Q", pool, pos))

    def randbelow(self, bound: int) -> int:
        """One Python int uniform in [0, bound) for any int bound >= 1: the scalar samplers' draw.

        Rejection on whole bits, no modulo bias: draw bound.bit_length() bits (masked from
        whole bytes), keep the value if it is below bound (probability > 1/2). Bytes come from a
        pool refilled :data:`_POOL` bytes at a time, so a draw costs no system call; every byte
        is used once.
        """
        if bound < 1:
            raise ValueError("randbelow: the bound must be >= 1")
        bits = (bound - 1).bit_length()
        if bits == 0:
            return 0
        nbytes = (bits + 7) // 8
        mask = (1 << bits) - 1
        while True:
            pos, pool = self._pos, self._pool
            if pos + nbytes > len(pool):
                pool, pos = self._refill(nbytes), 0
            self._pos = pos + nbytes
            u = int.from_bytes(pool[pos : pos + nbytes], "little") & mask
            if u < bound:
                return u

    def bits63(self, n: int) -> np.ndarray:
        # One call for the whole batch; little-endian spelled out so the result does not
        # depend on the host. The top bit is dropped to stay non-negative in int64.
        import numpy as np

        words = np.frombuffer(self._bytes(8 * n), dtype="<u8")
        return (words >> np.uint64(1)).view(np.int64)  # below 2^63 now: the same values, no second copy

    def _bits32(self, n: int) -> np.ndarray:
        """``n`` int64 values uniform in [0, 2^32): half the bytes of bits63 for small bounds."""
        import numpy as np

        return np.frombuffer(self._bytes(4 * n), dtype="<u4").astype(np.int64)

    def uniform_below(self, bounds: np.ndarray) -> np.ndarray:
        import numpy as np

        b_all = np.asarray(bounds, dtype=np.int64)
        shape = b_all.shape
        b_all = b_all.ravel()
        out = np.empty(b_all.size, dtype=np.int64)
        if b_all.size == 0:
            return out.reshape(shape)
        if int(b_all.min()) < 1 or int(b_all.max()) >= _MAX_BOUND:
            raise ValueError("uniform_below: every bound must be in [1, 2^62)")
        # Rejection sampling, no modulo bias: a word u in [0, span) is kept only if the whole
        # block of b values starting at u - (u mod b) lies inside [0, span); then u mod b is
        # exactly uniform. Rounds run over the still-pending elements only.
        small = int(b_all.max()) <= (1 << 31)  # reject probability < 1/2 with 32-bit words
        pending: np.ndarray | None = None  # None = all elements (saves one gather per batch)
        while True:
            b = b_all if pending is None else b_all[pending]
            m = b.size
            if small:
                u = self._bits32(m)
                last_start = np.int64(1 << 32) - b  # highest allowed block start, 2^32 - b
            else:
                u = self.bits63(m)
                last_start = (np.int64((1 << 63) - 1) - b) + 1  # 2^63 - b without overflowing
            r = u % b
            ok = (u - r) <= last_start
            if pending is None:
                out[:] = r  # rejected entries are overwritten in later rounds
                pending = np.flatnonzero(~ok)
            else:
                out[pending[ok]] = r[ok]
                pending = pending[~ok]
            if pending.size == 0:
                return out.reshape(shape)


class SecureRandom(_ByteSource):
    """The production source: bytes from ``os.urandom`` (the OS CSPRNG).

    One ``os.urandom`` call per batch, never per sample (the scalar draws take bytes from a
    pool of 4 KiB). Not seedable, by design. A forked child drops every pool it inherited
    (``os.register_at_fork``), so parent and child never reuse the same bytes as noise.
    """

    def __init__(self) -> None:
        self._drop_pool()
        _LIVE.add(self)

    def _bytes(self, n: int) -> bytes:
        return os.urandom(n)

    def __repr__(self) -> str:
        return "SecureRandom()"


class SeededRandom(_ByteSource):
    """A deterministic source backed by ``numpy.random.Generator(PCG64(seed))``.

    FOR TESTS ONLY: PCG64 is not a cryptographic generator and a known seed makes the noise
    known, which destroys every privacy guarantee. Production code never constructs this;
    tests get it through :func:`dpsql.testing.seeded_random`.
    """

    def __init__(self, seed: int) -> None:
        import numpy as np

        self._gen = np.random.Generator(np.random.PCG64(seed))
        self.seed = seed

    def _bytes(self, n: int) -> bytes:
        return self._gen.bytes(n)

    def __repr__(self) -> str:
        return f"SeededRandom({self.seed!r})"


# Every live SecureRandom, so that a forked child can drop the byte pools it inherited.
_LIVE: "weakref.WeakSet[SecureRandom]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for source in list(_LIVE):
        source._drop_pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def default_random() -> RandomSource:
    """Return the source used whenever a caller passes none: a :class:`SecureRandom`."""
    return SecureRandom()
