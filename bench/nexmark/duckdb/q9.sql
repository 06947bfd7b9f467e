SELECT id, item_name, seller, category, auction, bidder, price, bid_date_time FROM (
    SELECT A.id, A.item_name, A.seller, A.category, B.auction, B.bidder, B.price,
           B.date_time AS bid_date_time,
           row_number() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
    FROM auction AS A, bid AS B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires) ranked
WHERE rownum <= 1
