#!/usr/bin/env bash
# The README's pictures, made by the build's own commands (nothing drawn by hand): a sweep chart from
# `gpuplan sweep --plot`, and the web page in each state the browser test checks, at a desktop and a 390 px phone
# width (headless Chromium's screenshots: docs/images/web-*-desktop.png, web-*-phone.png).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target gpuplan_cli web
./build/gpuplan sweep infer --model llama-3.1-8b --context 4k..128k --gpu rtx-4090 --gpu h100-sxm \
  --plot docs/images/sweep-context.svg >/dev/null
python3 tests/web/test_page.py build/gpuplan build/web/site \
  tests/data/calibration/configs/d1-ddp-llama32_1b-bf16-adamw-b4-s2048.json docs/images
