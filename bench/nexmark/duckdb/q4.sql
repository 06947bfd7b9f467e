SELECT category, avg(final) AS avg FROM (
    SELECT A.id, A.category, max(B.price) AS final
    FROM auction AS A, bid AS B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
    GROUP BY A.id, A.category) winning
GROUP BY category
