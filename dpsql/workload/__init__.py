"""Workloads: many tables planned together under one budget (issue 17).

:mod:`dpsql.workload.composition` holds the maths (paper 004's MOE-to-budget per level, its
generalised parallel composition, paper 001's random-partition sampling error);
:mod:`dpsql.workload.spec` reads a workload file and :mod:`dpsql.workload.dryrun` plans it.
May import: dpsql.errors, dpsql.privacy, dpsql.workload.
"""
