"""Evaluation is an ordinary run: read the model, write results."""

import json
import os
from pathlib import Path

if __name__ == "__main__":
    results = Path(os.environ["RESULTS_DIR"])
    results.mkdir(parents=True, exist_ok=True)
    (results / "metrics.json").write_text(json.dumps({"model": os.environ["MODEL_PATH"]}))
