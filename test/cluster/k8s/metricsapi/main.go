// metrics-api: a small aggregated API server for the test cluster, serving metrics.k8s.io/v1beta1 (pod and node
// resource metrics), custom.metrics.k8s.io/v1beta2 (per-pod and per-object custom metrics) and
// external.metrics.k8s.io/v1beta1 (external metrics, selected by their labels) from values a test writes to a JSON
// file, so the horizontal-pod-autoscaler can be shown scaling against a real aggregated API
// reached through APIServices, not a mock in the process under test. The apiserver reaches it through an
// ExternalName Service (localhost) with the APIServices' insecureSkipTLSVerify; requests are not authenticated
// (a test fixture on loopback). Pods are listed from the apiserver to apply label selectors.
//
// The values file (read on every request; absent entries mean "no metrics for it"):
//
//	{"pods":   {"<ns>/<pod>": {"<container>": {"cpu": "250m", "memory": "64Mi"}}},
//	 "nodes":  {"<node>": {"cpu": "1", "memory": "1Gi"}},
//	 "custom": {"<ns>/<pod>": {"<metric>": "10"}},
//	 "objects": {"<ns>/<resource>/<name>": {"<metric>": "10"}},
//	 "external": {"<ns>/<metric>": [{"labels": {"queue": "jobs"}, "value": "10"}]}}
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net/http"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type values struct {
	Pods     map[string]map[string]map[string]string `json:"pods"`
	Nodes    map[string]map[string]string            `json:"nodes"`
	Custom   map[string]map[string]string            `json:"custom"`
	Objects  map[string]map[string]string            `json:"objects"`
	External map[string][]externalValue              `json:"external"`
}

type externalValue struct {
	Labels map[string]string `json:"labels"`
	Value  string            `json:"value"`
}

type server struct {
	file   string
	client kubernetes.Interface
	window string
}

func (s *server) load() values {
	var v values
	if b, err := os.ReadFile(s.file); err == nil {
		if err := json.Unmarshal(b, &v); err != nil {
			log.Printf("values file %s: %v", s.file, err)
		}
	}
	return v
}

func writeJSON(w http.ResponseWriter, code int, obj interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

func notFound(w http.ResponseWriter, what string) {
	writeJSON(w, http.StatusNotFound, map[string]interface{}{
		"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
		"message": what + " not found",
	})
}

func resourceList(gv string, resources []map[string]interface{}) map[string]interface{} {
	return map[string]interface{}{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
}

func group(name, version string) map[string]interface{} {
	gv := map[string]interface{}{"groupVersion": name + "/" + version, "version": version}
	return map[string]interface{}{"name": name, "versions": []interface{}{gv}, "preferredVersion": gv}
}

func (s *server) podMetrics(ns, pod string, containers map[string]map[string]string, now string) map[string]interface{} {
	var cs []interface{}
	for name, usage := range containers {
		cs = append(cs, map[string]interface{}{"name": name, "usage": usage})
	}
	return map[string]interface{}{
		"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
		"metadata":  map[string]interface{}{"name": pod, "namespace": ns, "creationTimestamp": now},
		"timestamp": now, "window": s.window, "containers": cs,
	}
}

// selectedPods: the names of the namespace's pods matching the label selector (all namespaces when ns is "").
func (s *server) selectedPods(ctx context.Context, ns, selector string) ([]string, error) {
	list, err := s.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out, nil
}

func (s *server) serveMetrics(w http.ResponseWriter, r *http.Request, parts []string) {
	v := s.load()
	now := time.Now().UTC().Format(time.RFC3339)
	switch {
	case len(parts) == 0:
		writeJSON(w, 200, resourceList("metrics.k8s.io/v1beta1", []map[string]interface{}{
			{"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": []string{"get", "list"}},
			{"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": []string{"get", "list"}},
		}))
	case parts[0] == "nodes":
		var items []interface{}
		for name, usage := range v.Nodes {
			if len(parts) == 2 && parts[1] != name {
				continue
			}
			items = append(items, map[string]interface{}{
				"kind": "NodeMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
				"metadata": map[string]interface{}{"name": name, "creationTimestamp": now}, "timestamp": now,
				"window": s.window, "usage": usage,
			})
		}
		if len(parts) == 2 {
			if len(items) == 0 {
				notFound(w, "nodemetrics "+parts[1])
				return
			}
			writeJSON(w, 200, items[0])
			return
		}
		writeJSON(w, 200, map[string]interface{}{"kind": "NodeMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
			"metadata": map[string]interface{}{}, "items": nonNil(items)})
	case parts[0] == "pods" || (parts[0] == "namespaces" && len(parts) >= 3 && parts[2] == "pods"):
		ns := ""
		if parts[0] == "namespaces" {
			ns = parts[1]
			parts = parts[2:]
		}
		if len(parts) == 2 {
			c, ok := v.Pods[ns+"/"+parts[1]]
			if !ok {
				notFound(w, "podmetrics "+ns+"/"+parts[1])
				return
			}
			writeJSON(w, 200, s.podMetrics(ns, parts[1], c, now))
			return
		}
		pods, err := s.selectedPods(r.Context(), ns, r.URL.Query().Get("labelSelector"))
		if err != nil {
			writeJSON(w, 500, map[string]interface{}{"kind": "Status", "apiVersion": "v1", "status": "Failure",
				"message": err.Error(), "code": 500})
			return
		}
		var items []interface{}
		for _, key := range pods {
			if c, ok := v.Pods[key]; ok {
				nsName := strings.SplitN(key, "/", 2)
				items = append(items, s.podMetrics(nsName[0], nsName[1], c, now))
			}
		}
		writeJSON(w, 200, map[string]interface{}{"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
			"metadata": map[string]interface{}{}, "items": nonNil(items)})
	default:
		notFound(w, strings.Join(parts, "/"))
	}
}

func metricValue(kind, apiVersion, ns, name, metric, value, now string) map[string]interface{} {
	return map[string]interface{}{
		"describedObject": map[string]interface{}{"kind": kind, "namespace": ns, "name": name, "apiVersion": apiVersion},
		"metric":          map[string]interface{}{"name": metric},
		"timestamp":       now, "value": value,
	}
}

// /apis/custom.metrics.k8s.io/v1beta2/namespaces/NS/pods/*/METRIC?labelSelector=..., .../pods/NAME/METRIC,
// .../namespaces/NS/RESOURCE/NAME/METRIC (object metrics).
func (s *server) serveCustom(w http.ResponseWriter, r *http.Request, parts []string) {
	v := s.load()
	now := time.Now().UTC().Format(time.RFC3339)
	if len(parts) == 0 {
		writeJSON(w, 200, resourceList("custom.metrics.k8s.io/v1beta2", []map[string]interface{}{
			{"name": "pods/*", "singularName": "", "namespaced": true, "kind": "MetricValueList", "verbs": []string{"get"}},
		}))
		return
	}
	if len(parts) != 5 || parts[0] != "namespaces" {
		notFound(w, strings.Join(parts, "/"))
		return
	}
	ns, resource, name, metric := parts[1], parts[2], parts[3], parts[4]
	var items []interface{}
	if resource == "pods" {
		keys := []string{ns + "/" + name}
		if name == "*" {
			var err error
			if keys, err = s.selectedPods(r.Context(), ns, r.URL.Query().Get("labelSelector")); err != nil {
				writeJSON(w, 500, map[string]interface{}{"kind": "Status", "apiVersion": "v1", "status": "Failure",
					"message": err.Error(), "code": 500})
				return
			}
		}
		for _, key := range keys {
			if val, ok := v.Custom[key][metric]; ok {
				items = append(items, metricValue("Pod", "/v1", ns, strings.SplitN(key, "/", 2)[1], metric, val, now))
			}
		}
	} else if val, ok := v.Objects[ns+"/"+resource+"/"+name][metric]; ok {
		items = append(items, metricValue("", "", ns, name, metric, val, now))
	}
	if len(items) == 0 {
		notFound(w, "metric "+metric+" for "+resource+" "+ns+"/"+name)
		return
	}
	writeJSON(w, 200, map[string]interface{}{"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2",
		"metadata": map[string]interface{}{}, "items": items})
}

// /apis/external.metrics.k8s.io/v1beta1/namespaces/NS/METRIC?labelSelector=...: the values whose labels match.
func (s *server) serveExternal(w http.ResponseWriter, r *http.Request, parts []string) {
	v := s.load()
	now := time.Now().UTC().Format(time.RFC3339)
	if len(parts) == 0 {
		writeJSON(w, 200, resourceList("external.metrics.k8s.io/v1beta1", []map[string]interface{}{
			{"name": "*", "singularName": "", "namespaced": true, "kind": "ExternalMetricValueList", "verbs": []string{"get"}},
		}))
		return
	}
	if len(parts) != 3 || parts[0] != "namespaces" {
		notFound(w, strings.Join(parts, "/"))
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeJSON(w, 400, map[string]interface{}{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"reason": "BadRequest", "message": err.Error(), "code": 400})
		return
	}
	ns, metric := parts[1], parts[2]
	items := []interface{}{}
	for _, e := range v.External[ns+"/"+metric] {
		if sel.Matches(labels.Set(e.Labels)) {
			items = append(items, map[string]interface{}{"metricName": metric, "metricLabels": e.Labels,
				"timestamp": now, "value": e.Value})
		}
	}
	if len(items) == 0 {
		notFound(w, "external metric "+metric+" in "+ns)
		return
	}
	writeJSON(w, 200, map[string]interface{}{"kind": "ExternalMetricValueList",
		"apiVersion": "external.metrics.k8s.io/v1beta1", "metadata": map[string]interface{}{}, "items": items})
}

func nonNil(items []interface{}) []interface{} {
	if items == nil {
		return []interface{}{}
	}
	return items
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	switch {
	case path == "apis":
		writeJSON(w, 200, map[string]interface{}{"kind": "APIGroupList", "apiVersion": "v1", "groups": []interface{}{
			group("metrics.k8s.io", "v1beta1"), group("custom.metrics.k8s.io", "v1beta2"),
			group("external.metrics.k8s.io", "v1beta1")}})
	case path == "healthz" || path == "readyz" || path == "livez":
		fmt.Fprint(w, "ok")
	case strings.HasPrefix(path, "apis/metrics.k8s.io/v1beta1"):
		s.serveMetrics(w, r, split(strings.TrimPrefix(path, "apis/metrics.k8s.io/v1beta1")))
	case strings.HasPrefix(path, "apis/custom.metrics.k8s.io/v1beta2"):
		s.serveCustom(w, r, split(strings.TrimPrefix(path, "apis/custom.metrics.k8s.io/v1beta2")))
	case strings.HasPrefix(path, "apis/external.metrics.k8s.io/v1beta1"):
		s.serveExternal(w, r, split(strings.TrimPrefix(path, "apis/external.metrics.k8s.io/v1beta1")))
	default:
		notFound(w, path)
	}
}

func split(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// selfSigned: a throwaway serving certificate for localhost (the APIServices skip verification).
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig for listing pods")
	port := flag.Int("port", 0, "HTTPS port on 127.0.0.1")
	file := flag.String("values", "", "values file")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("kubeconfig %s: %v", *kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	cert, err := selfSigned()
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Addr:      fmt.Sprintf("127.0.0.1:%d", *port),
		Handler:   &server{file: *file, client: client, window: "30s"},
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
	}
	log.Printf("metrics-api serving on https://%s from %s", srv.Addr, *file)
	log.Fatal(srv.ListenAndServeTLS("", ""))
}
