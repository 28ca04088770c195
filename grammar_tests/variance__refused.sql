# title: variance of a distinct measure
# error: DP116
SELECT VARIANCE(DISTINCT employees) FROM establishments;

# title: variance of an expression
# error: DP204
SELECT VARIANCE(employees * 2) FROM establishments;

# title: standard deviation of a column that is not a measure
# error: DP204
SELECT STDDEV(naics) FROM establishments;

# title: variance of the privacy unit
# error: DP204
SELECT VAR_POP(id) FROM establishments;

# title: a variance nested in an aggregate
# error: DP115
SELECT SUM(VARIANCE(employees)) FROM establishments;

# title: std with two arguments
# error: DP110
SELECT STD(employees, payann) FROM establishments;

# title: covariance is not a spread dpsql answers
# error: DP109
SELECT COVAR_POP(employees, payann) FROM establishments;
