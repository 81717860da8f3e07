"""Schema versions (docs/protocol/storage.md "Migrations and compatibility").

``SCHEMA_VERSION`` is the version the newest migration of this package writes into the store
row; ``REQUIRED_SCHEMA`` is the lowest database schema this code can run against. The runtime
refuses to start (DS401) below it, and ``manage.py check`` reports the same.
"""

SCHEMA_VERSION = 17
REQUIRED_SCHEMA = 15
