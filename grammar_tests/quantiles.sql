# title: median of a measure
# execute: true
SELECT MEDIAN(age) FROM persons;
SELECT LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons";

# title: median per public key
# execute: true
SELECT sex, MEDIAN(age) FROM persons GROUP BY sex;
SELECT "sex" AS "sex", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons" GROUP BY "sex";

# title: quantile_cont
# execute: true
SELECT state, QUANTILE_CONT(age, 0.9) AS p90 FROM persons GROUP BY state;
SELECT "state" AS "state", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons" GROUP BY "state";

# title: quantile_disc reads as the same quantile
# execute: true
SELECT QUANTILE_DISC(age, 0.25) FROM persons;
SELECT LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons";

# title: quantile alias
# execute: true
SELECT QUANTILE(age, 0.75) FROM persons;
SELECT LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons";

# title: approx_quantile
# execute: true
SELECT APPROX_QUANTILE(age, 0.5) FROM persons;
SELECT LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons";

# title: percentile_cont within group
# execute: true
SELECT sex, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age) FROM persons GROUP BY sex;
SELECT "sex" AS "sex", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons" GROUP BY "sex";

# title: percentile_disc within group descending asks for one minus q
# execute: true
SELECT PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY age DESC) FROM persons;
SELECT LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons";

# title: median and quantile_cont at one half share a primitive
# execute: true
SELECT MEDIAN(age), QUANTILE_CONT(age, 0.5) FROM persons;
SELECT LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons";

# title: quartiles beside a count and an average
# execute: true
SELECT sex, COUNT(*), AVG(age), QUANTILE_CONT(age, 0.25) AS q1, QUANTILE_CONT(age, 0.75) AS q3 FROM persons GROUP BY sex;
SELECT "sex" AS "sex", COUNT(*) AS "__p0", SUM("age") AS "__p1", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p2", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p3" FROM "persons" GROUP BY "sex";

# title: median in having and order by
# execute: true
SELECT state, MEDIAN(age) AS m FROM persons GROUP BY state HAVING MEDIAN(age) > 30 ORDER BY m DESC LIMIT 5;
SELECT "state" AS "state", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons" GROUP BY "state";

# title: median with a where filter
# execute: true
SELECT sex, MEDIAN(age) FROM persons WHERE state IN ('CA', 'TX') GROUP BY sex;
SELECT "sex" AS "sex", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons" WHERE "state" IN ('CA', 'TX') GROUP BY "sex";

# title: median per region of a joined public table
# execute: true
SELECT s.region, MEDIAN(p.age) FROM persons p JOIN states s ON p.state = s.code GROUP BY s.region;
SELECT "__j1_region" AS "__j1_region", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: median arithmetic
# execute: true
SELECT sex, MEDIAN(age) + 1 AS next_birthday FROM persons GROUP BY sex;
SELECT "sex" AS "sex", LIST_FILTER(MAP_ENTRIES(HISTOGRAM(TRY_CAST("age" AS BIGINT), '[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]'::BIGINT[])), LAMBDA e: e.value > 0) AS "__p0" FROM "persons" GROUP BY "sex";
