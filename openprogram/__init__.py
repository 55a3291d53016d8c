"""OpenProgram: a function-calling framework. ``from openprogram import function, Agent``."""
