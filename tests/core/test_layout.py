import re

from reprolab.core.layout import wildcard_choices


def test_wildcard_choices_match_each_name_literally_and_nothing_else():
    pattern = re.compile(f"(?:{wildcard_choices(['dclip_0.1', 'a+b', 'ring'])})")
    for name in ("dclip_0.1", "a+b", "ring"):
        assert pattern.fullmatch(name)
    for other in ("dclip_001", "aab", "a+bring", "", "dclip_0.1/../x"):
        assert not pattern.fullmatch(other)


def test_wildcard_choices_of_no_names_is_empty():
    assert wildcard_choices([]) == ""
