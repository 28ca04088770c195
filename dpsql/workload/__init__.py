"""Workloads: many tables planned together under one budget (issue 17).

:mod:`dpsql.workload.composition` holds the maths (paper 004's MOE-to-budget per level, its
generalised parallel composition, paper 001's random-partition sampling error);
:mod:`dpsql.workload.spec` reads a workload file, :mod:`dpsql.workload.plan` plans it (the dry
run), :mod:`dpsql.workload.run` answers it under one charge and :mod:`dpsql.workload.safetab`
runs paper 004's adaptive two-stage tabulation.
May import: dpsql.errors, dpsql.privacy, dpsql.ledger.book (Charge), dpsql.pipeline.result, dpsql.workload;
the session is passed in, never imported.
"""
