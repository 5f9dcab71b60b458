// Package xplocal runs real Crossplane core out of cluster against a local
// control plane, the way the install test and the demo use it: the
// package manager pulls packages from an OCI registry served on loopback,
// and this package plays Crossplane's External package runtime, running
// each installed provider and function as a local process.
//
// There is no kubelet, no garbage collector and no namespace controller
// on the local control plane; DeleteComposite deletes what a composite
// composed as the garbage collector would.
package xplocal
