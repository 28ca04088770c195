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
WITH __q1 AS (SELECT TRY(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END // 10 * 10) AS "__k0", CAST(CASE WHEN "age" < -1 THEN -1 WHEN "age" > 101 THEN 101 ELSE "age" END AS BIGINT) AS __qw FROM "persons"), __q2 AS (SELECT "__k0", __qw, array_extract('[1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 16, 17, 17, 17, 17, 18, 18, 18, 18, 19, 19, 19, 19, 20, 20, 20, 20, 21, 21, 21, 21, 22, 22, 22, 22, 23, 23, 23, 23, 24, 24, 24, 24, 25, 25, 25, 25, 26, 26, 26, 26, 27, 27, 27, 28, 28, 28, 28, 29, 29, 29, 29, 30, 30, 30, 30, 31, 31, 31, 31, 32, 32, 32, 32, 33, 33, 33, 33, 34, 34, 34, 34, 35, 35, 35, 35, 36, 36, 36, 36, 37, 37, 37, 37, 38, 38, 38, 38, 39, 39, 39, 39, 40, 40, 40, 40, 41, 41, 41, 41, 42, 42, 42, 42, 43, 43, 43, 43, 44, 44, 44, 44, 45, 45, 45, 45, 46, 46, 46, 46, 47, 47, 47, 47, 48, 48, 48, 48, 49, 49, 49, 49, 50, 50, 50, 50, 51, 51, 51, 51, 52, 52, 52, 52, 53, 53, 53, 54, 54, 54, 54, 55, 55, 55, 55, 56, 56, 56, 56, 57, 57, 57, 57, 58, 58, 58, 58, 59, 59, 59, 59, 60, 60, 60, 60, 61, 61, 61, 61, 62, 62, 62, 62, 63, 63, 63, 63, 64, 64, 64, 64, 65, 65, 65, 65, 66, 66, 66, 66, 67, 67, 67, 67, 68, 68, 68, 68, 69, 69, 69, 69, 70, 70, 70, 70, 71, 71, 71, 71, 72, 72, 72, 72, 73, 73, 73, 73, 74, 74, 74, 74, 75, 75, 75, 75, 76, 76, 76, 76, 77, 77, 77, 77, 78, 78, 78, 79, 79, 79, 79, 80, 80, 80, 80, 81, 81, 81, 81, 82, 82, 82, 82, 83, 83, 83, 83, 84, 84, 84, 84, 85, 85, 85, 85, 86, 86, 86, 86, 87, 87, 87, 87, 88, 88, 88, 88, 89, 89, 89, 89, 90, 90, 90, 90, 91, 91, 91, 91, 92, 92, 92, 92, 93, 93, 93, 93, 94, 94, 94, 94, 95, 95, 95, 95, 96, 96, 96, 96, 97, 97, 97, 97, 98, 98, 98, 98, 99, 99, 99, 99, 100, 100, 100, 100, 101, 101, 101, 101, 102, 102, 102, 102, 102, 102, 102, 102]'::BIGINT[405], CAST(LEAST(GREATEST(FLOOR((CAST(__qw AS DOUBLE) - -1) * 3.9607843137254903) + 1, 1), 405) AS BIGINT)) AS __qt FROM __q1), __q3 AS (SELECT "__k0", __qw, CASE WHEN array_extract('[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 102]'::BIGINT[102], __qt) <= __qw THEN array_extract('[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103]'::BIGINT[102], __qt) ELSE __qt END AS __qt FROM __q2), __q4 AS (SELECT "__k0", __qw, array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], __qt) AS __qlo, array_extract('[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 102]'::BIGINT[102], __qt) AS __qhi, array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 9223372036854775807]'::BIGINT[102], __qt) AS __qk FROM __q3), __q5 AS (SELECT "__k0", CASE WHEN __qw IS NULL THEN NULL WHEN __qlo <= __qw AND __qw < __qhi THEN CASE WHEN __qlo = __qw THEN __qw ELSE __qk END ELSE CASE WHEN __qw IS NOT NULL THEN COALESCE(array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], list_reduce([0, 64, 32, 16, 8, 4, 2, 1], LAMBDA acc, s: acc + CASE WHEN array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], acc + s) < __qw THEN s ELSE 0 END) + 1), 9223372036854775807) END END AS __qb FROM __q4), __q6 AS (SELECT "__k0", __qb, COUNT(*) AS __qn FROM __q5 GROUP BY "__k0", __qb)
SELECT "__k0", [LIST(__qb ORDER BY __qb) FILTER (WHERE __qb IS NOT NULL), LIST(__qn ORDER BY __qb) FILTER (WHERE __qb IS NOT NULL)] AS "__p0"
FROM __q6
GROUP BY "__k0";

# title: age groups with having and order by
# execute: true
SELECT age, COUNT(*) AS n FROM persons GROUP BY age HAVING COUNT(*) > 100 ORDER BY n DESC LIMIT 5;
SELECT CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS "age", COUNT(*) AS "__p0"
FROM "persons"
GROUP BY CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END;
