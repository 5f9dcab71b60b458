//go:build generate

// Code generation for the API types: deepcopy and CRDs (controller-gen) and
// the crossplane-runtime method sets (angryjet). Run with `make generate`.

// Remove existing CRDs so that renamed or deleted kinds do not linger.
//go:generate rm -rf ../package/crds

//go:generate go tool -modfile=../tools/go.mod controller-gen object:headerFile=../hack/boilerplate.go.txt paths=./... crd:crdVersions=v1 output:artifacts:config=../package/crds

//go:generate go tool -modfile=../tools/go.mod angryjet generate-methodsets --header-file=../hack/boilerplate.go.txt ./...

package apis
