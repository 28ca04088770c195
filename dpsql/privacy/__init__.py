"""The privacy mathematics: mechanisms, samplers, partition selection, budgets and accounting.

Exact samplers of the discrete Gaussian and the two-sided geometric (paper 004 Algorithms 4-5)
fed by a secure random source (:mod:`~dpsql.privacy.randomness`); DP partition selection (paper
002; for units in up to kappa groups :mod:`~dpsql.privacy.selection_kappa`, issue 31: select_kappa
answers private keys of many-row tables); how one query's budget is shared among its noisy primitives and each one's
σ and 95% MOE (:mod:`~dpsql.privacy.allocate`); budget values (:mod:`~dpsql.privacy.budget`);
conversions of zCDP to (ε, δ)-DP (:mod:`~dpsql.privacy.accounting`, paper 004 Lemmas 4-5); the
public policy function P(r) (:mod:`~dpsql.privacy.policy_function`, paper 000; also P(u) over a
unit's groups). Each formula cites its source.

Pure computation on numbers: nothing here reads data, SQL or files. May import
:mod:`dpsql.errors`, :mod:`dpsql.policy.model`, the plan's data types (:mod:`dpsql.sql.plan`, for
the primitives a budget is shared among) and the modules of this folder.
"""
