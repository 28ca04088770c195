# title: variance of a measure
# execute: true
SELECT VARIANCE(employees) FROM establishments;
SELECT SUM(TRY_CAST(TRY(CASE WHEN ABS(CAST("employees" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("employees" AS HUGEINT)) END * 100 - (CASE WHEN ABS(CAST("employees" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("employees" AS HUGEINT)) END % 100) * (100 - CASE WHEN ABS(CAST("employees" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("employees" AS HUGEINT)) END % 100)) AS BIGINT)) AS "__p0", SUM("employees") AS "__p1", COUNT(*) AS "__p2" FROM "establishments";

# title: every spread function of one measure shares three primitives
# execute: true
SELECT VAR_SAMP(payann), VAR_POP(payann), STDDEV(payann), STDDEV_SAMP(payann), STDDEV_POP(payann), STD(payann), VAR(payann) FROM establishments;
SELECT SUM(TRY_CAST(TRY(CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END * 10000 - (CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END % 10000) * (10000 - CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END % 10000)) AS BIGINT)) AS "__p0", SUM("payann") AS "__p1", COUNT(*) AS "__p2" FROM "establishments";

# title: variance next to the sum and average it shares
# execute: true
SELECT state, SUM(payann), AVG(payann), VARIANCE(payann), COUNT(*) FROM establishments GROUP BY state;
SELECT "state" AS "state", SUM("payann") AS "__p0", COUNT(*) AS "__p1", SUM(TRY_CAST(TRY(CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END * 10000 - (CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END % 10000) * (10000 - CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END % 10000)) AS BIGINT)) AS "__p2" FROM "establishments" GROUP BY "state";

# title: standard deviation of a measure with a granularity by a private key
# execute: true
SELECT device_model, STDDEV(latency_ms) FROM devices GROUP BY device_model;
SELECT "device_model" AS "device_model", SUM(TRY_CAST(TRY(CASE WHEN ABS(CAST(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT) AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT) AS HUGEINT)) END * 5000 - (CASE WHEN ABS(CAST(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT) AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT) AS HUGEINT)) END % 5000) * (5000 - CASE WHEN ABS(CAST(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT) AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT) AS HUGEINT)) END % 5000)) AS BIGINT)) AS "__p0", SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p1", COUNT(*) AS "__p2", COUNT(*) AS "__n" FROM "devices" GROUP BY "device_model";

# title: variance with a filter, arithmetic and ordering
# execute: true
SELECT naics2, SQRT(VAR_POP(payqtr1)) / AVG(payqtr1) AS cv FROM establishments WHERE employees > 5 GROUP BY naics2 HAVING VARIANCE(payqtr1) > 0 ORDER BY cv DESC LIMIT 5;
SELECT "naics2" AS "naics2", SUM(TRY_CAST(TRY(CASE WHEN ABS(CAST("payqtr1" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payqtr1" AS HUGEINT)) END * 2500 - (CASE WHEN ABS(CAST("payqtr1" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payqtr1" AS HUGEINT)) END % 2500) * (2500 - CASE WHEN ABS(CAST("payqtr1" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payqtr1" AS HUGEINT)) END % 2500)) AS BIGINT)) AS "__p0", SUM("payqtr1") AS "__p1", COUNT(*) AS "__p2" FROM "establishments" WHERE "employees" > 5 GROUP BY "naics2";

# title: variance of two measures
# execute: true
SELECT VARIANCE(employees), STDDEV_POP(payann) FROM establishments;
SELECT SUM(TRY_CAST(TRY(CASE WHEN ABS(CAST("employees" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("employees" AS HUGEINT)) END * 100 - (CASE WHEN ABS(CAST("employees" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("employees" AS HUGEINT)) END % 100) * (100 - CASE WHEN ABS(CAST("employees" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("employees" AS HUGEINT)) END % 100)) AS BIGINT)) AS "__p0", SUM("employees") AS "__p1", COUNT(*) AS "__p2", SUM(TRY_CAST(TRY(CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END * 10000 - (CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END % 10000) * (10000 - CASE WHEN ABS(CAST("payann" AS HUGEINT)) > 2147483648 THEN 2147483648 ELSE ABS(CAST("payann" AS HUGEINT)) END % 10000)) AS BIGINT)) AS "__p3", SUM("payann") AS "__p4" FROM "establishments";
