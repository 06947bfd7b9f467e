-- Average price per category: the winning (highest) bid of each auction within its lifetime,
-- averaged by category (RisingWave's form; the inner aggregate becomes a sub-view).
CREATE MATERIALIZED VIEW q4 AS
SELECT Q.category, avg(Q.final) AS avg
FROM (
    SELECT max(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
