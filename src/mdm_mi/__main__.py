"""``python -m mdm_mi <verb>``: see :mod:`mdm_mi.cli`."""

import sys

from mdm_mi.cli import main

if __name__ == "__main__":
    sys.exit(main())
