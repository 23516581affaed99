"""Chat-export importers: each yields ChatMessages or located parse problems, never skipping silently."""
