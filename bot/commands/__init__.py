"""Memory commands for group members (/recall, /who, /what) and for the CLI (same answers)."""
