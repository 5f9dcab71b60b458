package deployed

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/images"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// GamePort is the port cmd/gameserver echoes on, over TCP and UDP.
const GamePort = 7777

// PushGameServer builds cmd/gameserver's image into the node's registry and
// returns its reference.
func (c *Cluster) PushGameServer(ctx context.Context) (string, error) {
	img, err := images.GameServer(ctx, "")
	if err != nil {
		return "", err
	}
	ref := c.Node.Registry() + "/ptn/gameserver:local"
	return ref, images.Push(ctx, img, ref)
}

// GameStatefulSet runs cmd/gameserver's image as a StatefulSet of Pods
// labelled app=name, each waiting for its address through the readiness
// gate and telling its name in every answer.
func GameStatefulSet(ns, name, image string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}},
					Containers: []corev1.Container{{
						Name:  "game",
						Image: image,
						Args:  []string{"--tcp", strconv.Itoa(GamePort), "--udp", strconv.Itoa(GamePort)},
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
						}}},
						Ports: []corev1.ContainerPort{
							{Name: "game-tcp", ContainerPort: GamePort, Protocol: corev1.ProtocolTCP},
							{Name: "game-udp", ContainerPort: GamePort, Protocol: corev1.ProtocolUDP},
						},
					}},
				},
			},
		},
	}
}

// RoundTrip sends a TCP line and a UDP datagram through addr, retried
// within wait, and checks that Pod want's game server answered; it returns
// the round-trip times.
func RoundTrip(ctx context.Context, addr, want string, wait time.Duration) (tcp, udp time.Duration, err error) {
	err = testenv.Eventually(ctx, wait, func() error {
		for _, network := range []string{"tcp", "udp"} {
			name, took, err := exchange(network, addr)
			if err != nil {
				return err
			}
			if name != want {
				return fmt.Errorf("%s %s: answered by %s, want %s", network, addr, name, want)
			}
			if network == "tcp" {
				tcp = took
			} else {
				udp = took
			}
		}
		return nil
	})
	return tcp, udp, err
}

// Ask sends one message over network ("tcp" or "udp") through addr,
// retried within wait, and returns the name of the Pod whose game server
// answered.
func Ask(ctx context.Context, network, addr string, wait time.Duration) (string, error) {
	var name string
	err := testenv.Eventually(ctx, wait, func() error {
		var err error
		name, _, err = exchange(network, addr)
		return err
	})
	return name, err
}

// exchange sends one message and returns who answered it ("<Pod>: <msg>",
// as cmd/gameserver answers) and the round-trip time.
func exchange(network, addr string) (string, time.Duration, error) {
	const msg = "join room 42"
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = c.Close() }()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return "", 0, err
	}
	began := time.Now()
	var answer string
	if network == "tcp" {
		if _, err = fmt.Fprintln(c, msg); err == nil {
			answer, err = bufio.NewReader(c).ReadString('\n')
		}
	} else if _, err = c.Write([]byte(msg)); err == nil {
		buf := make([]byte, 1500)
		var n int
		n, err = c.Read(buf)
		answer = string(buf[:n])
	}
	took := time.Since(began)
	if err != nil {
		return "", 0, fmt.Errorf("%s %s: %w", network, addr, err)
	}
	name, echoed, ok := strings.Cut(strings.TrimSpace(answer), ": ")
	if !ok || echoed != msg {
		return "", 0, fmt.Errorf("%s %s: answer %q, want \"<name>: %s\"", network, addr, answer, msg)
	}
	return name, took, nil
}
