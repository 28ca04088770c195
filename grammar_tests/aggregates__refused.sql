# title: min
# error: DP109
SELECT MIN(payann) FROM establishments;

# title: max
# error: DP109
SELECT state, MAX(employees) FROM establishments GROUP BY state;

# title: mode
# error: DP109
SELECT MODE(state) FROM establishments;

# title: approx_count_distinct
# error: DP109
SELECT APPROX_COUNT_DISTINCT(county) FROM establishments;

# title: string_agg
# error: DP109
SELECT STRING_AGG(state, ',') FROM establishments;

# title: list aggregate
# error: DP109
SELECT LIST(county) FROM establishments;

# title: array_agg
# error: DP109
SELECT ARRAY_AGG(id) FROM establishments;

# title: any_value
# error: DP109
SELECT ANY_VALUE(county) FROM establishments;

# title: first
# error: DP109
SELECT FIRST(payann) FROM establishments;

# title: arg_max
# error: DP109
SELECT ARG_MAX(county, payann) FROM establishments;

# title: bit_or
# error: DP109
SELECT BIT_OR(id) FROM establishments;

# title: bool_and
# error: DP109
SELECT BOOL_AND(payann > 0) FROM establishments;

# title: max next to a supported aggregate
# error: DP109
SELECT COUNT(*), MAX(payann) FROM establishments;

# title: max in having
# error: DP109
SELECT state, COUNT(*) FROM establishments GROUP BY state HAVING MAX(payann) > 10;

# title: sum of a key
# error: DP204
SELECT SUM(state) FROM establishments;

# title: sum of the privacy unit
# error: DP204
SELECT SUM(id) FROM establishments;

# title: sum of a column that is neither key nor measure
# error: DP204
SELECT SUM(firm_id) FROM establishments;

# title: avg of a non-measure
# error: DP204
SELECT AVG(firm_id) FROM establishments;

# title: sum of an expression over a measure
# error: DP204
SELECT SUM(payann * 2) FROM establishments;

# title: sum of a literal
# error: DP204
SELECT SUM(1) FROM establishments;

# title: sum of a case
# error: DP204
SELECT SUM(CASE WHEN state = 'CA' THEN payann ELSE 0 END) FROM establishments;

# title: avg of a cast measure
# error: DP204
SELECT AVG(CAST(payann AS DOUBLE)) FROM establishments;

# title: sum of a measure of another table
# error: DP203
SELECT SUM(latency_ms) FROM establishments;

# title: sum distinct
# error: DP116
SELECT SUM(DISTINCT payann) FROM establishments;

# title: avg distinct
# error: DP116
SELECT AVG(DISTINCT employees) FROM establishments;

# title: count distinct of several columns
# error: DP116
SELECT COUNT(DISTINCT id, state) FROM establishments;

# title: count of an expression
# error: DP117
SELECT COUNT(payann + 1) FROM establishments;

# title: count of a case
# error: DP117
SELECT COUNT(CASE WHEN state = 'CA' THEN 1 END) FROM establishments;

# title: nested aggregates
# error: DP115
SELECT SUM(SUM(payann)) FROM establishments;

# title: count inside avg
# error: DP115
SELECT AVG(COUNT(*)) FROM establishments;

# title: aggregate filter clause
# error: DP110
SELECT SUM(payann) FILTER (WHERE state = 'CA') FROM establishments;

# title: aggregate in where
# error: DP112
SELECT COUNT(*) FROM establishments WHERE SUM(payann) > 10;

# title: count in where
# error: DP112
SELECT state, COUNT(*) FROM establishments WHERE COUNT(*) > 1 GROUP BY state;
