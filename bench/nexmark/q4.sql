-- Average price per category: the winning (highest) bid of each auction within its lifetime,
-- averaged by category.
CREATE MATERIALIZED VIEW q4_winning AS
SELECT A.id, A.category, max(B.price) AS final
FROM auction AS A, bid AS B
WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
GROUP BY A.id, A.category;
CREATE MATERIALIZED VIEW q4 AS SELECT category, avg(final) AS avg FROM q4_winning GROUP BY category;
