package main

// repack: golden values for Endpoints subsets (and EndpointSlice port order). Upstream's endpoints controller hands its subsets to
// pkg/api/v1/endpoints.RepackSubsets, which groups addresses by port set and orders subsets and ports by the
// FNV-128a of their dump.ForHash text; our C++ port is checked against the real function here.
//
//	go run . repack -in <cases> -out <golden>   cases: [{"name":..,"subsets":[...]}]; golden adds "repacked"

import (
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/kubernetes/pkg/api/v1/endpoints"
)

type repackCase struct {
	Name     string              `json:"name"`
	Subsets  []v1.EndpointSubset `json:"subsets"`
	Repacked []v1.EndpointSubset `json:"repacked"`
	// An EndpointSlice's ports, and their order once k8s.io/endpointslice/util.NewPortMapKey sorted them.
	SlicePorts       []discoveryv1.EndpointPort `json:"slicePorts,omitempty"`
	SlicePortsSorted []discoveryv1.EndpointPort `json:"slicePortsSorted,omitempty"`
}

func runRepack(args []string) error {
	var cases []repackCase
	out, err := casesFlags("repack", args, &cases)
	if err != nil {
		return err
	}
	for i := range cases {
		in := make([]v1.EndpointSubset, len(cases[i].Subsets))
		for j := range cases[i].Subsets {
			in[j] = *cases[i].Subsets[j].DeepCopy()
		}
		cases[i].Repacked = endpoints.RepackSubsets(in)
		if cases[i].SlicePorts != nil {
			sorted := append([]discoveryv1.EndpointPort(nil), cases[i].SlicePorts...)
			endpointsliceutil.NewPortMapKey(sorted)
			cases[i].SlicePortsSorted = sorted
		}
	}
	return writeGolden(out, cases)
}
