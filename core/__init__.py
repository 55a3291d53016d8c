"""What every app shares, and nothing that knows an app: domain errors and site signals.

The layers (docs/architecture.md, checked by ``lint-imports``): the framework
``openprogram`` < ``core`` < ``accounts`` < ``tools_app`` < ``usage_app`` < ``chat_app``
< ``openprogram_site``, the composition root. ``core`` imports Django and the framework,
never an app.
"""
