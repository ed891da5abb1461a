package main

// revisions: golden ControllerRevision data for the daemonset (and statefulset) history helpers. For each case it
// prints the template-replacing patch the DaemonSet controller stores as a revision's data (the same steps as
// upstream's unexported daemon.getPatch: json.Marshal the object, decode into a map, keep spec.template with
// "$patch":"replace", json.Marshal the map), and history.HashControllerRevision of that data.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	apps "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/kubernetes/pkg/controller/daemon"
	"k8s.io/kubernetes/pkg/controller/history"
)

type revisionCase struct {
	Name      string          `json:"name"`
	DaemonSet json.RawMessage `json:"daemonSet"`
}

type revisionGolden struct {
	Name               string `json:"name"`
	Patch              string `json:"patch"`
	RevisionHash       string `json:"revisionHash"`
	RevisionHashProbe3 string `json:"revisionHashProbe3"`
}

func daemonSetPatch(ds *apps.DaemonSet) ([]byte, error) {
	b, err := json.Marshal(ds)
	if err != nil {
		return nil, err
	}
	var raw map[string]interface{}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	template := raw["spec"].(map[string]interface{})["template"].(map[string]interface{})
	template["$patch"] = "replace"
	return json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": template}})
}

func runRevisions(args []string) error {
	fs := flag.NewFlagSet("revisions", flag.ExitOnError)
	in := fs.String("in", "", "cases file")
	out := fs.String("out", "", "golden file")
	_ = fs.Parse(args)
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var cases []revisionCase
	if err := json.Unmarshal(data, &cases); err != nil {
		return err
	}
	var golden []revisionGolden
	for _, c := range cases {
		ds := &apps.DaemonSet{}
		if err := utiljson.Unmarshal(c.DaemonSet, ds); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		// What upstream kcm holds: the object after the apiserver's protobuf round trip.
		b, err := ds.Marshal()
		if err != nil {
			return err
		}
		wire := &apps.DaemonSet{}
		if err := wire.Unmarshal(b); err != nil {
			return err
		}
		patch, err := daemonSetPatch(wire)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		// The exported Match must agree with the patch computed here.
		if ok, err := daemon.Match(wire, &apps.ControllerRevision{Data: runtime.RawExtension{Raw: patch}}); err != nil || !ok {
			return fmt.Errorf("%s: daemon.Match disagrees with the computed patch", c.Name)
		}
		probe := int32(3)
		rev := &apps.ControllerRevision{Data: runtime.RawExtension{Raw: patch}}
		golden = append(golden, revisionGolden{
			Name:               c.Name,
			Patch:              string(patch),
			RevisionHash:       history.HashControllerRevision(rev, nil),
			RevisionHashProbe3: history.HashControllerRevision(rev, &probe),
		})
	}
	enc, err := json.MarshalIndent(golden, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(enc, '\n'), 0o644)
}
