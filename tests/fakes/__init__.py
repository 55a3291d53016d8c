"""Real stand-ins for external services, used by tests and benchmarks."""
