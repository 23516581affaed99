from __future__ import annotations

import subprocess
import sys

import pytest

from adapters.extras import MissingExtra, require


def test_missing_library_names_the_extra() -> None:
    with pytest.raises(MissingExtra, match=r"pip install 'qunyi\[telegram\]'"):
        require("qunyi_no_such_module_for_tests", "telegram")


def test_adapter_packages_import_without_their_libraries() -> None:
    code = (
        "import sys; import adapters.telegram, adapters.discord, adapters.onebot_v11, adapters.importers; "
        "assert 'aiogram' not in sys.modules and 'discord' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
