#!/usr/bin/env python3
"""Count every preset's parameters the way transformers builds the model (on the meta device: no memory, no download).

usage: python3 tools/measure/count_params.py data/models > counts.json
Prints {preset id: {"n_params": sum(p.numel()), "transformers": version}} for each preset whose model_type this
transformers knows; the figures are kept in tests/data/preset_params.json and checked by the unit tests.
"""
import glob
import json
import os
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    out = {}
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
        for m in json.load(open(path))["models"]:
            spec = dict(m["config"])
            model_type = spec.pop("model_type")
            try:
                cfg = AutoConfig.for_model(model_type, **spec)
                with torch.device("meta"):
                    model = AutoModelForCausalLM.from_config(cfg)
                out[m["id"]] = {"n_params": sum(p.numel() for p in model.parameters())}
            except Exception as e:  # report and go on: one unknown type must not hide the others
                out[m["id"]] = {"error": f"{type(e).__name__}: {e}"[:300]}
            print(m["id"], out[m["id"]], file=sys.stderr, flush=True)
    json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "presets": out}, sys.stdout,
              indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
