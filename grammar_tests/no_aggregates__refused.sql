# title: select distinct with an aggregate
# error: DP111
SELECT DISTINCT state, COUNT(*) FROM establishments GROUP BY state;

# title: select distinct with group by
# error: DP111
SELECT DISTINCT state FROM establishments GROUP BY state;

# title: select distinct with having
# error: DP111
SELECT DISTINCT state FROM establishments HAVING COUNT(*) > 3;

# title: select distinct on
# error: DP111
SELECT DISTINCT ON (state) state FROM establishments;

# title: select distinct over a measure
# error: DP206
SELECT DISTINCT payann FROM establishments;

# title: select distinct over the privacy unit
# error: DP206
SELECT DISTINCT id FROM establishments;

# title: select distinct over a constant
# error: DP114
SELECT DISTINCT 1 FROM establishments;

# title: a key and a measure without an aggregate
# error: DP201
SELECT state, payann FROM establishments GROUP BY state;

# title: select distinct of a key and a measure
# error: DP206
SELECT DISTINCT state, employees FROM establishments;
