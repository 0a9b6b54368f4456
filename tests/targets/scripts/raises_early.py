"""A script whose configuration check fails before it compiles anything."""

import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=-1.0)
args = parser.parse_args()
print(f"checking the configuration: lr={args.lr}")
if args.lr <= 0:
    raise ValueError(f"bad learning rate {args.lr}")
