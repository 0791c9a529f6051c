"""sink."""
