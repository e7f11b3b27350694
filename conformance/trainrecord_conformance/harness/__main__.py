"""``python -m trainrecord_conformance.harness``: the reference exec harness."""

import sys

from trainrecord_conformance.harness import serve

sys.exit(serve())
