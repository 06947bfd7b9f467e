-- Local item suggestion: sellers in some states of auctions in one category.
CREATE MATERIALIZED VIEW q3 AS
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'or' OR P.state = 'id' OR P.state = 'ca');
