
# title: FETCH FIRST with PERCENT
# error: DP110
SELECT state, COUNT(*) FROM establishments GROUP BY state FETCH FIRST 10 PERCENT ROWS ONLY;

# title: TOP n together with LIMIT
# error: DP110
SELECT TOP 3 state, COUNT(*) FROM establishments GROUP BY state LIMIT 2;

# title: the row count of Superset's Samples pane
# error: DP128
-- COUNT(*) labelled "COUNT(*)", a LIMIT, no grouping: shown only beside the sample's rows, which a
-- private table never shows (dpsql/sql/samples_pane.py)
SELECT COUNT(*) AS "COUNT(*)" FROM main.establishments LIMIT 50000;

# title: the Samples pane's row count with the chart's filters
# error: DP128
SELECT COUNT(*) AS "COUNT(*)" FROM establishments WHERE state = 'CA' LIMIT 50000;

# title: the Samples pane's row count of a virtual dataset
# error: DP128
SELECT COUNT(*) AS "COUNT(*)" FROM (SELECT id, state FROM establishments) AS virtual_table LIMIT 50000;
