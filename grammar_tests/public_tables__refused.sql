-- Statements that mention public tables but could read a private one, or that no proof covers:
-- never answered as public (tests/test_grammar.py checks it for every refused case of the corpus);
-- the private pipeline refuses them with the code shown.

# title: public rows filtered by a private subquery
# error: DP104
SELECT * FROM states WHERE code IN (SELECT state FROM establishments);

# title: private scalar subquery in a public select
# error: DP104
SELECT (SELECT SUM(payann) FROM establishments) FROM states;

# title: EXISTS over private rows
# error: DP104
SELECT * FROM states WHERE EXISTS (SELECT 1 FROM establishments WHERE state = code AND payann > 1000000);

# title: public joined to private rows
# error: DP108
SELECT * FROM states s JOIN establishments e ON e.state = s.code;

# title: private column through a public join
# error: DP105
SELECT s.region, e.payann FROM states s JOIN establishments e ON e.state = s.code;

# title: CTE named like a public table over private rows
# error: DP108
WITH states AS (SELECT * FROM establishments) SELECT * FROM states;

# title: CTE that reads the table it shadows
# error: DP108
WITH establishments AS (SELECT * FROM establishments) SELECT * FROM establishments;

# title: CTE of a subquery seen from outside it
# error: DP105
SELECT * FROM (WITH establishments AS (SELECT * FROM states) SELECT * FROM establishments) a, establishments;

# title: CTE that reads a later CTE
# error: DP108
WITH a AS (SELECT * FROM b), b AS (SELECT * FROM states) SELECT * FROM a;

# title: recursive CTE beside a public table
# error: DP104
WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r, states;

# title: union with private rows
# error: DP103
SELECT code FROM states UNION SELECT state FROM establishments;

# title: lateral subquery over private rows
# error: DP105
SELECT * FROM states, LATERAL (SELECT payann FROM establishments WHERE state = code LIMIT 1);

# title: main-qualified private table
# error: DP108
SELECT * FROM main.establishments;

# title: quoted private table in another case
# error: DP108
SELECT * FROM "Establishments";

# title: public table in another catalog
# error: DP108
SELECT * FROM other.main.states;

# title: public table in another schema
# error: DP108
SELECT * FROM temp.main.states;

# title: file read beside a public table
# error: DP105
SELECT * FROM states, read_csv('x.csv');

# title: query table function
# error: DP107
SELECT * FROM query('SELECT * FROM establishments');

# title: query_table table function
# error: DP107
SELECT * FROM query_table('establishments');

# title: quoted public table name read as a file
# error: DP107
SELECT * FROM 'states';

# title: DuckDB catalog function beside a public table
# error: DP105
SELECT * FROM duckdb_tables(), states;

# title: sample of a public table
# error: DP108
SELECT * FROM states TABLESAMPLE 10%;

# title: time travel on a public table
# error: DP108
SELECT * FROM states AT (VERSION => 1);
