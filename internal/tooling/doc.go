// Package tooling holds, under one folder, every package that does not ship
// in the provider, agent or function binaries: the local control plane and
// test helpers (testenv), real Crossplane core out of cluster (xplocal) and
// in a cluster (xpcluster), the real node and what runs on it (node,
// clusterdns, deployed), the builders of the packages and images and their
// publisher (xpkgbuild, images, publish), the benchmark and its peer (bench,
// benchpeer), a stand-in for tke-extend-network-controller binding Pods
// (tkestandin) and UDP players counting lost packets (udpstream), the Argo
// CD health scripts' table, snippet generator and evaluator (argocdhealth;
// the scripts themselves live in docs/argocd/health), and Argo CD itself
// built from its module and run beside the control plane (argocd).
//
// Everything else under internal/ is product: linked into a binary users run.
// A folder, not a module: the tooling builds and tests the product from the
// same go.mod, and under internal/ it stays out of reach of other modules
// (tools/, the module of the lint and generator binaries, is taken).
//
// The emulator stays at internal/emulator: users run it too, as
// cmd/tencentcloud-emulator, so it is shipped, not tooling.
package tooling
