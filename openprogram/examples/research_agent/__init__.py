"""A research agent package: ``research(topic, urls)`` reads pages and saves notes.

Load it with the setting ``OPENPROGRAM_PACKAGES=openprogram.examples.research_agent``
(or the ``openprogram.programs`` entry-point group); only ``research`` becomes a tool.
"""

from openprogram.examples.research_agent.agent import ResearchAgent, notes_path_for

__all__ = ["PROGRAM_ENTRIES", "ResearchAgent", "notes_path_for", "researcher"]

researcher = ResearchAgent()
PROGRAM_ENTRIES = [researcher.research]
