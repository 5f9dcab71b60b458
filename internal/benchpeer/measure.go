package benchpeer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

// Run is one measured run of the peer.
type Run struct {
	Dir        string // the Build dir: binary, source copy, logs
	Bin        string
	KubeConfig string // a kubeconfig file for the peer
	Kube       client.Client

	Emulator *emulator.Emulator
	Endpoint string // the emulator's host:port
	Front    *Front

	Settings      Settings
	Pods          int
	LoadBalancers int
	Policy        string // the provider's name: LeastUsed or InOrder
	StartPort     int
	Timeout       time.Duration
}

// Result holds the figures of a run, the same the provider's runs give.
type Result struct {
	Settings       string         `json:"settings"`
	Policy         string         `json:"policy"`
	Pods           int            `json:"pods"`
	CreatedSeconds float64        `json:"createdSeconds"` // all Pods created and given an IP
	AllSeconds     float64        `json:"allPublishedSeconds"`
	P50Seconds     float64        `json:"p50Seconds"` // from the Pod having its IP to published
	P99Seconds     float64        `json:"p99Seconds"`
	Published      int            `json:"published"`
	CloudCalls     map[string]int `json:"cloudCalls"` // by action, answered OK or not
	CloudWrites    int            `json:"cloudWrites"`
	Throttled      int            `json:"throttled"` // RequestLimitExceeded answers
	FrontCalls     map[string]int `json:"frontCalls,omitempty"`
	CPUSeconds     float64        `json:"cpuSeconds"` // the peer process
	RSSMiB         float64        `json:"rssMiB"`
	Log            string         `json:"log"`
}

// cloudWrites are the CLB actions that change the cloud.
var cloudWrites = []string{
	"BatchRegisterTargets", "BatchDeregisterTargets", "RegisterTargets", "DeregisterTargets",
	"CreateListener", "DeleteListener", "DeleteLoadBalancerListeners", "ModifyListener",
	"CreateLoadBalancer", "BatchModifyTargetWeight",
}

// InstallCRDs installs the peer's CRDs from the source copy in dir and
// waits until they are served.
func InstallCRDs(ctx context.Context, kube client.Client, dir string) error {
	for _, f := range CRDFiles(dir) {
		objs, err := testenv.Apply(ctx, kube, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			err := testenv.Eventually(ctx, time.Minute, func() error {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := kube.Get(ctx, client.ObjectKey{Name: o.GetName()}, crd); err != nil {
					return err
				}
				for _, c := range crd.Status.Conditions {
					if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
						return nil
					}
				}
				return errors.New("CRD " + o.GetName() + " not established")
			})
			if err != nil {
				return err
			}
		}
	}
	err := kube.Create(ctx, Node())
	if err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Measure runs the peer with r.Settings on a pool of r.LoadBalancers new
// load balancers, creates r.Pods Pods asking it for an address, and
// measures until all are published. The peer is stopped at the end.
func Measure(ctx context.Context, r Run) (*Result, error) {
	tag := fmt.Sprintf("%s-%s", r.Settings.Name, strings.ToLower(r.Policy))
	lbs, err := CreateLoadBalancers(ctx, r.Endpoint, emulator.DefaultRegion, emulator.DefaultSecretID, emulator.DefaultSecretKey, r.LoadBalancers)
	if err != nil {
		return nil, fmt.Errorf("create the load balancers: %w", err)
	}
	cloud := Cloud{Front: r.Front, Region: emulator.DefaultRegion, VpcID: "vpc-bench",
		SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey}
	peer, err := Start(ctx, r.Dir, r.Bin, r.KubeConfig, cloud, r.Settings)
	if err != nil {
		return nil, fmt.Errorf("start the peer: %w", err)
	}
	defer peer.Stop()

	perLB := (r.Pods + r.LoadBalancers - 1) / r.LoadBalancers
	pool := Pool("bench-"+tag, lbs, r.StartPort, r.StartPort+perLB-1, PolicyFor(r.Policy))
	if err := r.Kube.Create(ctx, pool); err != nil {
		return nil, err
	}
	err = testenv.Eventually(ctx, 2*time.Minute, func() error {
		if err := r.Kube.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if !PoolActive(pool) {
			st, _, _ := unstructured.NestedMap(pool.Object, "status")
			return fmt.Errorf("pool %s not Active: %v (peer log %s)", pool.GetName(), st, peer.Log)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ns := "peer-" + tag
	if err := r.Kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	r.Emulator.ResetCounters()
	cpu0, _ := cpuSeconds(peer.Pid())

	var mu sync.Mutex
	published := map[string]time.Time{}
	allDone := make(chan struct{})
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	go func() {
		// A List every 50 ms, as the provider's benchmark polls its
		// PodAddresses: latencies are exact to about 50 ms.
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-pollCtx.Done():
				return
			case <-t.C:
			}
			l := &corev1.PodList{}
			if err := r.Kube.List(pollCtx, l, client.InNamespace(ns)); err != nil {
				continue
			}
			now := time.Now()
			mu.Lock()
			for i := range l.Items {
				if _, seen := published[l.Items[i].Name]; !seen && Published(&l.Items[i]) {
					published[l.Items[i].Name] = now
				}
			}
			n := len(published)
			mu.Unlock()
			if n == r.Pods {
				close(allDone)
				return
			}
		}
	}()

	start := time.Now()
	hasIP := make([]time.Time, r.Pods)
	var wg sync.WaitGroup
	work := make(chan int)
	var createErr error
	var errOnce sync.Once
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := runPod(ctx, r.Kube, ns, pool.GetName(), i); err != nil {
					errOnce.Do(func() { createErr = err })
					continue
				}
				hasIP[i] = time.Now()
			}
		}()
	}
	for i := range r.Pods {
		work <- i
	}
	close(work)
	wg.Wait()
	if createErr != nil {
		return nil, createErr
	}
	res := &Result{Settings: r.Settings.Name, Policy: r.Policy, Pods: r.Pods,
		CreatedSeconds: time.Since(start).Seconds(), Log: peer.Log}
	select {
	case <-allDone:
	case <-time.After(r.Timeout):
	}
	res.AllSeconds = time.Since(start).Seconds()
	stopPoll()
	cpu1, _ := cpuSeconds(peer.Pid())
	res.CPUSeconds = cpu1 - cpu0
	res.RSSMiB, _ = rssMiB(peer.Pid())

	mu.Lock()
	var lat []float64
	for i := range r.Pods {
		if at, ok := published[podName(i)]; ok {
			lat = append(lat, at.Sub(hasIP[i]).Seconds())
		}
	}
	res.Published = len(published)
	mu.Unlock()
	slices.Sort(lat)
	if len(lat) > 0 {
		res.P50Seconds, res.P99Seconds = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	res.CloudCalls = map[string]int{}
	for action, byCode := range r.Emulator.Calls() {
		for code, n := range byCode {
			res.CloudCalls[action] += n
			if code == "RequestLimitExceeded" {
				res.Throttled += n
			}
		}
	}
	for _, a := range cloudWrites {
		res.CloudWrites += res.CloudCalls[a]
	}
	res.FrontCalls = r.Front.LocalCalls()
	if res.Published < r.Pods {
		return res, fmt.Errorf("only %d of %d Pods published after %s (peer log %s)", res.Published, r.Pods, r.Timeout, peer.Log)
	}
	return res, nil
}

func podName(i int) string { return fmt.Sprintf("gs-%04d", i) }

// runPod creates Pod i on the peer's node and plays the kubelet: Running
// with an IP, as the provider's benchmark does.
func runPod(ctx context.Context, kube client.Client, ns, pool string, i int) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(i), Annotations: PodAnnotations(7777, pool)},
		Spec: corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{{Name: "s", Image: "example/server",
			Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}},
	}
	if err := kube.Create(ctx, p); err != nil {
		return err
	}
	ip := fmt.Sprintf("10.%d.%d.%d", 100+i/62500, (i/250)%250, i%250+1)
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	// Retried: the peer may patch the new Pod in between.
	return testenv.Eventually(ctx, 30*time.Second, func() error {
		err := kube.Status().Update(ctx, p)
		if kerrors.IsConflict(err) {
			if gerr := kube.Get(ctx, client.ObjectKeyFromObject(p), p); gerr != nil {
				return gerr
			}
			p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
			p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		}
		return err
	})
}

// cpuSeconds reads a process's user+system CPU time from /proc.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// Fields after the ")" that ends the command name; utime and stime
	// are fields 14 and 15 of the whole line.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100, nil // USER_HZ is 100 on Linux
}

// rssMiB reads a process's peak resident set size (VmHWM).
func rssMiB(pid int) (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmHWM")
}
