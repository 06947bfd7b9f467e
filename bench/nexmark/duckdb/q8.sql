SELECT P.id, P.name, P.starttime
FROM (SELECT DISTINCT id, name, time_bucket(INTERVAL '10 seconds', date_time) AS starttime
      FROM person) AS P
JOIN (SELECT DISTINCT seller, time_bucket(INTERVAL '10 seconds', date_time) AS starttime
      FROM auction) AS A
ON P.id = A.seller AND P.starttime = A.starttime
