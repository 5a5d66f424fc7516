"""Example scripts in RLlib's style (see rljax/examples/README.md)."""
