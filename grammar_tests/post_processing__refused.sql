
# title: FETCH FIRST with PERCENT
# error: DP110
SELECT state, COUNT(*) FROM establishments GROUP BY state FETCH FIRST 10 PERCENT ROWS ONLY;

# title: TOP n together with LIMIT
# error: DP110
SELECT TOP 3 state, COUNT(*) FROM establishments GROUP BY state LIMIT 2;
