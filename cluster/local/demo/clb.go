package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

// clbDemo applies the CLB examples, waits until the provider has made them
// real in the emulated cloud, sends TCP traffic through the load balancer
// to a local server registered as a target, then deletes everything and
// checks that nothing is left in the cloud.
func clbDemo(ctx context.Context, kube client.Client, cloud *emulator.Emulator, timeout time.Duration, logPath string) error {
	echo, err := startEcho()
	if err != nil {
		return err
	}
	defer func() { _ = echo.Close() }()
	echoPort := echo.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener has a TCP address.

	step("applying examples/clb (a load balancer, listeners) and a TargetSet whose target is a local echo server on 127.0.0.1:%d", echoPort)
	dir := filepath.Join(testenv.RepoRoot(), "examples", "clb")
	var objs []*unstructured.Unstructured
	for _, f := range []string{"loadbalancer.yaml", "listener.yaml"} {
		o, err := testenv.Apply(ctx, kube, filepath.Join(dir, f))
		if err != nil {
			return err
		}
		objs = append(objs, o...)
	}
	ts := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "clb.tencentcloud.m.crossplane.io/v1alpha1",
		"kind":       "TargetSet",
		"metadata":   map[string]any{"namespace": "examples", "name": "demo-echo"},
		"spec": map[string]any{"forProvider": map[string]any{
			"loadBalancerIdRef": map[string]any{"name": "game-lb"},
			"listenerIdRef":     map[string]any{"name": "game-tcp-7000"},
			"targets":           []any{map[string]any{"ip": "127.0.0.1", "port": int64(echoPort)}},
		}},
	}}
	if err := kube.Create(ctx, ts); err != nil {
		return err
	}
	objs = append(objs, ts)

	start := time.Now()
	for _, o := range objs {
		if err := waitReady(ctx, kube, o, timeout); err != nil {
			return fmt.Errorf("%w (provider log: %s)", err, tail(logPath))
		}
	}
	fmt.Printf("    %d managed resources Ready in %s:\n", len(objs), time.Since(start).Round(time.Millisecond))
	for _, o := range objs {
		p := fieldpath.Pave(o.Object)
		id, _ := p.GetString("metadata.annotations[crossplane.io/external-name]")
		addr, _ := p.GetString("status.atProvider.addresses[0]")
		vip, _ := p.GetString("status.atProvider.vips[0]")
		fmt.Printf("      %-12s %-14s %-24s %s\n", o.GetKind(), o.GetName(), id, strings.TrimSpace(vip+" "+addr))
	}

	var address string
	for _, o := range objs {
		if o.GetName() == "game-tcp-7000" {
			address, _ = fieldpath.Pave(o.Object).GetString("status.atProvider.addresses[0]")
		}
	}
	step("sending TCP through the load balancer: %s -> 127.0.0.1:%d", address, echoPort)
	reply, err := roundTrip(ctx, address, "hello battle server")
	if err != nil {
		return fmt.Errorf("round trip through %s: %w", address, err)
	}
	fmt.Printf("    sent %q, the target answered %q\n", "hello battle server", reply)

	podObjs, err := podDemo(ctx, kube, timeout)
	if err != nil {
		return fmt.Errorf("%w (provider log: %s)", err, tail(logPath))
	}

	calls := cloud.Calls()
	fmt.Println("    cloud API calls the provider made in all:")
	for _, action := range slices.Sorted(maps.Keys(calls)) {
		fmt.Printf("      %-32s %v\n", action, calls[action])
	}

	step("deleting everything: the Pod, its pools, the load balancers")
	all := podObjs
	for i := len(objs) - 1; i >= 0; i-- {
		all = append(all, objs[i])
	}
	if err := deleteAll(ctx, kube, all, timeout); err != nil {
		return err
	}
	err = testenv.Eventually(ctx, timeout, func() error {
		if n := len(cloud.Inventory().LoadBalancers); n != 0 {
			return fmt.Errorf("%d load balancers left in the cloud", n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Println("    the emulated cloud is empty again: nothing leaked")
	return nil
}

func waitReady(ctx context.Context, kube client.Client, o *unstructured.Unstructured, timeout time.Duration) error {
	return testenv.Eventually(ctx, timeout, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("%s %s is not Ready: %v", o.GetKind(), o.GetName(), conds)
	})
}

// startEcho serves a line echo on a free loopback port.
func startEcho() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	serveEcho(ln)
	return ln, nil
}

// serveEcho answers each line on ln with "echo: <line>" until ln closes.
func serveEcho(ln net.Listener) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = fmt.Fprintf(c, "echo: %s", line)
				}
			}()
		}
	}()
}

func roundTrip(ctx context.Context, address, msg string) (string, error) {
	var reply string
	err := testenv.Eventually(ctx, 10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", address, time.Second)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := fmt.Fprintf(c, "%s\n", msg); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		reply = strings.TrimSpace(line)
		return nil
	})
	return reply, err
}
