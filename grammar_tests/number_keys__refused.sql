# title: width_bucket with no bucket
# error: DP110
SELECT WIDTH_BUCKET(age, 0, 100, 0) AS b, COUNT(*) FROM persons GROUP BY 1;

# title: width_bucket with equal bounds
# error: DP110
SELECT WIDTH_BUCKET(age, 50, 50, 3) AS b, COUNT(*) FROM persons GROUP BY 1;

# title: width_bucket with a column as a bound
# error: DP110
SELECT WIDTH_BUCKET(age, age, 100, 3) AS b, COUNT(*) FROM persons GROUP BY 1;

# title: width_bucket with a fractional count
# error: DP110
SELECT WIDTH_BUCKET(age, 0, 100, 2.5) AS b, COUNT(*) FROM persons GROUP BY 1;

# title: bins of an integer key mixed with a private column
# error: DP206
SELECT age + race1 AS b, COUNT(*) FROM persons GROUP BY 1;

# title: sum of an integer key that is not a measure
# error: DP204
SELECT age4, SUM(age4) FROM persons GROUP BY age4;
