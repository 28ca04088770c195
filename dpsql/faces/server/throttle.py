"""Failed logins cost time: a backoff per user name and per client address, in bounded memory.

A wrong password (or an unknown user name: the two are not told apart) is answered only after a
delay that grows with the recent failures of that user name and of that address, whichever has
more: none for the first :data:`FREE` failures, then :data:`BASE` seconds doubling up to
:data:`MOST`. The connection keeps its login slot while it waits (a client that hangs up does not
free it sooner), and each address has only a few login slots (:mod:`dpsql.faces.server.server`),
so one address guesses at most ``slots / MOST`` passwords a second however many connections it
opens, and a name under attack from many addresses is slowed the same way. A successful login
clears nothing: an analyst with an account of their own could otherwise reset their address's
count between guesses at another's password, and a name whose count a login had cleared would
tell a second address that it exists (unknown names never log in). Only failures wait, so the
right password is answered at once even under attack. Counts are forgotten after :data:`FORGET` seconds without a failure, and at most :data:`CAPACITY` names
and addresses are remembered (the least recently failed are dropped first).
"""

from __future__ import annotations

import time
from collections import OrderedDict

FREE = 3
BASE = 0.25
MOST = 8.0
FORGET = 600.0
CAPACITY = 10_000


class LoginThrottle:
    """The recent login failures per user name and per address (see the module docstring)."""

    def __init__(self, *, free: int = FREE, base: float = BASE, most: float = MOST, forget: float = FORGET,
                 capacity: int = CAPACITY) -> None:
        self.free, self.base, self.most, self.forget, self.capacity = free, base, most, forget, capacity
        self._failures: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()

    def _count(self, key: tuple[str, str], now: float) -> int:
        count, last = self._failures.get(key, (0, now))
        return count if now - last < self.forget else 0

    def failed(self, user: str, address: str, now: float | None = None) -> tuple[int, float]:
        """Record a failure; returns (recent failures, the seconds to wait before answering it)."""
        now = time.monotonic() if now is None else now
        worst = 0
        for key in (("user", user), ("address", address)):
            count = self._count(key, now) + 1
            self._failures[key] = (count, now)
            self._failures.move_to_end(key)
            worst = max(worst, count)
        while len(self._failures) > self.capacity:
            self._failures.popitem(last=False)
        return worst, self.delay(worst)

    def delay(self, failures: int) -> float:
        if failures <= self.free:
            return 0.0
        return min(self.most, self.base * 2 ** (failures - self.free - 1))

    def __len__(self) -> int:
        return len(self._failures)
