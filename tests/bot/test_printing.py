import pytest

from bot.cli.printing import size_text


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 bytes"),
        (999, "999 bytes"),
        (1500, "1.5 kB"),
        (2_500_000, "2.5 MB"),
        (79_704_800_000, "79.7 GB"),
        (3_200_000_000_000, "3.2 TB"),
    ],
)
def test_sizes_read_in_the_unit_that_fits(size: int, shown: str) -> None:
    assert size_text(size) == shown
