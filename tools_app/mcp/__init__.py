"""MCP servers in the web app: the admin's catalog and servers, per-user accounts and OAuth.

``models`` and ``account_models`` are loaded through ``tools_app.models`` (the app's
models module), ``admin`` through ``tools_app.admin``.
"""
