"""Integrations with frameworks (`rota.contrib.django`, ...): outer rooms that import rota's
public API and the store contract; nothing in rota's core, stores or worker imports them."""
