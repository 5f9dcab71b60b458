package node

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criClient talks to containerd's CRI service, as the kubelet does.
type criClient struct {
	conn *grpc.ClientConn
	rt   cri.RuntimeServiceClient
}

func dialCRI(_ context.Context, socket string) (*criClient, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &criClient{conn: conn, rt: cri.NewRuntimeServiceClient(conn)}, nil
}

func (c *criClient) close() { _ = c.conn.Close() }

// ready reports whether the runtime and its network are ready.
func (c *criClient) ready(ctx context.Context) error {
	st, err := c.rt.Status(ctx, &cri.StatusRequest{})
	if err != nil {
		return err
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if cond.Type == cri.RuntimeReady && !cond.Status {
			return fmt.Errorf("containerd: %s: %s", cond.Reason, cond.Message)
		}
	}
	return nil
}

// removeSandboxes stops and removes every Pod sandbox: containerd stops
// its containers and runs CNI's DEL, which takes the Pod's interface, IP
// and port mappings down, and removes its network namespace.
func removeSandboxes(ctx context.Context, socket string) error {
	c, err := dialCRI(ctx, socket)
	if err != nil {
		return err
	}
	defer c.close()
	list, err := c.rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("cannot list Pod sandboxes: %w", err)
	}
	var errs []error
	for _, s := range list.GetItems() {
		if _, err := c.rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox of %s/%s: %w", s.GetMetadata().GetNamespace(), s.GetMetadata().GetName(), err))
			continue
		}
		if _, err := c.rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox of %s/%s: %w", s.GetMetadata().GetNamespace(), s.GetMetadata().GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// KillContainer kills the container of id (a Pod status's containerID,
// "containerd://…", or the bare id) with SIGKILL, as a crash would: CRI's
// StopContainer with no grace sends no SIGTERM. The kubelet restarts it as
// the Pod's restart policy says.
func (n *Node) KillContainer(ctx context.Context, id string) error {
	c, err := dialCRI(ctx, n.socket())
	if err != nil {
		return err
	}
	defer c.close()
	id = strings.TrimPrefix(id, "containerd://")
	if _, err := c.rt.StopContainer(ctx, &cri.StopContainerRequest{ContainerId: id, Timeout: 0}); err != nil {
		return fmt.Errorf("cannot kill container %s: %w", id, err)
	}
	return nil
}
