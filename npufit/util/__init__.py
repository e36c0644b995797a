"""Small shared helpers (atomic file output, progress bars)."""
