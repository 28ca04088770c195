"""Superset's configuration for the scripted run (scripts/superset/run.py): SQLite metadata in the
run's folder, no CSRF on the REST API, and no result cache, so that every chart load reaches
dpsql serve (what dpsql reuses is then dpsql's doing, not Superset's)."""

import os

_HERE = os.environ.get("SUPERSET_RUN_DIR", "/tmp/superset-run")
SECRET_KEY = os.environ.get("SUPERSET_SECRET_KEY", "dpsql-superset-run-not-a-secret")
SQLALCHEMY_DATABASE_URI = f"sqlite:///{_HERE}/superset.db"
WTF_CSRF_ENABLED = False
TALISMAN_ENABLED = False
CACHE_CONFIG = {"CACHE_TYPE": "NullCache"}
DATA_CACHE_CONFIG = {"CACHE_TYPE": "NullCache"}
FILTER_STATE_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 3600}
EXPLORE_FORM_DATA_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 3600}
RATELIMIT_ENABLED = False
AUTH_RATE_LIMITED = False
PREVENT_UNSAFE_DB_CONNECTIONS = False
SQLLAB_CTAS_NO_LIMIT = True
FEATURE_FLAGS = {"DASHBOARD_RBAC": False}
