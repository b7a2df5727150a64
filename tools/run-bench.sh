#!/usr/bin/env bash
# run-bench.sh -- the main job: sets up and builds (tools/setup.sh), shows
# the OpenCL devices and the one chosen, then benchmarks the DESIGN prefill
# set with every result checked against the CPU reference. Extra arguments
# go to attn-bench (e.g. --device pocl, --format json, --dtype f16). Only
# attn-bench's report goes to stdout, the rest to stderr, so that
# `run-bench.sh --format json > x.json` writes valid JSON (and csv a CSV).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/setup.sh >&2
echo >&2
# attn-info marks the device attn-bench will use: the same --device
info=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
    --device) ((i + 1 < ${#args[@]})) && info=(--device "${args[i + 1]}") ;;
    --device=*) info=(--device "${args[i]#--device=}") ;;
    esac
done
build/tools/attn-info ${info[@]+"${info[@]}"} >&2  # bash < 4.4 calls "${info[@]}" unbound when empty
echo >&2
exec build/tools/attn-bench --check "$@"
