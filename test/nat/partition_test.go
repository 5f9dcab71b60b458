package nat

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestCutLink: the realistic disconnect, a cut link with the agent still
// running. The agent binary reaches the hub only through a loopback TCP
// proxy the test cuts (connections closed, new ones refused). Within the
// grace period the Pods stay Ready and their targets stay; after it the
// provider deregisters the targets and the agent, on its own, withdraws
// what it told the Pods: address conditions False (HubUnreachable), status
// annotations NotReady, addresses removed, one Warning Event each. The
// link restored, the same agent process tells the Pods what the hub's
// PodAddresses now say.
func TestCutLink(t *testing.T) {
	ctx := context.Background()
	const (
		ns, name, podNS = "cluster-cut", "cut", "cut-games"
		grace           = 20 * time.Second
	)
	pauseProvider(t)
	dir := t.TempDir()
	providerBin, err := testenv.BuildProvider(dir)
	if err != nil {
		t.Fatal(err)
	}
	agentBin, err := testenv.BuildAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	emu := e2eCloud(t, func(*emulator.Config) {})
	prov := testenv.RunProvider(t, providerKubeconfig(t), providerBin, "management", "--poll", "5s")
	if err := prov.Ready(ctx, e2eWait); err != nil {
		t.Fatal(err)
	}
	releaseAll(t, ns, podNS)
	newCluster(t, ns, name, grace)
	e2ePool(t, ns)

	// room-0 asks in our syntax, room-1 in bcs's, each waiting on its
	// address condition.
	ensureNamespace(t, workKube, podNS)
	ips := []string{"127.78.0.1", "127.78.0.2"}
	for i := range ips {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: fmt.Sprintf("room-%d", i)}}
		p.Spec.Containers = []corev1.Container{{Name: "server", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}}}
		if i == 0 {
			p.Annotations = map[string]string{podannotation.AnnotationPorts: "7777 pool"}
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}}
		} else {
			p.Annotations = map[string]string{podannotation.BCSAnnotationEnabled: "true", podannotation.BCSAnnotationPorts: "pool TCP 7777",
				podannotation.BCSAnnotationReadinessGate: "true"}
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podannotation.BCSConditionPortBindingReady}}
		}
		if err := workKube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = workKube.Delete(context.Background(), p) })
	}
	wantTargets := []string{net.JoinHostPort(ips[0], "7777"), net.JoinHostPort(ips[1], "7777")}

	link := newHubLink(t, hostOf(t, hub.Config.Host))
	agent := e2eAgent(t, dir, agentBin, "https://"+link.addr, ns, name)
	agent.start(t)
	waitCluster(t, ns, name, "connected", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected })
	for i, ip := range ips {
		setRunning(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: fmt.Sprintf("room-%d", i)}}, ip, false)
	}
	_, bound := served(t, ns, podNS, len(ips))
	bcsSays(t, podNS, podannotation.StatusReady, corev1.ConditionTrue)
	targetsAre(t, emu, "the Pods' targets", wantTargets)

	// The link is cut; the agent keeps running.
	link.cut()
	wc := &v1alpha1.WorkloadCluster{}
	poll(t, "the cluster disconnected", func() error {
		if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, wc); err != nil {
			return err
		}
		if c := wc.Status.GetCondition(xpv2.TypeReady); wc.Status.Connected || c.Reason != v1alpha1.ReasonAgentDisconnected {
			return fmt.Errorf("connected %t, Ready %s/%s", wc.Status.Connected, c.Status, c.Reason)
		}
		return nil
	})
	releaseAt := wc.Status.LastHeartbeat.Add(grace)
	// Within the grace period the Pods are served and say so.
	for i := range ips {
		p := workPod(t, podNS, i)
		if c := podCond(p, podannotation.ConditionAddressReady); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("room-%d within the grace period: address condition %+v, want True", i, c)
		}
		if s := p.Annotations[podannotation.AnnotationStatus]; s != podannotation.StatusReady {
			t.Errorf("room-%d within the grace period: status %q", i, s)
		}
	}
	targetsAre(t, emu, "the targets within the grace period", wantTargets)
	if time.Now().After(releaseAt) {
		t.Errorf("the checks within the grace period ended after it (%s); the machine is too slow for this grace", releaseAt)
	}

	// After it: targets deregistered, and the Pods told so by the agent
	// that cannot reach the hub.
	targetsAre(t, emu, "no targets after the grace period", nil)
	for i := range ips {
		poll(t, fmt.Sprintf("room-%d withdrawn", i), func() error {
			p := workPod(t, podNS, i)
			for _, ct := range podannotation.ReadinessGates(p) {
				if c := podCond(p, ct); c == nil || c.Status != corev1.ConditionFalse || c.Reason != podannotation.ReasonHubUnreachable {
					return fmt.Errorf("condition %s: %+v", ct, c)
				}
			}
			if c := podCond(p, podannotation.ConditionAddressReady); c == nil || c.Reason != podannotation.ReasonHubUnreachable {
				return fmt.Errorf("address condition %+v", c)
			}
			if s := p.Annotations[podannotation.AnnotationStatus]; s != podannotation.StatusNotReady {
				return fmt.Errorf("status annotation %q", s)
			}
			if a, ok := p.Annotations[podannotation.AnnotationAddresses]; ok {
				return fmt.Errorf("addresses annotation still %s", a)
			}
			since, err := time.Parse(time.RFC3339, p.Annotations[podannotation.AnnotationHubUnreachable])
			if err != nil {
				return fmt.Errorf("mark %q: %w", p.Annotations[podannotation.AnnotationHubUnreachable], err)
			}
			if d := since.Sub(wc.Status.LastHeartbeat.Time); d < -time.Second || d > time.Second {
				return fmt.Errorf("withdrawn as unreachable since %s, the hub's last heartbeat is %s", since, wc.Status.LastHeartbeat)
			}
			return nil
		})
	}
	if now := time.Now(); now.Before(releaseAt.Add(-time.Second)) {
		t.Errorf("Pods withdrawn at %s, before the grace period ended (%s)", now, releaseAt)
	}
	t.Logf("withdrawn %s after the last heartbeat (grace %s)", time.Since(wc.Status.LastHeartbeat.Time).Round(time.Millisecond), grace)
	bcsSays(t, podNS, podannotation.StatusNotReady, corev1.ConditionFalse)
	for i := range ips {
		if n := hubUnreachableEvents(t, podNS, i); n != 1 {
			t.Errorf("room-%d: %d %s Warning Events, want 1", i, n, podannotation.ReasonHubUnreachable)
		}
	}
	if agent.proc.Exited() {
		t.Fatal("the agent exited while the link was cut")
	}

	// The link is back: the same agent tells the Pods what the hub's
	// PodAddresses say now.
	link.restore(t)
	restored := time.Now()
	served(t, ns, podNS, len(ips), bound...)
	bcsSays(t, podNS, podannotation.StatusReady, corev1.ConditionTrue)
	t.Logf("served again %s after the link came back", time.Since(restored).Round(time.Millisecond))
	targetsAre(t, emu, "the Pods' targets after the link came back", wantTargets)
	for i := range ips {
		if p := workPod(t, podNS, i); withdrawnMark(p) {
			t.Errorf("room-%d served again still carries %s", i, podannotation.AnnotationHubUnreachable)
		}
		if n := hubUnreachableEvents(t, podNS, i); n != 1 {
			t.Errorf("room-%d after the return: %d %s Warning Events, want still 1", i, n, podannotation.ReasonHubUnreachable)
		}
	}
	if agent.proc.Exited() {
		t.Error("the agent exited")
	}
}

func workPod(t *testing.T, podNS string, i int) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := workKube.Get(context.Background(), client.ObjectKey{Namespace: podNS, Name: fmt.Sprintf("room-%d", i)}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func podCond(p *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == ct })
	if i < 0 {
		return nil
	}
	return &p.Status.Conditions[i]
}

func withdrawnMark(p *corev1.Pod) bool {
	_, ok := p.Annotations[podannotation.AnnotationHubUnreachable]
	return ok
}

// bcsSays waits until room-1, the bcs-syntax Pod, carries bcs's status
// annotation status and bcs's condition cond.
func bcsSays(t *testing.T, podNS, status string, cond corev1.ConditionStatus) {
	t.Helper()
	poll(t, "room-1 in bcs's form "+status, func() error {
		p := workPod(t, podNS, 1)
		if s := p.Annotations[podannotation.BCSAnnotationStatus]; s != status {
			return fmt.Errorf("bcs status annotation %q", s)
		}
		if _, ok := p.Annotations[podannotation.BCSAnnotationBindings]; ok != (status == podannotation.StatusReady) {
			return fmt.Errorf("bcs bindings annotation present %t with status %s", ok, status)
		}
		if c := podCond(p, podannotation.BCSConditionPortBindingReady); c == nil || c.Status != cond {
			return fmt.Errorf("bcs condition %+v, want %s", c, cond)
		}
		return nil
	})
}

// hubUnreachableEvents counts the HubUnreachable Warning Events on room-i,
// this Pod of the name only: an earlier run's Pod of the name left its own.
func hubUnreachableEvents(t *testing.T, podNS string, i int) int {
	t.Helper()
	uid := workPod(t, podNS, i).UID
	l := &corev1.EventList{}
	if err := workKube.List(context.Background(), l, client.InNamespace(podNS)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range l.Items {
		if e.InvolvedObject.UID == uid && e.Reason == podannotation.ReasonHubUnreachable && e.Type == corev1.EventTypeWarning {
			n++
		}
	}
	return n
}

// A hubLink is the agent's way to the hub: a loopback TCP proxy to the hub
// API server that the test can cut (every connection closed, new ones
// refused, as a firewall or a NAT gateway that lost its state would) and
// restore on the same address.
type hubLink struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener // nil while cut
	conns        map[net.Conn]struct{}
}

func newHubLink(t *testing.T, target string) *hubLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &hubLink{addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go l.serve(ln)
	t.Cleanup(l.cut)
	return l
}

func (l *hubLink) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go l.pipe(ln, c)
	}
}

// pipe copies both ways between c and a new connection to the hub.
func (l *hubLink) pipe(ln net.Listener, c net.Conn) {
	up, err := net.DialTimeout("tcp", l.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	l.mu.Lock()
	if l.ln != ln { // cut meanwhile
		l.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	l.conns[c], l.conns[up] = struct{}{}, struct{}{}
	l.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, up)
	l.mu.Unlock()
}

// cut closes the listener and every connection.
func (l *hubLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		_ = l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		_ = c.Close()
	}
}

// restore listens again on the same address.
func (l *hubLink) restore(t *testing.T) {
	t.Helper()
	var ln net.Listener
	if err := testenv.Eventually(context.Background(), 10*time.Second, func() error {
		var err error
		ln, err = net.Listen("tcp", l.addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	go l.serve(ln)
}
