"""Django's own TestCase driving rota with run_until_idle (run by tests/contrib)."""

from django.test import TestCase

from rota.contrib.django import get_app, run_until_idle
from shop.models import Order
from shop.services import PaymentDeclined, place_order


class PlaceOrderTests(TestCase):
    def test_a_placed_order_is_confirmed_by_its_job(self) -> None:
        order_id = place_order(99)
        self.assertEqual(run_until_idle(max_executions=10), 1)
        self.assertTrue(Order.objects.get(id=order_id).confirmed)

    def test_a_declined_order_leaves_no_order(self) -> None:
        with self.assertRaises(PaymentDeclined):
            place_order(5, decline=True)
        self.assertFalse(Order.objects.exists())
        # On memory:// (tests) the job was stored anyway; its order does not exist
        self.assertEqual(run_until_idle(get_app()), 1)
        self.assertFalse(Order.objects.filter(confirmed=True).exists())
