{{ config(materialized='table') }}
select customer, count(*) as orders, sum(amount) as total
from {{ ref('orders_seed') }}
group by customer
