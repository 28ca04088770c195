"""The process of a `dpsql` command that answers one statement and exits (``dpsql query``,
``dpsql explain``): work such a process need not do at start-up (issue 15, docs/performance.md).
Nothing here changes what is computed or released; a caller of :func:`dpsql.faces.cli.main`
with its own ``argv`` (a test, a script) keeps its process as it was.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

#: commands that answer one statement and exit
ONE_STATEMENT = ("query", "explain")


@contextlib.contextmanager
def one_statement(command: str | None, exiting: bool) -> Iterator[None]:
    """Run ``command`` (the first word of the command line) with the process set for one statement.

    * Python's cyclic garbage collector is paused. It runs after every few hundred allocations,
      and importing sqlglot, numpy and the pipeline makes a few hundred thousand objects that live
      as long as the process: on the demo query it ran about 110 times and freed about a thousand
      objects. One statement's cyclic garbage (sqlglot trees link to their parents) is small;
      everything else is freed by reference counting as before. Afterwards the collector is
      enabled again, which at once collects everything made meanwhile; when the process exits
      next (``exiting``: the console script, ``python -m dpsql``) that is skipped, and the
      objects are frozen (:func:`gc.freeze`) so that the collection Python runs at exit does not
      walk them either. Resources are never left to the collector: the command closes them.
    * When the process exits next, numpy's OpenBLAS starts one thread, not one per core
      (``OPENBLAS_NUM_THREADS``, unless set already): it starts its pool when numpy is imported,
      and dpsql does no linear algebra (its samplers use integer arithmetic), while starting the
      pool took 30-100 ms of CPU on a busy 2-core machine.
    """
    if command not in ONE_STATEMENT or not gc.isenabled():
        yield
        return
    if exiting:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.disable()
    try:
        yield
    finally:
        if exiting:
            gc.freeze()
        else:
            gc.enable()
