// Command coredns is CoreDNS v1.12.1 with only the plugins the node's
// cluster DNS uses (internal/tooling/clusterdns). Plugins that send queries
// elsewhere (forward, grpc, etcd, the cloud DNS ones) are not compiled in,
// so no Corefile can make this binary resolve a name off the machine.
package main

import (
	"github.com/coredns/coredns/coremain"

	// Each import registers one plugin; the order they run in comes from
	// dnsserver.Directives, not from here.
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
