"""Resolution agrees with a plain per-tool reading of the spec, for any registry and arguments.

The reference below walks each tool through the layers one by one, the slow and
obvious way; the real resolver uses set algebra and lazy traces. Hypothesis
generates registries and arguments and checks both agree on what is offered and
on the first layer that rejected everything else.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.programs import registry
from openprogram.programs.deferred import tool_search
from openprogram.programs.policy import resolve_tools

from .conftest import EchoTool

_NAMES = [f"tool_{i}" for i in range(8)] + ["ask_user_question"]


@dataclass(frozen=True)
class _Spec:
    name: str
    expose: bool
    defer: bool
    plan_unsafe: bool
    env_missing: bool


_specs = st.lists(
    st.builds(
        _Spec,
        name=st.sampled_from(_NAMES),
        expose=st.booleans(),
        defer=st.booleans(),
        plan_unsafe=st.booleans(),
        env_missing=st.booleans(),
    ),
    unique_by=lambda spec: spec.name,
    max_size=len(_NAMES),
)
_subset = st.none() | st.lists(st.sampled_from([*_NAMES, "tool_search"]), max_size=5)


def _reference(specs, *, toolset, source, only_available, deny, disabled, allow, attended):
    """(offered names in order, {name: layer}) by walking each tool through the layers."""
    offered, layers = [], {}
    for spec in specs:
        checks = [
            ("L2", not spec.expose),
            ("L2b", toolset is not None and spec.name not in toolset),
            ("L3", source == "plan" and spec.plan_unsafe),
            ("L4", only_available and spec.env_missing),
            ("L5", spec.name in disabled),
            ("L5", deny is not None and spec.name in deny),
            ("L5", allow is not None and spec.name not in allow),
            ("L5", not attended and spec.name == "ask_user_question"),
        ]
        layer = next((layer for layer, rejected in checks if rejected), None)
        if layer is None:
            offered.append(spec.name)
        else:
            layers[spec.name] = layer
    deferred = {spec.name for spec in specs if spec.defer}
    search_vetoed = "tool_search" in disabled or (deny is not None and "tool_search" in deny)
    if not search_vetoed and deferred & set(offered):
        offered.insert(0, "tool_search")
    else:
        layers["tool_search"] = "L5" if search_vetoed else "L6"
    return offered, layers


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    specs=_specs,
    toolset=_subset,
    deny=_subset,
    allow=_subset,
    disabled=st.sets(st.sampled_from([*_NAMES, "tool_search"]), max_size=3),
    source=st.sampled_from([None, "plan", "web"]),
    only_available=st.booleans(),
    attended=st.booleans(),
)
def test_resolution_matches_the_per_tool_reference(
    monkeypatch, specs, toolset, deny, allow, disabled, source, only_available, attended
):
    monkeypatch.delenv("OPENPROGRAM_MISSING_KEY", raising=False)
    registry.reset_registry()
    registry.register(tool_search)
    for spec in specs:
        registry.register(
            EchoTool(
                name=spec.name,
                description=f"{spec.name} does things.",
                expose=spec.expose,
                defer=spec.defer,
                unsafe_in=frozenset({"plan"}) if spec.plan_unsafe else frozenset(),
                requires_env=("OPENPROGRAM_MISSING_KEY",) if spec.env_missing else (),
            )
        )
    registered = {spec.name for spec in specs}
    arguments = dict(
        toolset=toolset,
        source=source,
        only_available=only_available,
        deny=deny,
        disabled=disabled,
        allow=allow,
        attended=attended,
    )
    if allow and not set(allow) & (registered | {"tool_search"}):
        return  # an allow naming nothing registered is an error, tested elsewhere
    resolution = resolve_tools(**arguments)
    expected, layers = _reference(specs, **arguments)
    assert resolution.names == expected
    rows = {row.name: row for row in resolution.decisions}
    assert set(rows) == registered | {"tool_search"}
    for name, row in rows.items():
        assert row.offered == (name in expected)
        assert row.layer == layers.get(name)
        assert bool(row.reason) == (not row.offered)
