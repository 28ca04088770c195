-- SQL over released answers that dpsql refuses in phase 1, before anything is charged.

# title: outer query names a column the subquery does not return
# error: DP124
SELECT employees FROM (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state) t;

# title: outer query compares a released count with text
# error: DP124
SELECT state FROM (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state) t WHERE n > DATE '2020-01-01';

# title: cte of an aggregate read beside a private table
# error: DP127
WITH a AS (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state) SELECT COUNT(*) FROM a JOIN establishments e ON a.state = e.state;

# title: two aggregate subqueries
# error: DP127
SELECT COUNT(*) FROM (SELECT state, COUNT(*) FROM establishments GROUP BY state) a, (SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2) b;

# title: outer query reads a table function beside the released answer
# error: DP127
SELECT COUNT(*) FROM (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state) t JOIN range(10) r ON t.n = r.range;

# title: inner query refused as it would be alone
# error: DP206
SELECT COUNT(*) FROM (SELECT state, payann FROM establishments GROUP BY state, payann) t;

# title: series limit joined on a column that is not its group key
# error: DP126
SELECT naics2, COUNT(*) FROM establishments JOIN (SELECT naics2 AS naics2__, state AS s__, COUNT(*) AS c FROM establishments GROUP BY naics2, state ORDER BY c DESC LIMIT 5) AS sl ON naics2 = naics2__ GROUP BY naics2;

# title: series limit column used outside on
# error: DP126
SELECT naics2, mme_inner__, COUNT(*) FROM establishments JOIN (SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM establishments GROUP BY naics2 LIMIT 5) AS sl ON naics2 = naics2__ GROUP BY naics2, mme_inner__;

# title: series limit by a left join
# error: DP126
SELECT naics2, COUNT(*) FROM establishments LEFT JOIN (SELECT naics2 AS naics2__, COUNT(*) AS c FROM establishments GROUP BY naics2 LIMIT 5) AS sl ON naics2 = naics2__ GROUP BY naics2;

# title: series limit on a key the policy does not declare
# error: DP206
SELECT payann, COUNT(*) FROM establishments JOIN (SELECT payann AS p__, COUNT(*) AS c FROM establishments GROUP BY payann LIMIT 5) AS sl ON payann = p__ GROUP BY payann;

# title: series limit over a virtual dataset that computes a column
# error: DP126
SELECT naics2, COUNT(*) AS n FROM (SELECT naics2, employees * 2 AS e FROM establishments) AS virtual_table JOIN (SELECT naics2 AS naics2__, COUNT(*) AS m FROM (SELECT naics2, employees * 2 AS e FROM establishments) AS virtual_table GROUP BY naics2 ORDER BY m DESC LIMIT 5) AS series_limit ON naics2 = naics2__ GROUP BY naics2;

# title: series limit over a virtual dataset of a public table
# error: DP126
SELECT state, COUNT(*) AS n FROM (SELECT state FROM states) AS virtual_table JOIN (SELECT state AS s__, COUNT(*) AS m FROM establishments GROUP BY state ORDER BY m DESC LIMIT 5) AS series_limit ON state = s__ GROUP BY state;

# title: group others of an average
# error: DP133
SELECT CASE WHEN s.k__ IS NOT NULL THEN naics2 ELSE 'Others' END AS naics2, AVG(employees) AS a FROM establishments LEFT JOIN (SELECT naics2 AS k__, COUNT(*) AS m FROM establishments GROUP BY naics2 ORDER BY m DESC LIMIT 3) AS s ON naics2 = k__ GROUP BY CASE WHEN s.k__ IS NOT NULL THEN naics2 ELSE 'Others' END;

# title: group others with a having
# error: DP133
SELECT CASE WHEN s.k__ IS NOT NULL THEN naics2 ELSE 'Others' END AS naics2, COUNT(*) AS n FROM establishments LEFT JOIN (SELECT naics2 AS k__, COUNT(*) AS m FROM establishments GROUP BY naics2 ORDER BY m DESC LIMIT 3) AS s ON naics2 = k__ GROUP BY CASE WHEN s.k__ IS NOT NULL THEN naics2 ELSE 'Others' END HAVING COUNT(*) > 10;

# title: group others of a number key
# error: DP133
SELECT CASE WHEN s.a__ IS NOT NULL THEN age ELSE 'Others' END AS age, COUNT(*) AS n FROM persons LEFT JOIN (SELECT age AS a__, COUNT(*) AS m FROM persons GROUP BY age ORDER BY m DESC LIMIT 3) AS s ON age = a__ GROUP BY CASE WHEN s.a__ IS NOT NULL THEN age ELSE 'Others' END;

# title: group others whose case keeps another column
# error: DP126
SELECT CASE WHEN s.k__ IS NOT NULL THEN state ELSE 'Others' END AS naics2, COUNT(*) AS n FROM establishments LEFT JOIN (SELECT naics2 AS k__, COUNT(*) AS m FROM establishments GROUP BY naics2 ORDER BY m DESC LIMIT 3) AS s ON naics2 = k__ GROUP BY 1;

# title: parameters whose number does not match
# params: ["54"]
# error: DP118
SELECT COUNT(*) FROM (SELECT state, COUNT(*) AS n FROM establishments WHERE naics2 = ? GROUP BY state) AS t WHERE n > ?;
