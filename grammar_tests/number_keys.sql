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
SELECT TRY(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END // 10 * 10) AS "__k0", [MAP_KEYS(HISTOGRAM(CASE WHEN TRY_CAST("age" AS BIGINT) IS NOT NULL THEN COALESCE(array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], list_reduce([0, 64, 32, 16, 8, 4, 2, 1], LAMBDA acc, s: acc + CASE WHEN array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], acc + s) < TRY_CAST("age" AS BIGINT) THEN s ELSE 0 END) + 1), 9223372036854775807) END)), MAP_VALUES(HISTOGRAM(CASE WHEN TRY_CAST("age" AS BIGINT) IS NOT NULL THEN COALESCE(array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], list_reduce([0, 64, 32, 16, 8, 4, 2, 1], LAMBDA acc, s: acc + CASE WHEN array_extract('[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[102], acc + s) < TRY_CAST("age" AS BIGINT) THEN s ELSE 0 END) + 1), 9223372036854775807) END))] AS "__p0"
FROM "persons"
GROUP BY TRY(CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END // 10 * 10);

# title: age groups with having and order by
# execute: true
SELECT age, COUNT(*) AS n FROM persons GROUP BY age HAVING COUNT(*) > 100 ORDER BY n DESC LIMIT 5;
SELECT CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END AS "age", COUNT(*) AS "__p0"
FROM "persons"
GROUP BY CASE WHEN "age" BETWEEN 0 AND 100 THEN "age" END;
