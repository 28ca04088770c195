-- Queries past dpsql's limits on the size of a query (dpsql/parse.py, docs/sql.md "Limits"),
-- refused before sqlglot parses them. tests/test_limits.py proves that a query just at each
-- limit is still answered, and the refusals of much larger ones (once RecursionErrors).

# title: 25 nested parentheses
# error: DP121
-- the limit is 24 levels of nesting
SELECT COUNT(*) FROM establishments WHERE (((((((((((((((((((((((((state = 'CA')))))))))))))))))))))))));

# title: 45 nested parentheses
# error: DP121
-- once a RecursionError from sqlglot's parser
SELECT COUNT(*) FROM establishments WHERE (((((((((((((((((((((((((((((((((((((((((((((state = 'CA')))))))))))))))))))))))))))))))))))))))))))));

# title: 25 nested functions
# error: DP121
SELECT COUNT(*) FROM establishments WHERE LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(LOWER(state))))))))))))))))))))))))) = 'ca';

# title: 25 nested CASE
# error: DP121
SELECT COUNT(*) FROM establishments WHERE CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN CASE WHEN naics2 = '72' THEN state = 'CA' ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END ELSE FALSE END;

# title: 25 NOTs in a row
# error: DP121
-- a prefix NOT nests what follows it, up to the next AND / OR
SELECT COUNT(*) FROM establishments WHERE NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT NOT state = 'CA';

# title: 25 casts in a row
# error: DP121
-- x::T nests like CAST(x AS T)
SELECT COUNT(*) FROM establishments WHERE state::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR::VARCHAR = 'CA';

# title: 201 chained additions
# error: DP121
-- the limit is 200 operators on one path of the expression
SELECT COUNT(*) FROM establishments WHERE payann > 1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1;

# title: 201 ORs
# error: DP121
-- 3,000 of them once raised a RecursionError in the rewrite (write state IN (...) instead)
SELECT state, COUNT(*) FROM establishments WHERE TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE GROUP BY state;

# title: OR chains add up through parentheses
# error: DP121
-- 100 ORs inside parentheses and 101 outside them lie on one path
SELECT state, COUNT(*) FROM establishments WHERE (TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE OR TRUE) OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE OR FALSE GROUP BY state;

# title: 201 concatenations in a GROUP BY key
# error: DP121
SELECT state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state || state AS k, COUNT(*) FROM establishments GROUP BY k;
