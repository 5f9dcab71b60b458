// Command argocdbuild builds Argo CD's one binary into the cache
// (argocd.Build) and prints its path, so that CI pays for a cold build
// before test/gitops, where it would count against the test's timeout. A
// warm cache costs nothing.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
)

func main() {
	began := time.Now()
	bin, err := argocd.Build(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "argocdbuild:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
	fmt.Fprintf(os.Stderr, "argocdbuild: argocd %s ready in %s\n", argocd.Version, time.Since(began).Round(time.Second))
}
