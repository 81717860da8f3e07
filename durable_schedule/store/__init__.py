"""The store: models, versioned SQL, transaction forms and the clock seam (docs/architecture.md,
docs/protocol/storage.md)."""
