# title: count and average of age by age, a column in two roles
# execute: true
SELECT age, COUNT(*), AVG(age) FROM persons GROUP BY age;
SELECT CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS "age", COUNT(*) AS "__p0", SUM("age") AS "__p1"
FROM "persons"
GROUP BY CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END;

# title: average age by sex, age a measure beside its key role
# execute: true
SELECT sex, AVG(age) FROM persons GROUP BY sex;
SELECT "sex" AS "sex", SUM("age") AS "__p0", COUNT(*) AS "__p1"
FROM "persons"
GROUP BY "sex";

# title: decades of age by floor
# execute: true
SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) FROM persons GROUP BY 1;
SELECT FLOOR(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END / 10) * 10 AS "__k0", COUNT(*) AS "__p0"
FROM "persons"
GROUP BY FLOOR(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END / 10) * 10;

# title: decades of age by integer division
# execute: true
SELECT age // 10 * 10 AS decade, COUNT(*), AVG(age) FROM persons GROUP BY decade;
SELECT TRY(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END // 10 * 10) AS "__k0", COUNT(*) AS "__p0", SUM("age") AS "__p1"
FROM "persons"
GROUP BY TRY(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END // 10 * 10);

# title: width_bucket of age
# execute: true
SELECT WIDTH_BUCKET(age, 0, 100, 10) AS bucket, COUNT(*) FROM persons GROUP BY 1;
SELECT CASE WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END < 0 THEN 0 WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END >= 100 THEN 11 ELSE TRY_CAST(FLOOR((TRY_CAST(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS DOUBLE) - 0) * 10 / 100) + 1 AS BIGINT) END AS "__k0", COUNT(*) AS "__p0"
FROM "persons"
GROUP BY CASE WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END < 0 THEN 0 WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END >= 100 THEN 11 ELSE TRY_CAST(FLOOR((TRY_CAST(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS DOUBLE) - 0) * 10 / 100) + 1 AS BIGINT) END;

# title: width_bucket with reversed bounds
# execute: true
SELECT WIDTH_BUCKET(age, 100, 0, 4) AS bucket, COUNT(*) FROM persons GROUP BY 1;
SELECT CASE WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END > 100 THEN 0 WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END <= 0 THEN 5 ELSE TRY_CAST(FLOOR((100 - TRY_CAST(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS DOUBLE)) * 4 / 100) + 1 AS BIGINT) END AS "__k0", COUNT(*) AS "__p0"
FROM "persons"
GROUP BY CASE WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END > 100 THEN 0 WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END <= 0 THEN 5 ELSE TRY_CAST(FLOOR((100 - TRY_CAST(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS DOUBLE)) * 4 / 100) + 1 AS BIGINT) END;

# title: case bands of age
# execute: true
SELECT CASE WHEN age < 18 THEN 'child' WHEN age < 65 THEN 'adult' ELSE 'senior' END AS band, COUNT(*), AVG(age) FROM persons GROUP BY 1;
SELECT CASE WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END < 18 THEN 'child' WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END < 65 THEN 'adult' ELSE 'senior' END AS "__k0", COUNT(*) AS "__p0", SUM("age") AS "__p1"
FROM "persons"
GROUP BY CASE WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END < 18 THEN 'child' WHEN CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END < 65 THEN 'adult' ELSE 'senior' END;

# title: age beside a public keyset key
# execute: true
SELECT state, age, COUNT(*) FROM persons WHERE age BETWEEN 60 AND 65 GROUP BY state, age;
SELECT "state" AS "state", CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS "age", COUNT(*) AS "__p0"
FROM "persons"
WHERE "age" BETWEEN 60 AND 65
GROUP BY "state", CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END;

# title: median of age by age decade
# execute: true
SELECT age // 10 * 10 AS decade, MEDIAN(age) FROM persons GROUP BY 1;
WITH __q1 AS (SELECT TRY(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END // 10 * 10) AS "__k0", TRY_CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS INTEGER) AS __qw FROM "persons")
SELECT "__k0", LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS "__p0"
FROM __q1
GROUP BY "__k0";

# title: age groups with having and order by
# execute: true
SELECT age, COUNT(*) AS n FROM persons GROUP BY age HAVING COUNT(*) > 100 ORDER BY n DESC LIMIT 5;
SELECT CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS "age", COUNT(*) AS "__p0"
FROM "persons"
GROUP BY CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END;
