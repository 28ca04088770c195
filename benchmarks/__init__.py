"""dpsql's evidence: speed against raw DuckDB and accuracy against the standard DP approach.

``python -m benchmarks all|speed|utility|policy-loss|heavy-tail [--quick]`` regenerates every
table and figure of ``docs/evaluation.md`` (see ``benchmarks/__main__.py``).

Modules:
    speed       dpsql vs raw DuckDB on the demo table (``bench_engine.py`` is its old entry point)
    cbp         paper 000 §6.4: the county x NAICS workload, unit splitting vs top-coding, and
                the policy-loss distribution (internal to the data owner)
    heavy_tail  paper 000 §6.3: the SIM data of Table 4, ARE vs share of records split
    dpmath      ARE, splits, top-coding, noisy answers, policy loss: small pure functions
    report      Markdown tables; plots: the figures (matplotlib, optional)
    common      paths, demo data, machine info, CSV/Markdown output
``bench_noise.py``, ``bench_ledger.py`` and the partition-selection scripts are stand-alone.
"""
