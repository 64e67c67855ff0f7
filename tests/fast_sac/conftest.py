import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# the repo root, for ``bench.holding`` (the holding tests share its config and summary)
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _REPO not in sys.path:
    sys.path.append(_REPO)
