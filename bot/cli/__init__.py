"""The `qunyi` command line."""
