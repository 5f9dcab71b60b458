// Package function is the composition function of the provider's
// workload-level kinds: one function serves every composite kind of ours
// (PodPublicAddress, DedicatedCLBService and Ingress, as namespaced v2 XRs
// and as legacy XRs behind claims) and dispatches on the composite's kind.
// It composes LoadBalancers, a PortPool and a PodAddressPolicy (or, for an
// Ingress, Listeners, Rules and TargetSets on imported LoadBalancers), and
// reports their state back on the composite.
package function

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/resource/composite"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis"
)

// Name is the function's package name, which Compositions refer to.
const Name = "function-tencentcloud-network"

// labelClaimNamespace is set by Crossplane on a legacy XR bound to a claim.
const labelClaimNamespace = "crossplane.io/claim-namespace"

// A Function composes our composite kinds.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// New returns a Function. It registers the provider's types with the SDK's
// scheme so that typed objects convert to composed resources.
func New(log logging.Logger) (*Function, error) {
	if err := apis.AddToScheme(composed.Scheme); err != nil {
		return nil, errors.Wrap(err, "cannot register the provider's types")
	}
	return &Function{log: log}, nil
}

// A kindSpec reads a composite's spec into a PodPublicAddressSpec, with
// warnings for what it cannot honour.
type kindSpec func(xr *composite.Unstructured) (*PodPublicAddressSpec, []string, error)

// A composition is what a composite kind composes: its resources, its
// status from the observed resources, and warnings for what it cannot
// honour.
type composition struct {
	parts    []part
	status   func(observed map[resource.Name]resource.ObservedComposed) (any, error)
	warnings []string
}

// A composer composes a composite into t. Its errors are the user's: a
// spec the resources below cannot express.
type composer func(xr *composite.Unstructured, t target) (*composition, error)

// composerOf returns the composer of a composite kind we serve.
func composerOf(gk schema.GroupKind) (composer, bool) {
	switch gk {
	case schema.GroupKind{Group: GroupV2, Kind: KindPodPublicAddress}, schema.GroupKind{Group: GroupLegacy, Kind: KindXPodPublicAddress}:
		return publicAddresses(podPublicAddressSpec), true
	case schema.GroupKind{Group: GroupV2, Kind: KindDedicatedCLBService}, schema.GroupKind{Group: GroupLegacy, Kind: KindXDedicatedCLBService}:
		return publicAddresses(dedicatedCLBServiceSpec), true
	case schema.GroupKind{Group: GroupV2, Kind: KindIngress}, schema.GroupKind{Group: GroupLegacy, Kind: KindXIngress}:
		return ingress, true
	}
	return nil, false
}

// publicAddresses composes the kinds that read as a PodPublicAddress.
func publicAddresses(read kindSpec) composer {
	return func(xr *composite.Unstructured, t target) (*composition, error) {
		spec, warnings, err := read(xr)
		if err != nil {
			return nil, err
		}
		if spec.ReadinessGate {
			warnings = append(warnings, "readinessGate: a PodAddressPolicy cannot ask for the readiness gate yet; list the condition "+
				readinessGateCondition+" in the Pods' spec.readinessGates (the provider sets it on every Pod that lists it)")
		}
		parts, err := compose(t, spec)
		if err != nil {
			return nil, err
		}
		return &composition{parts: parts, warnings: warnings, status: func(o map[resource.Name]resource.ObservedComposed) (any, error) {
			return status(o, spec)
		}}, nil
	}
}

// ingress composes an Ingress (or XIngress): its spec, and its load
// balancers from its annotations (a claim's reach its XR).
func ingress(xr *composite.Unstructured, t target) (*composition, error) {
	s := &IngressSpec{}
	if err := specInto(xr, s); err != nil {
		return nil, err
	}
	parts, plan, err := composeIngress(t, s, xr.GetAnnotations())
	if err != nil {
		return nil, err
	}
	return &composition{parts: parts, status: func(o map[resource.Name]resource.ObservedComposed) (any, error) {
		return ingressStatus(o, plan)
	}}, nil
}

// RunFunction composes the observed composite's resources.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	oxr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the observed composite"))
		return rsp, nil
	}
	xr := oxr.Resource
	gk := xr.GroupVersionKind().GroupKind()
	log := f.log.WithValues("kind", gk.String(), "namespace", xr.GetNamespace(), "name", xr.GetName())

	composeKind, ok := composerOf(gk)
	if !ok {
		response.Fatal(rsp, fmt.Errorf("%s is not a composite kind of %s", gk, Name))
		return rsp, nil
	}
	t, err := targetOf(xr)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	c, err := composeKind(xr, t)
	if err != nil {
		response.Fatal(rsp, errors.Wrapf(err, "invalid %s", gk.Kind))
		return rsp, nil
	}

	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the observed composed resources"))
		return rsp, nil
	}
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the desired composed resources"))
		return rsp, nil
	}
	for _, d := range c.parts {
		u, err := toComposed(d.obj)
		if err != nil {
			response.Fatal(rsp, errors.Wrapf(err, "cannot convert composed resource %s", d.name))
			return rsp, nil
		}
		desired[d.name] = &resource.DesiredComposed{Resource: u, Ready: readiness(observed, d.name)}
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
		return rsp, nil
	}

	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the desired composite"))
		return rsp, nil
	}
	st, err := c.status(observed)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if err := dxr.Resource.SetValue("status", st); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the composite's status"))
		return rsp, nil
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composite"))
		return rsp, nil
	}

	for _, w := range c.warnings {
		response.Warning(rsp, errors.New(w)).TargetCompositeAndClaim()
	}
	log.Debug("composed", "resources", len(c.parts), "warnings", len(c.warnings))
	return rsp, nil
}

// targetOf says where the composed resources go. A namespaced XR's go in
// its namespace. A legacy XR is cluster scoped, and its resources (which
// are namespaced) go in its claim's namespace, which the function must
// name.
func targetOf(xr *composite.Unstructured) (target, error) {
	if ns := xr.GetNamespace(); ns != "" {
		return target{namespace: ns, name: xr.GetName()}, nil
	}
	if ref := xr.GetClaimReference(); ref != nil && ref.Namespace != "" {
		return target{namespace: ref.Namespace, name: xr.GetName()}, nil
	}
	if ns := xr.GetLabels()[labelClaimNamespace]; ns != "" {
		return target{namespace: ns, name: xr.GetName()}, nil
	}
	return target{}, fmt.Errorf("%s %s has no namespace and no claim: its resources are namespaced, so create it through a claim", xr.GetKind(), xr.GetName())
}

// podPublicAddressSpec reads a PodPublicAddress (or XPodPublicAddress).
func podPublicAddressSpec(xr *composite.Unstructured) (*PodPublicAddressSpec, []string, error) {
	s := &PodPublicAddressSpec{}
	if err := specInto(xr, s); err != nil {
		return nil, nil, err
	}
	return s, nil, nil
}

// specInto decodes the composite's spec. Fields Crossplane owns
// (crossplane, claimRef, compositionRef…) are not ours and are ignored.
func specInto(xr *composite.Unstructured, into any) error {
	spec, ok := xr.Object["spec"]
	if !ok {
		return fmt.Errorf("spec is missing")
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return errors.Wrap(err, "cannot read spec")
	}
	return errors.Wrap(json.Unmarshal(b, into), "cannot read spec")
}
