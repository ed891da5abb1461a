# Shared helpers for hack/ scripts. Source it: . "$(dirname "$0")/lib.sh"
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTPUT_DIR="${REPO_ROOT}/_output"
export GOWORK=off
# Go caches live outside the repo (never committed); CI runs on the same machine kind.
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
# shellcheck disable=SC1091
. "${REPO_ROOT}/test/cluster/versions.env"
K8S_MINOR="$(echo "${KUBERNETES_VERSION}" | cut -d. -f2)"
K8S_STAGING_VERSION="v0.${KUBERNETES_VERSION#v1.}"
CONTROL_PLANE_DIR="${OUTPUT_DIR}/local/k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
CONTROL_PLANE_BIN="${CONTROL_PLANE_DIR}/bin"

log() { echo "+++ [$(date +%H:%M:%S)] $*" >&2; }
die() { echo "!!! $*" >&2; exit 1; }
