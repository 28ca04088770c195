# title: subquery with an expression in its select list
# error: DP104
SELECT SUM(pay) FROM (SELECT payann * 2 AS pay FROM establishments);

# title: subquery with a limit
# error: DP104
SELECT COUNT(*) FROM (SELECT * FROM establishments LIMIT 10);

# title: subquery with order by
# error: DP104
SELECT COUNT(*) FROM (SELECT * FROM establishments ORDER BY payann DESC);

# title: subquery inside a filtering subquery
# error: DP104
SELECT COUNT(*) FROM (SELECT * FROM establishments WHERE id IN (SELECT 1));

# title: cte used twice
# error: DP104
WITH t AS (SELECT * FROM establishments) SELECT COUNT(*) FROM t a JOIN t b ON a.id = b.id;

# title: cte never used
# error: DP104
WITH t AS (SELECT * FROM devices) SELECT COUNT(*) FROM establishments;

# title: cte used in a where subquery
# error: DP104
WITH t AS (SELECT id FROM establishments) SELECT COUNT(*) FROM establishments WHERE id IN (SELECT id FROM t);

# title: subquery joined to a table
# error: DP104
SELECT COUNT(*) FROM (SELECT * FROM establishments) e JOIN devices d ON e.id = d.user_id;

# title: column the subquery does not select
# error: DP203
SELECT SUM(payann) FROM (SELECT state FROM establishments);

# title: column of a cte qualified by the wrong name
# error: DP203
WITH t AS (SELECT * FROM establishments) SELECT COUNT(*) FROM t WHERE establishments.state = 'CA';

# title: select star over a filtering subquery
# error: DP108
SELECT * FROM (SELECT state FROM establishments WHERE employees > 5);

# title: private column out of a renaming cte
# error: DP201
WITH t AS (SELECT payann AS pay FROM establishments) SELECT pay FROM t;

# title: subquery reading a file
# error: DP107
SELECT COUNT(*) FROM (SELECT * FROM read_csv('x.csv'));

# title: subquery over a string path
# error: DP107
SELECT COUNT(*) FROM (SELECT * FROM 'x.csv');

# title: subquery over an undeclared table
# error: DP202
SELECT COUNT(*) FROM (SELECT * FROM _dpsql_demo_meta);

# title: subquery in where with in
# error: DP104
SELECT COUNT(*) FROM establishments WHERE id IN (SELECT user_id FROM devices);

# title: scalar subquery in where
# error: DP104
SELECT COUNT(*) FROM establishments WHERE payann > (SELECT 1);

# title: exists subquery
# error: DP104
SELECT COUNT(*) FROM establishments WHERE EXISTS (SELECT 1 FROM devices);

# title: scalar subquery in the select list
# error: DP104
SELECT COUNT(*), (SELECT COUNT(*) FROM devices) FROM establishments;

# title: lateral subquery
# error: DP104
SELECT COUNT(*) FROM LATERAL (SELECT 1);

# title: values in from
# error: DP104
SELECT COUNT(*) FROM (VALUES (1), (2)) AS t(x);

# title: recursive cte
# error: DP104
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r;

# title: inner join of two private tables
# error: DP217
SELECT COUNT(*) FROM establishments e JOIN devices d ON e.id = d.user_id;

# title: left join of two private tables
# error: DP217
SELECT COUNT(*) FROM establishments e LEFT JOIN paper_table1 p ON e.id = p.id;

# title: cross join
# error: DP105
SELECT COUNT(*) FROM establishments CROSS JOIN devices;

# title: comma join
# error: DP105
SELECT COUNT(*) FROM establishments, devices;

# title: self join
# error: DP217
SELECT COUNT(*) FROM establishments a JOIN establishments b USING (id);

# title: natural join
# error: DP105
SELECT COUNT(*) FROM paper_table1 NATURAL JOIN paper_table2;

# title: positional join
# error: DP105
SELECT COUNT(*) FROM establishments POSITIONAL JOIN devices;

# title: asof join
# error: DP105
SELECT COUNT(*) FROM establishments ASOF JOIN devices ON establishments.id >= devices.user_id;

# title: join to a file
# error: DP107
SELECT COUNT(*) FROM establishments JOIN read_csv('x.csv') r ON true;

# title: union
# error: DP103
SELECT COUNT(*) FROM establishments UNION SELECT COUNT(*) FROM devices;

# title: union all by name
# error: DP103
SELECT COUNT(*) FROM establishments UNION ALL BY NAME SELECT COUNT(*) FROM devices;

# title: intersect
# error: DP103
SELECT COUNT(*) FROM establishments INTERSECT SELECT COUNT(*) FROM devices;

# title: except
# error: DP103
SELECT COUNT(*) FROM establishments EXCEPT SELECT COUNT(*) FROM devices;

# title: window over a sum
# error: DP106
SELECT SUM(payann) OVER (PARTITION BY state) FROM establishments;

# title: row_number
# error: DP106
SELECT ROW_NUMBER() OVER () FROM establishments;

# title: rank in the select list of an aggregate query
# error: DP106
SELECT state, COUNT(*), RANK() OVER (ORDER BY COUNT(*)) FROM establishments GROUP BY state;

# title: lag
# error: DP106
SELECT LAG(payann) OVER (ORDER BY id) FROM establishments;

# title: named window
# error: DP106
SELECT COUNT(*) FROM establishments WINDOW w AS (ORDER BY id);

# title: qualify
# error: DP106
SELECT COUNT(*) FROM establishments QUALIFY ROW_NUMBER() OVER () = 1;
