#!/usr/bin/env bash
# make run: the main demo on the embedded default. Grows with the project;
# today it shows what is built.
set -euo pipefail
build=${1:-build}
"$build/loom" version
"$build/loomd" --version
