package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podName names Pod i of the workload.
func podName(i int) string { return fmt.Sprintf("gs-%05d", i) }

// podIP is Pod i's made-up IP, distinct for up to 250 × 250 × 250 Pods.
func podIP(i int) string { return fmt.Sprintf("10.%d.%d.%d", 100+i/62500, (i/250)%250, i%250+1) }

// ownRequests counts the harness's own API requests by "VERB resource",
// the keys of APIRequests, so that they can be taken off the API
// server's counts and only the system's remain.
type ownRequests struct {
	mu sync.Mutex
	m  map[string]float64
}

func (o *ownRequests) add(key string) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[string]float64{}
	}
	o.m[key]++
	o.mu.Unlock()
}

func (o *ownRequests) take() map[string]float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.m
	o.m = nil
	return m
}

// tracker watches the Pods of a namespace and records when each was first
// published and when each was gone.
type tracker struct {
	mu        sync.Mutex
	published map[string]time.Time
	gone      map[string]time.Time
	changed   chan struct{}
}

// track watches ns until ctx ends, re-listing after a dropped watch. A nil
// published func records deletions only.
func (h *Harness) track(ctx context.Context, ns string, published func(*corev1.Pod) bool) (*tracker, error) {
	t := &tracker{published: map[string]time.Time{}, gone: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	start := func() (watch.Interface, error) {
		return h.Watch.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	}
	w, err := start()
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				now := time.Now()
				t.mu.Lock()
				switch {
				case ev.Type == watch.Deleted:
					t.gone[p.Name] = now
				case published != nil && published(p):
					if _, seen := t.published[p.Name]; !seen {
						t.published[p.Name] = now
					}
				}
				t.mu.Unlock()
				select {
				case t.changed <- struct{}{}:
				default:
				}
			}
			if ctx.Err() != nil {
				return
			}
			// The API server ends watches after a while: watch again. A
			// Pod published meanwhile is seen on the first event of the
			// new watch (its ADDED), a little late.
			for {
				if w, err = start(); err == nil || ctx.Err() != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	return t, nil
}

func (t *tracker) counts() (published, gone int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.published), len(t.gone)
}

// until waits for done to hold after a change, or timeout; the caller
// reads how far it got. A poll every second covers conditions outside the
// watch (the cloud's targets).
func (t *tracker) until(ctx context.Context, timeout time.Duration, done func() bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-t.changed:
		case <-tick.C:
		}
	}
}

// createPods creates the Pods of the workload and plays the kubelet for
// each (Running, with its Pod IP), from Concurrency workers; it returns
// when each Pod got its IP.
func (h *Harness) createPods(ctx context.Context, sys System, r Run, n int) (ipAt map[string]time.Time, err error) {
	ipAt = make(map[string]time.Time, n)
	var mu sync.Mutex
	var firstErr error
	h.parallel(n, func(i int) {
		p := sys.Pod(r, podName(i))
		h.own.add("POST pods")
		if err := h.Env.Kube.Create(ctx, p); err != nil {
			mu.Lock()
			firstErr = err
			mu.Unlock()
			return
		}
		ip := podIP(i)
		for {
			p.Status.Phase, p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}, "10.0.0.1"
			h.own.add("PUT pods/status")
			err := h.Env.Kube.Status().Update(ctx, p)
			if err == nil {
				break
			}
			// The system may have changed the new Pod meanwhile.
			if !kerrors.IsConflict(err) || ctx.Err() != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			h.own.add("GET pods")
			if err := h.Env.Kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
		}
		now := time.Now()
		mu.Lock()
		ipAt[p.Name] = now
		mu.Unlock()
	})
	return ipAt, firstErr
}

// deletePods deletes the workload's Pods.
func (h *Harness) deletePods(ctx context.Context, ns string, n int) error {
	var mu sync.Mutex
	var firstErr error
	h.parallel(n, func(i int) {
		h.own.add("DELETE pods")
		p := &corev1.Pod{}
		p.Namespace, p.Name = ns, podName(i)
		// Grace 0: the harness plays the kubelet, which confirms the
		// deletion of a Pod bound to a node (the peer's are) at once.
		if err := h.Env.Kube.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil && !kerrors.IsNotFound(err) {
			mu.Lock()
			firstErr = err
			mu.Unlock()
		}
	})
	return firstErr
}

// parallel runs fn for 0..n-1 on Concurrency workers.
func (h *Harness) parallel(n int, fn func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(h.Concurrency, 1) {
		wg.Go(func() {
			for i := range work {
				fn(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}
