"""Supervised fine-tuning: reads the manifest tau shipped, trains on the pairs sft_data loads."""

import argparse
import json

import yaml

import sft_data

parser = argparse.ArgumentParser()
parser.add_argument("--manifest", required=True)
parser.add_argument("--smoke-pairs", type=int, default=0)
args = parser.parse_args()
with open(args.manifest) as handle:
    manifest = yaml.safe_load(handle)
pairs = sft_data.load_pairs(limit=args.smoke_pairs or None)
print(json.dumps({"run": manifest["name"], "pairs": len(pairs)}))
