"""The shop's rota App, configured from settings.ROTA (rota.contrib.django.make_app)."""

import rota
from rota.contrib.django import make_app
from shop.models import Order

app = make_app()


@app.job("confirm-order", queue="orders")
def confirm_order(order_id: int) -> int:
    return Order.objects.filter(id=order_id).update(confirmed=True)


app.add_worker_group(rota.WorkerGroupOptions(
    name="shop", policy=rota.Strict("orders"), poll_interval=0.2))
