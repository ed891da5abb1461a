#!/usr/bin/env bash
# Regenerates src/api/gen from api/openapi-spec/swagger.json and the pinned Go API sources.
# With --fetch-schema, first refreshes the schema from a running pinned apiserver (KUBECONFIG).
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
if [ "${1:-}" = "--fetch-schema" ]; then
  kubectl get --raw /openapi/v2 | python3 -c 'import json,sys; json.dump(json.load(sys.stdin), sys.stdout, indent=1, sort_keys=True)' \
    > api/openapi-spec/swagger.json
fi
modcache="$(go env GOMODCACHE)"
# The Go API sources at the pinned release: fetched through the Go module proxy if not cached.
(cd test/cluster/k8s && go mod download "k8s.io/api@${K8S_STAGING_VERSION}" "k8s.io/apimachinery@${K8S_STAGING_VERSION}")
python3 hack/gen-api.py "$modcache" "${K8S_STAGING_VERSION}"
