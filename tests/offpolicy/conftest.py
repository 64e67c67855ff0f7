import os
import sys

# tests/fast_sac/helpers.py is shared with the off-policy base tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "fast_sac"))
