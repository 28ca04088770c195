# title: raw timestamp key
# error: DP114
SELECT first_seen, COUNT(*) FROM devices GROUP BY first_seen;

# title: timestamp bucket finer than its grain
# error: DP114
SELECT DATE_TRUNC('minute', first_seen), COUNT(*) FROM devices GROUP BY 1;

# title: strftime of a timestamp by the minute
# error: DP114
SELECT strftime(first_seen, '%H:%M'), COUNT(*) FROM devices GROUP BY 1;

# title: epoch of a timestamp
# error: DP114
SELECT EXTRACT(epoch FROM first_seen), COUNT(*) FROM devices GROUP BY 1;

# title: timestamp shifted by minutes
# error: DP114
SELECT DATE_TRUNC('day', first_seen + INTERVAL 30 MINUTE), COUNT(*) FROM devices GROUP BY 1;

# title: timestamp cast to text
# error: DP114
SELECT CAST(first_seen AS VARCHAR), COUNT(*) FROM devices GROUP BY 1;

# title: to_timestamp of a number
# error: DP110
SELECT COUNT(*) FROM devices WHERE first_seen >= TO_TIMESTAMP(1700000000);

# title: time_bucket
# error: DP110
SELECT time_bucket(INTERVAL '1 month', opened), COUNT(*) FROM establishments GROUP BY 1;

# title: date_part with a column as its part
# error: DP110
SELECT date_part(state, opened), COUNT(*) FROM establishments GROUP BY 1;

# title: strftime with a specifier DuckDB does not know (%s): refused at planning, not in the finisher
# error: DP123
SELECT strftime(opened, '%s') AS s, COUNT(*) FROM establishments GROUP BY 1;

# title: strftime with a trailing percent sign
# error: DP123
SELECT strftime(opened, '%Y-%') AS s, COUNT(*) FROM establishments GROUP BY 1;

# title: strptime in WHERE with an unknown unpadded specifier
# error: DP123
SELECT COUNT(*) FROM establishments WHERE opened > strptime('2020', '%-Y');
