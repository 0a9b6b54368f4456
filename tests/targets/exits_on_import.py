"""A target file that ends the interpreter when imported (an unguarded script)."""

import sys

sys.exit(3)
