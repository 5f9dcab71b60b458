// Package e2e runs the product as deployed, on the real node
// (internal/tooling/deployed): Crossplane core from its chart, the provider and
// the function as Pods of the Deployment runtime, game servers as real
// Pods whose addresses carry real packets, and the real garbage collector.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpcluster"
)

// version tags the packages the suite installs.
const version = "v0.1.0"

// wait bounds every poll: the suite shares two cores with the control
// plane, the node, Crossplane, the provider and the function.
const wait = 3 * time.Minute

// leaseKey is the provider's leader Lease (its default --leader-election-id).
var leaseKey = client.ObjectKey{Namespace: xpcluster.Namespace, Name: "crossplane-leader-election-provider-tencentcloud-network"}

var (
	cluster *deployed.Cluster
	kube    client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ptn-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	cluster, err = deployed.Start(context.Background(), deployed.Options{Dir: dir, Version: version})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err, "\nlogs:", dir)
		return 1
	}
	kube = cluster.Kube
	fmt.Printf("e2e: the product is up in %s\n", time.Since(start).Round(time.Second))
	for _, t := range cluster.Timings {
		fmt.Printf("  %-60s %s\n", t.Step, t.Took.Round(time.Millisecond))
	}
	code := m.Run()
	if code == 0 {
		// Each test cleans up after itself; what one leaves behind would
		// be blamed on a later one.
		if err := cloudEmpty(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: the tests left the cloud with", err)
			code = 1
		}
	}
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stop:", err)
		code = 1
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: logs of the node's components are in", dir)
	} else {
		_ = os.RemoveAll(dir)
	}
	return code
}

// eventually polls fn for at most wait and fails the test with what it
// waited for and fn's last error.
func eventually(t testing.TB, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// cloudEmpty waits (bounded) for the cloud to hold no load balancer and
// no EIP, and names what is left.
func cloudEmpty() error {
	return testenv.Eventually(context.Background(), wait, func() error {
		inv := cluster.Cloud.Inventory()
		var left []string
		for _, lb := range inv.LoadBalancers {
			left = append(left, "load balancer "+lb.ID+" ("+lb.Name+")")
		}
		for _, eip := range inv.EIPs {
			left = append(left, "EIP "+eip.ID)
		}
		if len(left) != 0 {
			return errors.New(strings.Join(left, ", "))
		}
		return nil
	})
}
