# title: monthly count of a date key
# execute: true
SELECT DATE_TRUNC('month', opened) AS month, COUNT(*) FROM establishments GROUP BY 1;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: yearly sum by EXTRACT
# execute: true
SELECT EXTRACT(year FROM opened) AS year, SUM(payann) FROM establishments GROUP BY EXTRACT(year FROM opened);
SELECT TRY(EXTRACT(YEAR FROM CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", SUM("payann") AS "__p0" FROM "establishments" GROUP BY TRY(EXTRACT(YEAR FROM CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: yearly count by date_part
# execute: true
SELECT date_part('year', opened) AS year, COUNT(*) FROM establishments GROUP BY year;
SELECT TRY(DATE_PART('year', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(DATE_PART('year', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: year and month by strftime
# execute: true
SELECT strftime(opened, '%Y-%m') AS ym, COUNT(*) FROM establishments GROUP BY ym;
SELECT TRY(STRFTIME(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END, '%Y-%m')) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(STRFTIME(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END, '%Y-%m'));

# title: year and month as two keys
# execute: true
SELECT year(opened) AS y, month(opened) AS m, COUNT(*) FROM establishments GROUP BY 1, 2;
SELECT TRY(YEAR(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", TRY(MONTH(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k1", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(YEAR(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)), TRY(MONTH(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: quarter of year beside a public key
# execute: true
SELECT naics2, quarter(opened) AS q, AVG(employees) FROM establishments GROUP BY naics2, q;
SELECT "naics2" AS "naics2", TRY(QUARTER(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k1", SUM("employees") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2", TRY(QUARTER(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: the date key itself
# execute: true
SELECT opened, COUNT(*) FROM establishments WHERE opened >= DATE '2024-12-01' GROUP BY opened;
SELECT TRY(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END) AS "opened", COUNT(*) AS "__p0" FROM "establishments" WHERE "opened" >= TRY_CAST('2024-12-01' AS DATE) GROUP BY TRY(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END);

# title: WHERE on a date range
# execute: true
SELECT naics2, COUNT(*) FROM establishments WHERE opened BETWEEN DATE '2020-01-01' AND DATE '2020-12-31' GROUP BY naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" WHERE "opened" BETWEEN TRY_CAST('2020-01-01' AS DATE) AND TRY_CAST('2020-12-31' AS DATE) GROUP BY "naics2";

# title: WHERE comparing a date with a string
# execute: true
SELECT state, SUM(payann) FROM establishments WHERE opened < '2000-01-01' GROUP BY state;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" WHERE TRY("opened" < '2000-01-01') GROUP BY "state";

# title: superset month grain
# execute: true
SELECT DATE_TRUNC('month', opened) AS opened, COUNT(*) AS count FROM establishments GROUP BY DATE_TRUNC('month', opened) ORDER BY count DESC LIMIT 10000;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: superset year grain with a filter on the range
# execute: true
SELECT DATE_TRUNC('year', opened) AS __timestamp, SUM(payann) AS "SUM(payann)" FROM establishments WHERE opened >= '2015-01-01' AND opened < '2025-01-01' GROUP BY DATE_TRUNC('year', opened) LIMIT 50000;
SELECT TRY(DATE_TRUNC('YEAR', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", SUM("payann") AS "__p0" FROM "establishments" WHERE TRY("opened" >= '2015-01-01') AND TRY("opened" < '2025-01-01') GROUP BY TRY(DATE_TRUNC('YEAR', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: superset week starting sunday
# execute: true
SELECT DATE_TRUNC('week', opened + INTERVAL '1 day') - INTERVAL '1 day' AS __timestamp, COUNT(*) AS count FROM establishments GROUP BY DATE_TRUNC('week', opened + INTERVAL '1 day') - INTERVAL '1 day';
SELECT TRY(DATE_TRUNC('WEEK', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END + INTERVAL '1' DAY) - INTERVAL '1' DAY) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(DATE_TRUNC('WEEK', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END + INTERVAL '1' DAY) - INTERVAL '1' DAY);

# title: metabase month grain
# execute: true
SELECT date_trunc('month', "main"."establishments"."opened") AS "opened", count(*) AS "count" FROM "main"."establishments" GROUP BY date_trunc('month', "main"."establishments"."opened") ORDER BY date_trunc('month', "main"."establishments"."opened") ASC;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: metabase week grain adjusted to sunday
# execute: true
SELECT (date_trunc('week', ("main"."establishments"."opened" + INTERVAL '1 day')) + INTERVAL '-1 day') AS "opened", count(*) AS "count" FROM "main"."establishments" GROUP BY (date_trunc('week', ("main"."establishments"."opened" + INTERVAL '1 day')) + INTERVAL '-1 day') ORDER BY 1 ASC;
SELECT TRY(DATE_TRUNC('WEEK', (CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END + INTERVAL '1' DAY)) + INTERVAL '-1' DAY) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(DATE_TRUNC('WEEK', (CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END + INTERVAL '1' DAY)) + INTERVAL '-1' DAY);

# title: metabase day of week
# execute: true
SELECT (((dayofweek("main"."establishments"."opened") + 1) % 7) + 1) AS "opened", count(*) AS "count" FROM "main"."establishments" GROUP BY 1 ORDER BY 1 ASC;
SELECT TRY(((DAYOFWEEK(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END) + 1) % 7) + 1) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(((DAYOFWEEK(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END) + 1) % 7) + 1);

# title: metabase month of year
# execute: true
SELECT month("main"."establishments"."opened") AS "opened", sum("main"."establishments"."payann") AS "sum" FROM "main"."establishments" GROUP BY month("main"."establishments"."opened") ORDER BY month("main"."establishments"."opened") ASC;
SELECT TRY(MONTH(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", SUM("payann") AS "__p0" FROM "establishments" GROUP BY TRY(MONTH(CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: timestamp key by day
# execute: true
SELECT DATE_TRUNC('day', first_seen) AS day, COUNT(*), AVG(latency_ms) FROM devices GROUP BY 1;
SELECT TRY(DATE_TRUNC('DAY', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END)) AS "__k0", COUNT(*) AS "__p0", SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p1" FROM "devices" GROUP BY TRY(DATE_TRUNC('DAY', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END));

# title: timestamp key by its declared grain
# execute: true
SELECT date_trunc('hour', first_seen) AS hour, COUNT(*) FROM devices GROUP BY 1;
SELECT TRY(DATE_TRUNC('HOUR', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END)) AS "__k0", COUNT(*) AS "__p0" FROM "devices" GROUP BY TRY(DATE_TRUNC('HOUR', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END));

# title: timestamp key as a date
# execute: true
SELECT CAST(first_seen AS DATE) AS day, COUNT(*) FROM devices GROUP BY 1;
SELECT TRY(TRY_CAST(CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END AS DATE)) AS "__k0", COUNT(*) AS "__p0" FROM "devices" GROUP BY TRY(TRY_CAST(CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END AS DATE));

# title: hour of day of a timestamp key
# execute: true
SELECT EXTRACT(hour FROM first_seen) AS h, COUNT(*) FROM devices GROUP BY 1;
SELECT TRY(EXTRACT(HOUR FROM CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END)) AS "__k0", COUNT(*) AS "__p0" FROM "devices" GROUP BY TRY(EXTRACT(HOUR FROM CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END));

# title: metabase hour of day
# execute: true
SELECT hour("main"."devices"."first_seen") AS "first_seen", count(*) AS "count" FROM "main"."devices" GROUP BY hour("main"."devices"."first_seen") ORDER BY 1 ASC;
SELECT TRY(HOUR(CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END)) AS "__k0", COUNT(*) AS "__p0" FROM "devices" GROUP BY TRY(HOUR(CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END));

# title: timestamp shifted by whole hours
# execute: true
SELECT date_trunc('day', first_seen - INTERVAL 5 HOUR) AS local_day, COUNT(*) FROM devices GROUP BY 1;
SELECT TRY(DATE_TRUNC('DAY', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END - INTERVAL '5' HOUR)) AS "__k0", COUNT(*) AS "__p0" FROM "devices" GROUP BY TRY(DATE_TRUNC('DAY', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END - INTERVAL '5' HOUR));

# title: strftime of a timestamp at the hour
# execute: true
SELECT strftime(first_seen, '%Y-%m-%d %H') AS h, COUNT(*) FROM devices GROUP BY 1;
SELECT TRY(STRFTIME(CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END, '%Y-%m-%d %H')) AS "__k0", COUNT(*) AS "__p0" FROM "devices" GROUP BY TRY(STRFTIME(CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END, '%Y-%m-%d %H'));

# title: superset time range as postgres writes it
# execute: true
SELECT DATE_TRUNC('month', opened) AS opened, COUNT(*) AS count FROM establishments WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2020-01-01', 'YYYY-MM-DD') GROUP BY DATE_TRUNC('month', opened) LIMIT 10000;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" WHERE TRY("opened" >= CAST(STRPTIME('2015-01-01', '%Y-%m-%d') AS DATE)) AND TRY("opened" < CAST(STRPTIME('2020-01-01', '%Y-%m-%d') AS DATE)) GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: postgres timestamp range filter
# execute: true
SELECT DATE_TRUNC('day', first_seen) AS __timestamp, AVG(latency_ms) AS avg_latency FROM devices WHERE first_seen >= TO_TIMESTAMP('2024-03-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') AND first_seen < TO_TIMESTAMP('2024-04-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') GROUP BY DATE_TRUNC('day', first_seen);
SELECT TRY(DATE_TRUNC('DAY', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END)) AS "__k0", SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p0", COUNT(*) AS "__p1" FROM "devices" WHERE TRY("first_seen" >= STRPTIME('2024-03-01 00:00:00.000000', '%Y-%m-%d %H:%M:%S.%f')) AND TRY("first_seen" < STRPTIME('2024-04-01 00:00:00.000000', '%Y-%m-%d %H:%M:%S.%f')) GROUP BY TRY(DATE_TRUNC('DAY', CASE WHEN "first_seen" >= CAST('2024-01-01 00:00:00' AS TIMESTAMP) AND "first_seen" < CAST('2025-01-01 00:00:00' AS TIMESTAMP) THEN "first_seen" END));

# title: WHERE on a timestamp
# execute: true
SELECT device_model, COUNT(*) FROM devices WHERE first_seen >= TIMESTAMP '2024-06-01 00:00:00' GROUP BY device_model;
SELECT "device_model" AS "device_model", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "devices" WHERE "first_seen" >= TRY_CAST('2024-06-01 00:00:00' AS TIMESTAMP) GROUP BY "device_model";
