# title: a private column in the select list
# error: DP201
SELECT payann FROM establishments;

# title: raw rows of the devices table
# error: DP201
SELECT user_id, latency_ms FROM devices;

# title: a key without group by
# error: DP201
SELECT state, COUNT(*) FROM establishments;

# title: a measure next to its aggregate
# error: DP201
SELECT payann, SUM(payann) FROM establishments GROUP BY state;

# title: a column added to an aggregate
# error: DP201
SELECT SUM(payann) + payann FROM establishments;

# title: a private column in having
# error: DP201
SELECT state, COUNT(*) FROM establishments GROUP BY state HAVING payann > 10;

# title: a private column in order by
# error: DP201
SELECT state, COUNT(*) FROM establishments GROUP BY state ORDER BY employees;

# title: a key not grouped in order by
# error: DP201
SELECT state, COUNT(*) FROM establishments GROUP BY state ORDER BY naics2;

# title: only literals
# error: DP201
SELECT 1 FROM establishments;

# title: select star of a private table
# error: DP108
SELECT * FROM establishments;

# title: select star next to an aggregate
# error: DP108
SELECT *, COUNT(*) FROM establishments;

# title: select qualified star
# error: DP108
SELECT e.* FROM establishments e;

# title: from without select
# error: DP108
FROM establishments;

# title: no from clause
# error: DP202
SELECT COUNT(*);

# title: unknown table
# error: DP202
SELECT COUNT(*) FROM nope;

# title: the metadata table of the demo
# error: DP202
SELECT COUNT(*) FROM _dpsql_demo_meta;

# title: a table of another catalog
# error: DP202
SELECT COUNT(*) FROM other.main.establishments;

# title: information schema
# error: DP202
SELECT COUNT(*) FROM information_schema.tables;

# title: duckdb system table
# error: DP202
SELECT COUNT(*) FROM duckdb_settings;

# title: unknown column in an aggregate
# error: DP203
SELECT SUM(nope) FROM establishments;

# title: unknown column in where
# error: DP203
SELECT COUNT(*) FROM establishments WHERE nope = 1;

# title: unknown qualifier
# error: DP203
SELECT COUNT(*) FROM establishments WHERE x.state = 'CA';

# title: table name after an alias
# error: DP203
SELECT COUNT(*) FROM establishments e WHERE establishments.state = 'CA';

# title: a column of another table
# error: DP203
SELECT COUNT(*) FROM devices WHERE state = 'CA';

# title: group by a column that is not a key
# error: DP206
SELECT firm_id, COUNT(*) FROM establishments GROUP BY firm_id;

# title: group by a measure
# error: DP206
SELECT payann, COUNT(*) FROM establishments GROUP BY payann;

# title: group by the privacy unit
# error: DP206
SELECT id, COUNT(*) FROM establishments GROUP BY id;

# title: group by an ordinal out of range
# error: DP114
SELECT state, COUNT(*) FROM establishments GROUP BY 3;

# title: group by an ordinal pointing at an aggregate
# error: DP114
SELECT COUNT(*), state FROM establishments GROUP BY 1;

# title: group by all
# error: DP114
SELECT state, COUNT(*) FROM establishments GROUP BY ALL;

# title: group by rollup
# error: DP114
SELECT state, COUNT(*) FROM establishments GROUP BY ROLLUP (state);

# title: group by cube
# error: DP114
SELECT state, COUNT(*) FROM establishments GROUP BY CUBE (state, naics2);

# title: group by grouping sets
# error: DP114
SELECT state, COUNT(*) FROM establishments GROUP BY GROUPING SETS ((state), ());

# title: limit a string
# error: DP113
SELECT COUNT(*) FROM establishments LIMIT 'ten';

# title: limit negative
# error: DP113
SELECT COUNT(*) FROM establishments LIMIT -1;

# title: limit fractional
# error: DP113
SELECT COUNT(*) FROM establishments LIMIT 1.5;

# title: limit percent
# error: DP113
SELECT COUNT(*) FROM establishments LIMIT 10%;

# title: limit an expression
# error: DP113
SELECT COUNT(*) FROM establishments LIMIT 1 + 1;

# title: offset not a number
# error: DP113
SELECT COUNT(*) FROM establishments LIMIT 1 OFFSET 'x';

# title: unknown function in where
# error: DP110
SELECT COUNT(*) FROM establishments WHERE my_udf(state);

# title: getenv
# error: DP110
SELECT COUNT(*) FROM establishments WHERE getenv('HOME') = 'x';

# title: current_setting
# error: DP110
SELECT COUNT(*) FROM establishments WHERE current_setting('threads') = 1;

# title: random
# error: DP110
SELECT COUNT(*) FROM establishments WHERE random() < 0.5;

# title: a text column ordered against a number
# error: DP110
SELECT COUNT(*) FROM establishments WHERE naics2 > 50;

# title: a text column between two numbers
# error: DP110
SELECT COUNT(*) FROM devices WHERE device_model BETWEEN 1 AND 5;

# title: a number ordered against a text column
# error: DP110
SELECT COUNT(*) FROM establishments WHERE -1 < county AND employees > 1;

# title: regular expression
# error: DP110
SELECT COUNT(*) FROM establishments WHERE regexp_matches(state, 'C.');

# title: similar to
# error: DP110
SELECT COUNT(*) FROM establishments WHERE state SIMILAR TO 'C.';

# title: tablesample
# error: DP110
SELECT COUNT(*) FROM establishments TABLESAMPLE 10%;

# title: using sample
# error: DP110
SELECT COUNT(*) FROM establishments USING SAMPLE 10;

# title: column aliases on the table
# error: DP110
SELECT COUNT(*) FROM establishments AS e(a, b);

# title: pivot in from
# error: DP110
SELECT COUNT(*) FROM establishments PIVOT (SUM(payann) FOR state IN ('CA'));

# title: a parameter without a value
# error: DP118
SELECT COUNT(*) FROM establishments WHERE state = ?;

# title: a numbered parameter
# error: DP118
SELECT COUNT(*) FROM establishments WHERE state = $1;

# title: group by an expression of a measure
# error: DP206
SELECT COUNT(*) FROM establishments GROUP BY employees > 100;

# title: group by a case over a measure
# error: DP206
SELECT CASE WHEN payann > 1000 THEN 'big' ELSE 'small' END AS size, COUNT(*) FROM establishments GROUP BY size;

# title: group by an expression of a key and a non-key
# error: DP206
SELECT COUNT(*) FROM establishments GROUP BY state || firm_id;

# title: group by an expression with an aggregate
# error: DP114
SELECT COUNT(*) FROM establishments GROUP BY COUNT(*) + 1;

# title: group by a string constant
# error: DP114
SELECT COUNT(*) FROM establishments GROUP BY 'all';

# title: group by an expression but select its column
# error: DP201
SELECT state, COUNT(*) FROM establishments GROUP BY LOWER(state);

# title: group by an expression of the privacy unit
# error: DP206
SELECT COUNT(*) FROM establishments GROUP BY id % 10;

# title: a text column equal to a number (each row's text would be cast, slowly, in TRY)
# error: DP110
SELECT COUNT(*) FROM establishments WHERE state = 5 OR employees > 3;

# title: a text column compared with a number in a list
# error: DP110
SELECT COUNT(*) FROM establishments WHERE county IN (6001, 6003);

# title: a text column not equal to a number
# error: DP110
SELECT COUNT(*) FROM establishments WHERE county <> 6001;

# title: text column equal to a number, or in a list of numbers
# error: DP110
SELECT COUNT(*) FROM establishments WHERE naics2 = 72 OR naics2 IN (11, 21);
