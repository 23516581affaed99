"""Link parsing, target rewriting, and embed expansion / collapse."""

from memory.notes import collapse, expand, iter_links, link_targets, rewrite_target
from memory.notes.embeds import MAX_EXPANDED_CHARS
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


def test_collapse_undoes_a_cycle_marker_inside_a_block_of_the_same_name() -> None:
    # A → B → C → B: the cut cycle's B block sits inside B's own block.
    notes = {"B": "b ![[C]] b", "C": "c ![[B]] c"}
    expanded = expand("A", "top ![[B]] end", 3, notes.get)
    assert expanded.count("![[B]]start") == 2
    assert collapse(expanded) == "top ![[B]] end"


def test_collapse_leaves_an_unpaired_marker_as_text() -> None:
    notes = {"B": "b"}
    expanded = expand("A", "![[X]]start\nx ![[B]] y", 1, notes.get)
    assert collapse(expanded) == "![[X]]start\nx ![[B]] y"


def test_expansion_is_bounded_however_often_notes_embed_each_other() -> None:
    # Each level multiplies by 300: expanded fully, depth 3 would be 27 million copies of D.
    notes = {"B": "![[C]]" * 300, "C": "![[D]]" * 300, "D": "d"}
    expanded = expand("A", "![[B]]" * 300, 3, notes.get)
    assert len(expanded) < 300 * len("![[B]]") + MAX_EXPANDED_CHARS + 200
    assert expanded.count("(not expanded: the embedded notes would pass 200000 characters; read") == 1
    assert expanded.startswith("![[B]]start\n\n![[C]]start\n\n![[D]]start\n\nd\n\n![[D]]end")
    assert expanded.endswith("![[B]]![[B]]")
    assert collapse(expanded) == "![[B]]" * 300


def test_expansion_within_the_limit_is_whole() -> None:
    notes = {"B": "b" * 50, "C": "c" * 20}
    whole = expand("A", "![[B]] ![[C]]", 1, notes.get, limit=150)
    assert "not expanded" not in whole and collapse(whole) == "![[B]] ![[C]]"
    cut = expand("A", "![[B]] ![[C]] ![[B]] ![[C]]", 1, notes.get, limit=150)
    assert cut.startswith(whole)
    assert cut.endswith(
        " ![[B]]start\n\n(not expanded: the embedded notes would pass 150 characters; read B on its own; "
        "later embeds are left as they are)\n\n![[B]]end ![[C]]"
    )
