"""The policy loader: the demo policy loads; a bad file is refused with file, field and reason."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from dpsql.errors import PolicyFileError
from dpsql.policy.loader import load_policy

GOOD = """
[budget]
default_rho = 0.1
total_rho = 2

[tables.t]
privacy_unit = "id"
[tables.t.measures]
pay = { threshold = 5000000, overrides = { key = "industry", thresholds = { Mining = 10000000 } } }
lat = { threshold = 500, granularity = 0.1 }
[tables.t.keys]
industry = { keyset = ["Agriculture", "Mining", "Retail"] }
county = {}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "policy.toml"
    p.write_text(text)
    return p


def test_demo_policy_loads(demo):
    policy = load_policy(demo[1])
    est = policy.tables["establishments"]
    assert est.privacy_unit == "id"
    assert {m: est.measures[m].threshold for m in est.measures} == {"employees": 100, "payann": 10000, "payqtr1": 2500}
    assert est.keys["state"].public and len(est.keys["state"].keyset) == 51
    assert not est.keys["county"].public and not est.keys["naics"].public
    assert policy.tables["paper_table2"].measures["payroll"].threshold == 5_000_000
    assert policy.budget.default_rho == Fraction(1, 10)
    # delta never binds before rho in the demo: rho = 10 allows at most 80 selections (0.5^2/2
    # each), 80 * selection.delta = 8e-5 < total_delta
    assert policy.budget.total_delta == Fraction(1, 10**4) and policy.budget.dataset_delta is None
    most = policy.budget.total_rho / (policy.selection.epsilon ** 2 / 2)
    assert most == 80 and most * policy.selection.delta < policy.budget.total_delta


def test_delta_budget_default_and_exact(tmp_path):
    budget = load_policy(write(tmp_path, GOOD)).budget
    assert budget.total_delta == Fraction(1, 10**5) and budget.dataset_delta is None  # 10 default selections
    text = GOOD.replace("total_rho = 2", "total_rho = 2\ntotal_delta = 3e-6\ndataset_delta = 0.00001")
    budget = load_policy(write(tmp_path, text)).budget
    assert budget.total_delta == Fraction(3, 10**6) and budget.dataset_delta == Fraction(1, 10**5)


def test_overrides_granularity_and_exact_budget(tmp_path):
    policy = load_policy(write(tmp_path, GOOD))
    pay = policy.tables["t"].measures["pay"]
    assert pay.threshold_for("Mining") == 10_000_000
    assert pay.threshold_for("Retail") == 5_000_000
    assert pay.max_threshold == 10_000_000
    lat = policy.tables["t"].measures["lat"]
    assert lat.granularity == Fraction(1, 10) and lat.threshold == 5000  # in tenths
    assert policy.budget.total_rho == 2 and policy.budget.default_rho == Fraction(1, 10)


@pytest.mark.parametrize("bad, field, reason", [
    ("[tables]", "tables", "declares no table"),
    ("[tables.t]\n", "tables.t.privacy_unit", "is required"),
    ("[tables.t]\nprivacy_unit = 'id'\nunknown = 1", "tables.t.unknown", "not a known field"),
    ("[tables.t]\nprivacy_unit = 'id'\n[tables.t.measures]\npay = {}", "tables.t.measures.pay.threshold", "is required"),
    ("[tables.t]\nprivacy_unit = 'id'\n[tables.t.measures]\npay = { threshold = -5 }", "tables.t.measures.pay.threshold", "positive"),
    ("[tables.t]\nprivacy_unit = 'id'\n[tables.t.measures]\nlat = { threshold = 0.25, granularity = 0.1 }",
     "tables.t.measures.lat.threshold", "multiple of the granularity"),
    ("[tables.t]\nprivacy_unit = 'id'\n[tables.t.keys]\nk = { keyset = [] }", "tables.t.keys.k.keyset", "non-empty"),
    ("[tables.t]\nprivacy_unit = 'id'\n[tables.t.keys]\nk = { keyset = ['a', 'a'] }", "tables.t.keys.k.keyset", "twice"),
    ("[budget]\ndefault_rho = 0\n[tables.t]\nprivacy_unit = 'id'", "budget.default_rho", "positive"),
    ("[budget]\ndefault_rho = 2\ntotal_rho = 1\n[tables.t]\nprivacy_unit = 'id'", "budget.default_rho", "larger than"),
    ("[budget]\ntotal_delta = 0\n[tables.t]\nprivacy_unit = 'id'", "budget.total_delta", "positive"),
    ("[budget]\ntotal_delta = -1e-6\n[tables.t]\nprivacy_unit = 'id'", "budget.total_delta", "positive"),
    ("[budget]\ntotal_delta = 1\n[tables.t]\nprivacy_unit = 'id'", "budget.total_delta", "below 1"),
    ("[budget]\ntotal_delta = 2.5\n[tables.t]\nprivacy_unit = 'id'", "budget.total_delta", "below 1"),
    ("[budget]\ntotal_delta = 'tiny'\n[tables.t]\nprivacy_unit = 'id'", "budget.total_delta", "positive number"),
    ("[budget]\ntotal_delta = nan\n[tables.t]\nprivacy_unit = 'id'", "budget.total_delta", "finite"),
    ("[budget]\ndataset_delta = 0.0\n[tables.t]\nprivacy_unit = 'id'", "budget.dataset_delta", "positive"),
    ("[budget]\ndataset_delta = 1.0\n[tables.t]\nprivacy_unit = 'id'", "budget.dataset_delta", "below 1"),
    ("[budget]\ndelta = 1e-6\n[tables.t]\nprivacy_unit = 'id'", "budget.delta", "not a known field"),
    ("[noise]\nmechanism = 'laplace'\n[tables.t]\nprivacy_unit = 'id'", "noise.mechanism", "must be one of"),
    ("[tables.t]\nprivacy_unit = 'id'\n[tables.t.measures]\npay = { threshold = 5, overrides = { key = 'county', thresholds = { a = 1 } } }",
     "tables.t.measures.pay.overrides.key", "public key"),
    ("[tables.t]\nprivacy_unit = 'id'\n[tables.t.measures]\nid = { threshold = 5 }", "tables.t.privacy_unit", "cannot also be"),
    ("[budget]\nmax_query_rho = -0.5\n[tables.t]\nprivacy_unit = 'id'", "budget.max_query_rho", "positive"),
])
def test_bad_policy_names_file_field_and_reason(tmp_path, bad, field, reason):
    path = write(tmp_path, bad)
    with pytest.raises(PolicyFileError) as err:
        load_policy(path)
    text = str(err.value)
    assert str(path) in text and f"'{field}'" in text and reason in text
    assert err.value.code == "DP401"


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(PolicyFileError, match="cannot read"):
        load_policy(tmp_path / "nope.toml")
    with pytest.raises(PolicyFileError, match="not a valid TOML"):
        load_policy(write(tmp_path, "[tables\n"))


def test_policy_must_match_database(demo, tmp_path):
    import dpsql

    text = Path(demo[1]).read_text().replace('payann = { threshold = 10000,', 'payannn = { threshold = 10000,')
    bad = write(tmp_path, text)
    with pytest.raises(PolicyFileError, match="payannn"):
        dpsql.connect(demo[0], bad)
