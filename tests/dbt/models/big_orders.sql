{{ config(materialized='view') }}
select order_id, customer, amount
from {{ ref('orders_seed') }}
where amount >= 5
