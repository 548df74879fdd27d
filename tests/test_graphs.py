"""No import cycle anywhere in the package: a module's dependencies can be read, tested and
moved without the modules that depend on it (issue 26). Lazy imports inside functions and
imports for type checking count too: a cycle held together by either is still a cycle.

And no request cycle between the tree's processes (DESIGN §2): if A may ask B, B may not ask A,
directly or around a longer loop, so that no two handlers can wait on each other.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping

import grimp

from lineup.actors.kernel.acl import ACL, message_allowed
from lineup.actors.kernel.messages import REGISTRY
from lineup.tests.test_layout import PROTOCOLS as ACTOR_PROTOCOLS

# Every module that defines messages of the tree's protocol: each actor's, the kernel's own and
# the SDK's (a MiniApp's).
PROTOCOLS = (
    *ACTOR_PROTOCOLS,
    "lineup.actors.kernel.control",
    "lineup.actors.kernel.audit",
    "lineup.sdk.protocol",
)
# The kernel's own requests, answered without waiting on anyone: an introduction (from the
# supervisor's tables) and a health probe (by the kernel of the peer asked).
KERNEL_REQUESTS = frozenset({"supervisor.introduce.request", "kernel.health.request"})


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, iterative: the
    package's graph is deeper than Python's recursion allows), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph.get(successor, ()))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of `lineup` and the modules of `lineup` it imports."""
    graph = grimp.build_graph("lineup", cache_dir=None)
    return {
        module: {m for m in graph.find_modules_directly_imported_by(module) if m != module}
        for module in graph.modules
    }


def test_the_cycle_finder_finds_a_cycle_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"b"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}}) == []


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert "lineup.actors.router._tools" in graph  # the graph is the package's, whole
    assert "lineup.actors.router._outbox" in graph["lineup.actors.router._tools"]
    assert cycles(graph) == []


def request_graph() -> dict[str, set[str]]:
    """Each kind of the tree and the kinds it may send a request to (a `…Request` message the
    ACL lets it send), the kernel's own left out."""
    for module in PROTOCOLS:
        importlib.import_module(module)
    requests = [
        tag
        for tag, cls in REGISTRY.items()
        if cls.__name__.endswith("Request")
        and tag not in KERNEL_REQUESTS
        and not cls.__module__.startswith("lineup.tests.")  # a test's probe is no part of it
    ]
    graph: dict[str, set[str]] = {}
    for sender, receiver in ACL:
        if any(message_allowed(sender, receiver, tag) for tag in requests):
            graph.setdefault(sender.value, set()).add(receiver.value)
    return graph


def test_no_two_processes_ask_each_other_around_a_loop() -> None:
    graph = request_graph()
    # The graph is the tree's, whole: focus asks the supervisor to start a process, the
    # hostbridge asks every actor the Shell needs, a MiniApp asks the SDK's three.
    assert "supervisor" in graph["focus"]
    assert {"focus", "router", "gateway", "transport"} <= graph["hostbridge"]
    assert graph["miniapp"] == {"focus", "router", "gateway"}
    assert "focus" not in graph.get("supervisor", set())  # it tells focus, never asks
    assert cycles(graph) == []
