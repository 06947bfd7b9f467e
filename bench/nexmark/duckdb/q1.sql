SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid
