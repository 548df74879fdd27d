"""No import cycle anywhere in the package: a module's dependencies can be read, tested and
moved without the modules that depend on it (issue 26). Lazy imports inside functions and
imports for type checking count too: a cycle held together by either is still a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grimp


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
