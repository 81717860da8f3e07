"""Demo domain tables: an order a caller saves in the same transaction as its Work, and the
external "effect" a demo executor performs (one row per call), so tests can count effects."""

from django.db import models


class Order(models.Model):
    number = models.IntegerField()

    class Meta:
        db_table = "demo_order"


class Effect(models.Model):
    """One row per executor call that performed its effect (written in its own transaction)."""

    work_id = models.UUIDField()
    attempt = models.IntegerField()
    key = models.TextField()

    class Meta:
        db_table = "demo_effect"
