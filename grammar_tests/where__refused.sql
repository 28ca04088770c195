# title: = ANY of an array that is not all literals
# error: DP110
SELECT COUNT(*) FROM establishments WHERE state = ANY(ARRAY[state, 'CA']);
