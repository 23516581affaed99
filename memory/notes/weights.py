"""Note weights for hints and values for suggestions, computed in linear time over the link graph.

The weight rule (from the Zettelkasten seed, with its gaps filled):

* The outgoing links of a note are the distinct notes it links or embeds, itself excluded.
* A note with no outgoing links weighs 1.
* A note with n >= 1 outgoing links weighs (w_1 + ... + w_n) / max(n - 1, 1). The seed divides by
  n - 1, which is zero for a single link; with one link a note weighs what its target weighs.
* A link to a note that does not exist counts as a link to a leaf: weight 1 (the seed allows links
  to notes not yet written). Such names never appear in hints or suggestions themselves.
* Cycles are cut the way embed expansion cuts them: the notes of one strongly connected component
  are computed together, and a link from a note to another note of its own component counts as a
  link to a leaf (weight 1). Links leaving the component use the target's computed weight.

Strongly connected components come from an iterative Tarjan pass, which emits them sinks first, so
every target outside a component is weighed before the component itself: one pass over nodes and
edges, O(V + E).

Value (for suggestions) = weight / characters of the note's content (at least 1 character).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

LEAF_WEIGHT = 1.0


@dataclass(frozen=True, slots=True)
class NoteScore:
    """A note's weight, length in characters and value (= weight / max(chars, 1))."""

    name: str
    weight: float
    chars: int

    @property
    def value(self) -> float:
        return self.weight / max(self.chars, 1)


def strongly_connected_components(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm without recursion; components come out in reverse topological order.

    Only nodes that are keys of `graph` are visited; edges to other names are ignored.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        # Each frame: a node and an iterator over its remaining successors.
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(graph[succ])))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
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
                components.append(component)
    return components


def compute_weights(links: Mapping[str, Iterable[str]]) -> dict[str, float]:
    """Weight of every existing note; `links` maps each existing note to the names it links to."""
    graph = {name: tuple(set(targets) - {name}) for name, targets in links.items()}
    weights: dict[str, float] = {}
    for component in strongly_connected_components(graph):
        members = set(component)
        for name in component:
            targets = graph[name]
            if not targets:
                weights[name] = LEAF_WEIGHT
                continue
            total = 0.0
            for target in targets:
                if target in members or target not in graph:
                    total += LEAF_WEIGHT
                else:
                    total += weights[target]
            weights[name] = total / max(len(targets) - 1, 1)
    return weights


def top_hints(scores: Iterable[NoteScore], n: int) -> list[NoteScore]:
    """The `n` notes of highest weight; ties go to the alphabetically first name."""
    return heapq.nsmallest(max(n, 0), scores, key=lambda s: (-s.weight, s.name))


def low_value(scores: Iterable[NoteScore], threshold: float, limit: int) -> list[NoteScore]:
    """Up to `limit` notes whose value is below `threshold`, lowest value first (ties by name)."""
    below = (s for s in scores if s.value < threshold)
    return heapq.nsmallest(max(limit, 0), below, key=lambda s: (s.value, s.name))
