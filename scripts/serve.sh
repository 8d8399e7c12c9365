#!/usr/bin/env bash
# Installs what the host needs, builds it (release) and runs `tessera serve` in the repository,
# which reads Config/tessera.json there.
# Extra arguments go to `tessera serve`, e.g. `scripts/serve.sh --config my.json`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_build
cd "$TESSERA_ROOT"
swift build -c release --product tessera >&2
exec .build/release/tessera serve "$@"
