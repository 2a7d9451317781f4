"""Placing an order: the order row and its confirmation job commit together, or neither."""

from django.db import transaction

from rota.contrib.django import in_transaction
from shop.jobs import confirm_order
from shop.models import Order


class PaymentDeclined(Exception):
    pass


def place_order(total: int, *, decline: bool = False) -> int:
    with transaction.atomic():
        order = Order.objects.create(total=total)
        in_transaction(confirm_order).enqueue(order.id)
        if decline:
            raise PaymentDeclined(order.id)  # rolls back the order and its job
    return order.id
