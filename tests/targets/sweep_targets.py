"""Targets that misbehave, for the sweep tests: one hangs, one crashes the process."""

import os
import time


def sleeps(device: str):
    time.sleep(600)  # far beyond the test's --timeout: the sweep kills it


def crashes(device: str):
    os.abort()  # SIGABRT: a crash, not an exit code
