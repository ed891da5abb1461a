# Node CIDR allocation (node-ipam-controller, RangeAllocator) for the cluster's KWOK nodes, and the TTL annotation.
CONTROLLERS="node-ipam-controller,ttl-controller"
all_nodes_have_cidr() { [ "$(kubectl get nodes -o jsonpath='{range .items[*]}{.spec.podCIDR}{"\n"}{end}' | grep -c .)" -eq 3 ]; }
steps() {
  wait_until 60 all_nodes_have_cidr
  settle 3
}
