// Command okgbuild builds OpenKruiseGame's two managers into the cache
// (okg.Build) and prints their paths, so that CI pays for a cold build
// before the suites on the real node, where it would count against
// test/e2e's timeout. A warm cache costs nothing.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/okg"
)

func main() {
	began := time.Now()
	bins, err := okg.Build(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "okgbuild:", err)
		os.Exit(1)
	}
	fmt.Printf("%s\n%s\n", bins.Kruise, bins.Game)
	fmt.Fprintf(os.Stderr, "okgbuild: kruise %s and kruise-game %s ready in %s\n", okg.KruiseVersion, okg.GameVersion, time.Since(began).Round(time.Second))
}
