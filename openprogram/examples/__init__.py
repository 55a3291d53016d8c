"""Example program packages; each lists its public tools in ``PROGRAM_ENTRIES``."""
