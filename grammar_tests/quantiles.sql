# title: median of a measure
# execute: true
SELECT MEDIAN(age) FROM persons;
WITH __q1 AS (SELECT TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1;

# title: median per public key
# execute: true
SELECT sex, MEDIAN(age) FROM persons GROUP BY sex;
WITH __q1 AS (SELECT "sex" AS "sex", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT "sex", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "sex";

# title: quantile_cont
# execute: true
SELECT state, QUANTILE_CONT(age, 0.9) AS p90 FROM persons GROUP BY state;
WITH __q1 AS (SELECT "state" AS "state", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT "state", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "state";

# title: quantile_disc reads as the same quantile
# execute: true
SELECT QUANTILE_DISC(age, 0.25) FROM persons;
WITH __q1 AS (SELECT TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1;

# title: quantile alias
# execute: true
SELECT QUANTILE(age, 0.75) FROM persons;
WITH __q1 AS (SELECT TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1;

# title: approx_quantile
# execute: true
SELECT APPROX_QUANTILE(age, 0.5) FROM persons;
WITH __q1 AS (SELECT TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1;

# title: percentile_cont within group
# execute: true
SELECT sex, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age) FROM persons GROUP BY sex;
WITH __q1 AS (SELECT "sex" AS "sex", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT "sex", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "sex";

# title: percentile_disc within group descending asks for one minus q
# execute: true
SELECT PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY age DESC) FROM persons;
WITH __q1 AS (SELECT TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1;

# title: median and quantile_cont at one half share a primitive
# execute: true
SELECT MEDIAN(age), QUANTILE_CONT(age, 0.5) FROM persons;
WITH __q1 AS (SELECT TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1;

# title: quartiles beside a count and an average
# execute: true
SELECT sex, COUNT(*), AVG(age), QUANTILE_CONT(age, 0.25) AS q1, QUANTILE_CONT(age, 0.75) AS q3 FROM persons GROUP BY sex;
SELECT "sex" AS "sex", COUNT(*) AS "__p0", SUM("age") AS "__p1", [MAP_KEYS(HISTOGRAM(CASE WHEN TRY_CAST("age" AS BIGINT) IS NOT NULL THEN COALESCE(array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], list_reduce([0, 64, 32, 16, 8, 4, 2, 1], LAMBDA acc, s: acc + CASE WHEN array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], acc + s) < TRY_CAST("age" AS BIGINT) THEN s ELSE 0 END) + 1), 9223372036854775807) END)), MAP_VALUES(HISTOGRAM(CASE WHEN TRY_CAST("age" AS BIGINT) IS NOT NULL THEN COALESCE(array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], list_reduce([0, 64, 32, 16, 8, 4, 2, 1], LAMBDA acc, s: acc + CASE WHEN array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], acc + s) < TRY_CAST("age" AS BIGINT) THEN s ELSE 0 END) + 1), 9223372036854775807) END))] AS "__p2", [MAP_KEYS(HISTOGRAM(CASE WHEN TRY_CAST("age" AS BIGINT) IS NOT NULL THEN COALESCE(array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], list_reduce([0, 64, 32, 16, 8, 4, 2, 1], LAMBDA acc, s: acc + CASE WHEN array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], acc + s) < TRY_CAST("age" AS BIGINT) THEN s ELSE 0 END) + 1), 9223372036854775807) END)), MAP_VALUES(HISTOGRAM(CASE WHEN TRY_CAST("age" AS BIGINT) IS NOT NULL THEN COALESCE(array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], list_reduce([0, 64, 32, 16, 8, 4, 2, 1], LAMBDA acc, s: acc + CASE WHEN array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], acc + s) < TRY_CAST("age" AS BIGINT) THEN s ELSE 0 END) + 1), 9223372036854775807) END))] AS "__p3"
FROM "persons"
GROUP BY "sex";

# title: median in having and order by
# execute: true
SELECT state, MEDIAN(age) AS m FROM persons GROUP BY state HAVING MEDIAN(age) > 30 ORDER BY m DESC LIMIT 5;
WITH __q1 AS (SELECT "state" AS "state", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT "state", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "state";

# title: median with a where filter
# execute: true
SELECT sex, MEDIAN(age) FROM persons WHERE state IN ('CA', 'TX') GROUP BY sex;
WITH __q1 AS (SELECT "sex" AS "sex", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons" WHERE "state" IN ('CA', 'TX'))
SELECT "sex", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "sex";

# title: median per region of a joined public table
# execute: true
SELECT s.region, MEDIAN(p.age) FROM persons p JOIN states s ON p.state = s.code GROUP BY s.region;
WITH __q1 AS (SELECT "__j1_region" AS "__j1_region", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code")
SELECT "__j1_region", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "__j1_region";

# title: median arithmetic
# execute: true
SELECT sex, MEDIAN(age) + 1 AS next_birthday FROM persons GROUP BY sex;
WITH __q1 AS (SELECT "sex" AS "sex", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT "sex", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "sex";
