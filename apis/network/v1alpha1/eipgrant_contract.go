package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Defaults of an EIP request, which are also the cloud's.
const (
	DefaultEIPISP        = "BGP"
	DefaultEIPChargeType = "TRAFFIC_POSTPAID_BY_HOUR"
	DefaultEIPBandwidth  = int64(1)
)

// EIPAttributes are what an EIP request costs: its attributes with the
// defaults filled in.
type EIPAttributes struct {
	ISP           string
	ChargeType    string
	Bandwidth     int64
	ReleasePolicy string
}

// Attributes returns what r asks for, defaults filled in; a nil request
// asks for the defaults.
func (r *EIPRequest) Attributes() EIPAttributes {
	a := EIPAttributes{ISP: DefaultEIPISP, ChargeType: DefaultEIPChargeType, Bandwidth: DefaultEIPBandwidth, ReleasePolicy: EIPReleaseAfterKeep}
	if r == nil {
		return a
	}
	if r.ISP != "" {
		a.ISP = r.ISP
	}
	if r.InternetChargeType != "" {
		a.ChargeType = r.InternetChargeType
	}
	if r.Bandwidth != nil {
		a.Bandwidth = *r.Bandwidth
	}
	if r.ReleasePolicy != "" {
		a.ReleasePolicy = r.ReleasePolicy
	}
	return a
}

// Covers reports whether g covers the namespace of this name and these
// labels: it names it, or its selector matches it.
func (g *EIPGrant) Covers(namespace string, nsLabels map[string]string) bool {
	if slices.Contains(g.Spec.Namespaces.Names, namespace) {
		return true
	}
	if g.Spec.Namespaces.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(g.Spec.Namespaces.Selector)
	return err == nil && sel.Matches(labels.Set(nsLabels))
}

// MaxWarm is the grant's cap on warm EIPs (0 when unset).
func (g *EIPGrant) MaxWarm() int32 {
	if g.Spec.MaxWarm == nil {
		return 0
	}
	return *g.Spec.MaxWarm
}

// Admits returns nil when g's limits admit req, else an error that names
// g and the limit req exceeds.
func (g *EIPGrant) Admits(req *EIPRequest) error {
	a := req.Attributes()
	var over []string
	if a.Bandwidth > g.Spec.MaxBandwidth {
		over = append(over, fmt.Sprintf("bandwidth %d Mbps is over its maxBandwidth %d", a.Bandwidth, g.Spec.MaxBandwidth))
	}
	if l := orDefaults(g.Spec.ChargeTypes, DefaultEIPChargeType); !slices.Contains(l, a.ChargeType) {
		over = append(over, fmt.Sprintf("charge type %s is not among its chargeTypes %v", a.ChargeType, l))
	}
	if l := orDefaults(g.Spec.ISPs, DefaultEIPISP); !slices.Contains(l, a.ISP) {
		over = append(over, fmt.Sprintf("ISP %s is not among its isps %v", a.ISP, l))
	}
	if l := orDefaults(g.Spec.ReleasePolicies, EIPReleaseAfterKeep); !slices.Contains(l, a.ReleasePolicy) {
		over = append(over, fmt.Sprintf("release policy %s is not among its releasePolicies %v", a.ReleasePolicy, l))
	}
	if r := req.providerConfig(); r != nil && *r != g.Spec.ProviderConfigRef {
		over = append(over, fmt.Sprintf("the request names %s %s, the grant allocates through %s %s", r.Kind, r.Name, g.Spec.ProviderConfigRef.Kind, g.Spec.ProviderConfigRef.Name))
	}
	if len(over) == 0 {
		return nil
	}
	return fmt.Errorf("EIPGrant %s: %s", g.GetName(), strings.Join(over, "; "))
}

func (r *EIPRequest) providerConfig() *xpv2.ProviderConfigReference {
	if r == nil {
		return nil
	}
	return r.ProviderConfigRef
}

func orDefaults(l []string, d string) []string {
	if len(l) == 0 {
		return []string{d}
	}
	return l
}

// ChooseGrant returns the grant that serves req from a Pod of namespace
// (with nsLabels): the one req names, or else the first by name of those
// that cover the namespace and admit req. The error says why none does,
// naming each grant and the limit the request exceeds.
func ChooseGrant(grants []EIPGrant, namespace string, nsLabels map[string]string, req *EIPRequest) (*EIPGrant, error) {
	sorted := slices.Clone(grants)
	slices.SortFunc(sorted, func(a, b EIPGrant) int { return strings.Compare(a.GetName(), b.GetName()) })
	name := ""
	if req != nil {
		name = req.Grant
	}
	var refusals []string
	for i := range sorted {
		g := &sorted[i]
		if name != "" && g.GetName() != name {
			continue
		}
		if !g.Covers(namespace, nsLabels) {
			if name != "" {
				return nil, fmt.Errorf("EIPGrant %s does not cover namespace %s", name, namespace)
			}
			continue
		}
		if err := g.Admits(req); err != nil {
			refusals = append(refusals, err.Error())
			continue
		}
		return g, nil
	}
	switch {
	case name != "" && len(refusals) == 0:
		return nil, fmt.Errorf("no EIPGrant %s: per-Pod EIPs need an EIPGrant, which an admin creates", name)
	case len(refusals) == 0:
		return nil, fmt.Errorf("no EIPGrant covers namespace %s: per-Pod EIPs need an EIPGrant, which an admin creates", namespace)
	}
	return nil, fmt.Errorf("refused: %s", strings.Join(refusals, "; "))
}
