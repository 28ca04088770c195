"""Choosing the engine without Spark running: the clear error when pyspark is missing, an
unknown engine, and Spark on a policy that names no Parquet data (no JVM starts here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dpsql
from dpsql.errors import EngineUnavailable


def test_without_pyspark_the_error_says_how_to_install_it(demo, tmp_path):
    """pyspark made unimportable in a fresh interpreter, as when the extra is not installed."""
    from dpsql.demo_db.parquet import ensure_demo_parquet

    _, policy = ensure_demo_parquet(home=demo[0].parent)
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "from dpsql.faces.cli import main\n"
            f"sys.exit(main(['query', '--engine', 'spark', '--policy', {str(policy)!r}, "
            "'SELECT COUNT(*) FROM establishments']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "DP405" in done.stderr and "pip install 'dpsql[spark]'" in done.stderr


def test_an_unknown_engine_is_refused(demo):
    with pytest.raises(EngineUnavailable, match="unknown engine"):
        dpsql.connect(*demo, engine="oracle")


def test_spark_needs_the_policy_to_name_parquet_data(demo):
    with pytest.raises(EngineUnavailable, match="names none") as err:
        dpsql.connect(*demo, engine="spark")
    assert err.value.code == "DP405"


def test_a_given_spark_master_is_the_one_the_session_is_built_on():
    """--spark-master spark://... once ran on local[*]: a later spark.master default overrode
    builder.master(master). The master given wins over the environment, which wins over the
    default; spark-submit's own --master is left alone."""
    from dpsql.backends.spark import classic_master

    cluster = "spark://127.0.0.1:7077"
    assert classic_master(cluster, {}) == cluster
    assert classic_master(cluster, {"SPARK_MASTER": "local[*]"}) == cluster
    assert classic_master(None, {"SPARK_MASTER": cluster}) == cluster
    assert classic_master(None, {"PYSPARK_SUBMIT_ARGS": "--conf spark.master=yarn pyspark-shell"}) is None
    assert classic_master(None, {}) == "local[*]"
