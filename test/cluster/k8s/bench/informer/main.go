// informerbench: client-go's shared informer over pods, configured as kube-controller-manager configures its
// factory (managedFields trimmed before caching). Reports initial sync time, peak RSS and RSS per cached pod.
// Peer of bench/informer_bench.cc.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func status(key string) int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, key+":") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, key+":")), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Args[1])
	if err != nil {
		panic(err)
	}
	cfg.QPS, cfg.Burst = 20, 30
	cfg.ContentType = "application/json"
	if len(os.Args) > 2 {
		cfg.ContentType = os.Args[2]
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	runtime.GC()
	base := status("VmRSS")
	trim := func(obj interface{}) (interface{}, error) {
		if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
			a.SetManagedFields(nil)
		}
		return obj, nil
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 12*time.Hour, informers.WithTransform(trim))
	inf := f.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	syncSecs := time.Since(start).Seconds()
	n := len(inf.GetStore().ListKeys())
	time.Sleep(2 * time.Second)
	runtime.GC()
	debug.FreeOSMemory()
	rss := status("VmRSS")
	fmt.Printf("client-go (%s)\t%d pods\tsync %.2f s\tpeak RSS %.1f MiB\tsteady RSS %.1f MiB\t%.0f bytes/cached pod\n", cfg.ContentType, n,
		syncSecs, float64(status("VmHWM"))/1048576, float64(rss)/1048576, float64(rss-base)/float64(n))
}
