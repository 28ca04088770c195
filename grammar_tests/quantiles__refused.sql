# title: median of a measure without a declared range
# error: DP204
SELECT MEDIAN(payqtr1) FROM establishments;

# title: median of a key
# error: DP204
SELECT MEDIAN(age4) FROM persons;

# title: median of the privacy unit
# error: DP204
SELECT MEDIAN(person_id) FROM persons;

# title: median of an expression
# error: DP204
SELECT MEDIAN(age + 1) FROM persons;

# title: median of distinct values
# error: DP116
SELECT MEDIAN(DISTINCT age) FROM persons;

# title: quantile at zero is the minimum
# error: DP109
SELECT QUANTILE_CONT(age, 0) FROM persons;

# title: quantile at one is the maximum
# error: DP109
SELECT QUANTILE_CONT(age, 1) FROM persons;

# title: quantile above one
# error: DP109
SELECT QUANTILE_CONT(age, 1.5) FROM persons;

# title: quantile with five decimals
# error: DP109
SELECT QUANTILE_CONT(age, 0.12345) FROM persons;

# title: quantile of a column
# error: DP109
SELECT QUANTILE_CONT(age, age) FROM persons;

# title: a list of quantiles
# error: DP109
SELECT QUANTILE_CONT(age, [0.25, 0.75]) FROM persons;

# title: percentile ordered by two columns
# error: DP109
SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age, sex) FROM persons;

# title: nested median
# error: DP115
SELECT MEDIAN(MEDIAN(age)) FROM persons;

# title: median in where
# error: DP112
SELECT COUNT(*) FROM persons WHERE age > MEDIAN(age);
