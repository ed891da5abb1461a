// podtemplatehash: build-time tooling for the pod-template-hash (never part of the product).
//
// Upstream names a Deployment's ReplicaSets (and labels their pods) with controller.ComputeHash: FNV-32a over
// the spew dump of the PodTemplateSpec Go struct, then the collision count. Our C++ reproduces that dump byte for
// byte; this tool provides the two things that needs from the Go side:
//
//	go run . gen -o <file>               emit the C++ dump functions, walking v1.PodTemplateSpec by reflection
//	                                      (Go field order, Go field names, Go type names)
//	go run . golden -in <cases> -out <f> compute the golden hashes (and dumps) of test cases with the real
//	                                      controller.ComputeHash
//	go run . hash [-collision N] < json  print ComputeHash of one template
//	go run . dump [-wire] < json         print the dump text that is hashed
//	go run . repack -in <cases> -out <f> golden Endpoints subsets from upstream's RepackSubsets (repack.go)
//	go run . revisions -in <c> -out <f>  golden DaemonSet revision data and revision hashes (revisions.go)
//
// Run through hack/update-pod-template-hash.sh.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/utils/dump"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: podtemplatehash gen|golden|hash|dump ...")
		os.Exit(2)
	}
	// metav1.Time decodes into time.Local, which spew prints field by field. Upstream kcm has resolved Local
	// long before it hashes (its logging formats local times); do the same so the dump shows the loaded zone.
	_, _ = time.Now().Zone()
	var err error
	switch os.Args[1] {
	case "gen":
		err = runGen(os.Args[2:])
	case "golden":
		err = runGolden(os.Args[2:])
	case "hash":
		err = runHash(os.Args[2:])
	case "dump":
		err = runDump(os.Args[2:])
	case "repack":
		err = runRepack(os.Args[2:])
	case "revisions":
		err = runRevisions(os.Args[2:])
	case "quota":
		err = runQuota(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "podtemplatehash:", err)
		os.Exit(1)
	}
}

// decode reads a PodTemplateSpec the way client-go's JSON serializer does (case-sensitive, sigs.k8s.io/json).
func decode(data []byte) (*v1.PodTemplateSpec, error) {
	t := &v1.PodTemplateSpec{}
	if err := utiljson.Unmarshal(data, t); err != nil {
		return nil, err
	}
	return t, nil
}

// overWire is what upstream kube-controller-manager sees when the template went through the apiserver: it stores
// protobuf, and kcm reads protobuf. Empty lists and maps come back nil; quantities come back canonical.
func overWire(t *v1.PodTemplateSpec) (*v1.PodTemplateSpec, error) {
	b, err := t.Marshal()
	if err != nil {
		return nil, err
	}
	out := &v1.PodTemplateSpec{}
	if err := out.Unmarshal(b); err != nil {
		return nil, err
	}
	return out, nil
}

func runHash(args []string) error {
	fs := flag.NewFlagSet("hash", flag.ExitOnError)
	collision := fs.String("collision", "", "collision count (unset when empty)")
	_ = fs.Parse(args)
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	t, err := decode(data)
	if err != nil {
		return err
	}
	var cc *int32
	if *collision != "" {
		n, err := strconv.ParseInt(*collision, 10, 32)
		if err != nil {
			return err
		}
		v := int32(n)
		cc = &v
	}
	fmt.Println(controller.ComputeHash(t, cc))
	return nil
}

func runDump(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ExitOnError)
	wire := fs.Bool("wire", false, "dump the template after the apiserver's protobuf round trip")
	_ = fs.Parse(args)
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	t, err := decode(data)
	if err != nil {
		return err
	}
	if *wire {
		if t, err = overWire(t); err != nil {
			return err
		}
	}
	// The same call hashutil.DeepHashObject makes.
	fmt.Println(dump.ForHash(*t))
	return nil
}

type testCase struct {
	Name           string          `json:"name"`
	Description    string          `json:"description,omitempty"`
	CollisionCount *int32          `json:"collisionCount"`
	Expect         string          `json:"expect,omitempty"` // "" (decoded JSON) or "wire"
	Template       json.RawMessage `json:"template"`
}

type goldenCase struct {
	Name           string `json:"name"`
	Description    string `json:"description,omitempty"`
	CollisionCount *int32 `json:"collisionCount"`
	Expect         string `json:"expect,omitempty"`
	Hash           string `json:"hash"`     // ComputeHash of the template as client-go decodes it
	WireHash       string `json:"wireHash"` // ComputeHash after the apiserver's protobuf round trip
	Dump           string `json:"dump"`     // what is hashed, for the "wire" or plain variant per Expect
	// The template as text, number tokens untouched (a JSON library would turn 1e3 into 1000.0).
	Template string `json:"template"`
}

// casesFlags parses "-in <cases> -out <golden>" and reads the cases file into cases.
func casesFlags(cmd string, args []string, cases any) (string, error) {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	in := fs.String("in", "", "cases file")
	out := fs.String("out", "", "golden file to write")
	_ = fs.Parse(args)
	data, err := os.ReadFile(*in)
	if err != nil {
		return "", err
	}
	return *out, json.Unmarshal(data, cases)
}

// writeGolden writes v as indented JSON (no HTML escaping) to path.
func writeGolden(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func runGolden(args []string) error {
	var cases []testCase
	out, err := casesFlags("golden", args, &cases)
	if err != nil {
		return err
	}
	var golden []goldenCase
	for _, c := range cases {
		t, err := decode(c.Template)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.Name, err)
		}
		g := goldenCase{Name: c.Name, Description: c.Description, CollisionCount: c.CollisionCount,
			Expect: c.Expect, Template: compact(c.Template), Hash: controller.ComputeHash(t, c.CollisionCount)}
		if c.Expect != "wire" {
			g.Dump = dump.ForHash(*t)
		}
		// Marshal caches each Quantity's canonical text inside t (Quantity.String), which the dump shows:
		// t is done with before it goes over the wire.
		w, err := overWire(t)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.Name, err)
		}
		g.WireHash = controller.ComputeHash(w, c.CollisionCount)
		if c.Expect == "wire" {
			g.Dump = dump.ForHash(*w)
		}
		golden = append(golden, g)
	}
	return writeGolden(out, golden)
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		panic(err)
	}
	return b.String()
}
