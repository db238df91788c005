"""Command implementations behind cli.py: they call the wings and format what a person reads."""
