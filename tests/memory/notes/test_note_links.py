"""Link parsing, target rewriting, and embed expansion / collapse."""

from memory.notes import collapse, expand, iter_links, link_targets, rewrite_target
from memory.notes.links import Link


def test_links_and_embeds_are_found() -> None:
    text = "见 [[规则]] 和 ![[小明]]，[[a/b]] 不是链接，[[ 规则 ]] 重复"
    assert list(iter_links(text)) == [
        Link("规则", embed=False),
        Link("小明", embed=True),
        Link("规则", embed=False),
    ]
    assert link_targets(text) == {"规则", "小明"}


def test_rewrite_only_touches_the_exact_target() -> None:
    text = "[[Old]] ![[Old]] [[ Old ]] [[Older]] [[old]]"
    assert rewrite_target(text, "Old", "New") == "[[New]] ![[New]] [[New]] [[Older]] [[old]]"


def test_collapse_undoes_nested_expansion() -> None:
    notes = {"B": "b ![[C]]", "C": "c"}
    expanded = expand("A", "a ![[B]] end", 2, notes.get)
    assert "![[C]]start" in expanded
    assert collapse(expanded) == "a ![[B]] end"
