"""The SDK's wrapper: reads the manifest, then calls the decorated training function."""

import argparse

import helpers

parser = argparse.ArgumentParser()
parser.add_argument("--manifest", required=True)
parser.add_argument("--smoke-pairs", type=int, default=0)
args = parser.parse_args()
helpers.train(args.manifest, args.smoke_pairs)
