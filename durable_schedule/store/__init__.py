"""The store: models, versioned SQL, transaction forms and the clock seam (DESIGN §2, §3)."""
