"""The public Python API: `import mdm_mi` gives what a user needs, cheaply, and the docs use it."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO


def test_every_public_name_resolves_and_import_mdm_mi_loads_no_torch():
    code = ("import sys, mdm_mi; assert 'torch' not in sys.modules, 'import mdm_mi loaded torch'; "
            "[getattr(mdm_mi, n) for n in mdm_mi.__all__]; print(len(mdm_mi.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out) >= 20


def test_an_unknown_name_is_an_attribute_error():
    import mdm_mi

    try:
        mdm_mi.no_such_thing  # noqa: B018
    except AttributeError as err:
        assert "no_such_thing" in str(err)
    else:
        raise AssertionError("mdm_mi.no_such_thing resolved")


def test_the_your_model_python_example_uses_the_public_api_only():
    text = (REPO / "docs" / "your_model.md").read_text()
    python = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S)[1:])
    assert "import mdm_mi" in python
    assert not re.search(r"from mdm_mi[.\w]* import|import mdm_mi\.", python), "deep imports in the example"
