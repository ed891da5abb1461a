// decodebench: client-go's decode and encode of a PodList, the peer of our bench/codec_bench.
// It decodes the way client-go's typed clients do (the scheme's JSON serializer), repeats, and reports
// MB/s and heap bytes per decoded pod (live heap after GC with the list retained).
package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	iters, _ := strconv.Atoi(os.Args[2])
	dec := scheme.Codecs.UniversalDeserializer()
	decodeOnce := func() *corev1.PodList {
		obj, _, err := dec.Decode(data, nil, &corev1.PodList{})
		if err != nil {
			panic(err)
		}
		return obj.(*corev1.PodList)
	}
	decodeOnce() // warm up
	start := time.Now()
	var list *corev1.PodList
	for i := 0; i < iters; i++ {
		list = decodeOnce()
	}
	secs := time.Since(start).Seconds()
	mb := float64(len(data)) * float64(iters) / 1e6

	runtime.GC()
	var before, after runtime.MemStats
	_ = list
	list = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := decodeOnce()
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPod := float64(after.HeapAlloc-before.HeapAlloc) / float64(len(kept.Items))

	enc := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)
	var buf bytes.Buffer
	estart := time.Now()
	for i := 0; i < iters; i++ {
		buf.Reset()
		if err := enc.Encode(kept, &buf); err != nil {
			panic(err)
		}
	}
	esecs := time.Since(estart).Seconds()
	fmt.Printf("client-go\t%d pods\tdecode %.1f MB/s\tencode %.1f MB/s\t%.0f bytes/pod\n", len(kept.Items),
		mb/secs, float64(buf.Len())*float64(iters)/1e6/esecs, perPod)
	runtime.KeepAlive(kept)
}
