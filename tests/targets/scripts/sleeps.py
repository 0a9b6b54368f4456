"""A script that waits (a stuck data source) before it ever compiles anything."""

import time

time.sleep(600)
